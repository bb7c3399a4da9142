"""Kernel-name parsing: iterate the installed ``kernel_name_parser`` plugins by priority.

The core knows no kernel family; every family lives in a parser plugin (helpers parsers share, such as the C++ name
reader, are in the ``magpie-trace`` library). A name no parser recognises is reported as family ``unknown`` with
confidence 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # report models (pydantic): not imported when a parser plugin loads (every magpie command)
    from magpie_core.reports import ParsedKernelName

CATEGORIES = tuple("gemm attention norm elementwise reduce copy/memset moe communication sampling other".split())  # noqa: SIM905


def installed_parsers() -> list[Any]:
    from magpie_core.plugins import get_plugin_manager

    parsers = list(get_plugin_manager().components("kernel_name_parser").values())
    return sorted(parsers, key=lambda p: (getattr(p, "priority", 100), p.name))


def unknown(name: str) -> ParsedKernelName:
    from magpie_core.reports import ParsedKernelName

    return ParsedKernelName(name=name, family="unknown", category="other", confidence=0.0)


def parse_kernel_name(
    name: str, context: dict[str, Any] | None = None, parsers: list[Any] | None = None
) -> ParsedKernelName:
    """What the first parser (lowest priority number) that recognises ``name`` says about it."""
    for parser in installed_parsers() if parsers is None else parsers:
        try:
            parsed = parser.parse(name, context)
        except Exception as exc:  # one broken parser must not hide the others
            parsed = None
            context = dict(context or {})
            context.setdefault("parser_errors", []).append(f"{parser.name}: {type(exc).__name__}: {exc}")
        if parsed is not None:
            if parsed.parser is None:
                parsed.parser = parser.name
            if parsed.category not in CATEGORIES:
                parsed.category = "other"
            return parsed
    return unknown(name)


def parse_many(names: list[str], contexts: dict[str, dict[str, Any]] | None = None) -> dict[str, ParsedKernelName]:
    parsers = installed_parsers()
    contexts = contexts or {}
    return {n: parse_kernel_name(n, contexts.get(n), parsers) for n in names}
