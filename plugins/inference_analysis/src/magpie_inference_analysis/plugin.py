"""Entry point: registers the ``inference`` trace analyzer and the ``magpie inference`` command."""

from __future__ import annotations

from typing import Any

from magpie_core import hookimpl


@hookimpl
def magpie_register_trace_analyzers(register):  # type: ignore[no-untyped-def]
    from magpie_inference_analysis.analyzer import InferenceAnalyzer

    register(InferenceAnalyzer())


@hookimpl
def magpie_register_commands(cli: Any) -> None:
    from magpie_inference_analysis.cli import register

    register(cli)


@hookimpl
def magpie_report_sections(page: Any) -> list[Any] | None:
    """report.html sections for inference runs and benchmark trace analyses (drawn with the report plugin's kit)."""
    if page.kit is None:
        return None
    from magpie_inference_analysis.report_sections import sections

    return sections(page)


@hookimpl
def magpie_status_lines() -> list[str]:
    """Under ``magpie plugins``: which reader reads plain-JSON traces (compiled or msgspec alone), and why."""
    from magpie_trace.native import reader_status

    return [reader_status()]
