"""Registers the offline kernel source finder as the ``kernel-sources`` source finder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import KernelSourceFinder


def _as_dicts(kernels: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"name", "parsed"}]`` with ``parsed`` as a plain dict: a :class:`ParsedKernelName` is dumped,
    and a missing one is parsed here by the installed kernel-name parsers."""
    missing = [k["name"] for k in kernels if k.get("parsed") is None]
    parsed_here: dict[str, Any] = {}
    if missing:
        from magpie_core.kernel_names import parse_many

        parsed_here = parse_many(missing)
    out = []
    for k in kernels:
        parsed = k.get("parsed")
        if parsed is None:
            parsed = parsed_here[k["name"]]
        if hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump()
        out.append({**k, "parsed": parsed})
    return out


class OfflineSourceFinder(KernelSourceFinder):
    """Finds kernel sources in local checkouts (symbol index per checkout commit); offline unless ``clone``.

    ``find(kernels, options)``: kernels are ``[{"name", "parsed"}]`` (``parsed`` a
    :class:`~magpie_core.reports.ParsedKernelName`, its ``model_dump()``, or None); options ``repos``
    (paths), ``cache_dir``, ``clone``. Returns ``{"sources", "repos", "errors", "columns"}``
    (``columns``: the source columns of gap analysis's CSV, in order)."""

    name = "kernel-sources"
    description = "map kernel names to source files in local checkouts (offline; clones only with --clone)"

    def find(self, kernels: Sequence[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        from magpie_source_finder.finder import find_sources  # imported when asked: every command loads this module

        return find_sources(
            _as_dicts(kernels),
            list(options.get("repos") or []),
            options.get("cache_dir"),
            bool(options.get("clone")),
        )


@hookimpl
def magpie_register_source_finders(register: Callable[[Any], None]) -> None:
    register(OfflineSourceFinder())
