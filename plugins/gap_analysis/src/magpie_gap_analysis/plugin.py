"""Entry point: registers the ``gap`` trace analyzer, the ``magpie gap`` command and the benchmark file's
``gap_analysis:`` block (AMD Magpie's settings of the diagnostic run's gap analysis).

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magpie_core import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def magpie_register_trace_analyzers(register: Callable[[Any], None]) -> None:
    from magpie_gap_analysis.analyzer import GapAnalyzer

    register(GapAnalyzer())


@hookimpl
def magpie_register_commands(cli: typer.Typer) -> None:
    from magpie_gap_analysis.cli import register

    register(cli)


@hookimpl
def magpie_register_config_blocks(register: Callable[[Any], None]) -> None:
    from magpie_core.interfaces import ConfigBlock
    from magpie_gap_analysis.config import GapAnalysisConfig

    register(
        ConfigBlock(
            "gap_analysis",
            GapAnalysisConfig,
            scopes=("benchmark",),
            description="gap analysis of the run's traces: window, categories, top-k, kernel sources",
        )
    )


@hookimpl
def magpie_report_sections(page: Any) -> list[Any] | None:
    """report.html sections for gap runs and benchmark diagnostic runs (drawn with the report plugin's kit)."""
    if page.kit is None:
        return None
    from magpie_gap_analysis.report_sections import sections

    return sections(page)


@hookimpl
def magpie_status_lines() -> list[str]:
    """Under ``magpie plugins``: which reader reads plain-JSON traces (compiled or msgspec alone), and why."""
    from magpie_trace.native import reader_status

    return [reader_status()]
