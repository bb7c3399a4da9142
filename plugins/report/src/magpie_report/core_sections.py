"""Sections of the core's own modes (analyze, compare, benchmark): drawn by this plugin, as the core draws nothing."""

from __future__ import annotations

import logging
from typing import Any

from magpie_report.kit import Section

log = logging.getLogger("magpie.report")


def sections_for(page: Any) -> list[Section]:
    """The core modes' sections; a report these cannot read gives one section that says why."""
    try:
        return _sections(page)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as exc:
        log.warning("report.html: cannot draw the %s report: %s: %s", page.kind, type(exc).__name__, exc)
        why = f"{type(exc).__name__}: {exc}"
        return [page.kit.section("Could not draw this report", page.kit.banner(f"{page.kind} report: {why}", "bad"))]


def _sections(page: Any) -> list[Section]:
    if page.kind in ("analyze", "compare"):
        from magpie_report import kernels

        out = kernels.compare_sections(page) if page.kind == "compare" else kernels.analyze_sections(page)
        return out + (kernels.delta_sections(page) if page.before is not None else [])
    if page.kind == "benchmark":
        from magpie_report import benchmark

        out = benchmark.sections(page)
        return out + (benchmark.delta_sections(page) if page.before is not None else [])
    return []
