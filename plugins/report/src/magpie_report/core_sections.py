"""Sections of the core's own modes (analyze, compare, benchmark): drawn by this plugin, as the core draws nothing."""

from __future__ import annotations

from typing import Any

from magpie_report.kit import Section


def sections_for(page: Any) -> list[Section]:
    if page.kind in ("analyze", "compare"):
        from magpie_report import kernels

        out = kernels.compare_sections(page) if page.kind == "compare" else kernels.analyze_sections(page)
        return out + (kernels.delta_sections(page) if page.before is not None else [])
    if page.kind == "benchmark":
        from magpie_report import benchmark

        out = benchmark.sections(page)
        return out + (benchmark.delta_sections(page) if page.before is not None else [])
    return []
