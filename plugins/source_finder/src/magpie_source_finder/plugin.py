"""Registers the offline kernel source finder as the ``kernel-sources`` trace analyzer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import TraceAnalyzer
from magpie_source_finder.finder import find_sources


class KernelSourceFinder(TraceAnalyzer):
    """``analyze(kernels, options, out_dir)``: kernels are ``[{"name", "parsed"}]``;
    options ``repos`` (paths), ``cache_dir``, ``clone``. Returns ``{"sources", "repos", "errors"}``."""

    name = "kernel-sources"
    description = "map kernel names to source files in local checkouts (offline; clones only with --clone)"

    def analyze(self, traces: Any, options: dict[str, Any], out_dir: Path) -> dict[str, Any]:
        return find_sources(
            list(traces), list(options.get("repos") or []), options.get("cache_dir"), bool(options.get("clone"))
        )


@hookimpl
def magpie_register_trace_analyzers(register: Callable[[Any], None]) -> None:
    register(KernelSourceFinder())
