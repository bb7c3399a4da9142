"""Entry point: registers the ``inference`` trace analyzer."""

from __future__ import annotations

from magpie_core import hookimpl


@hookimpl
def magpie_register_trace_analyzers(register):  # type: ignore[no-untyped-def]
    from magpie_inference_analysis.analyzer import InferenceAnalyzer

    register(InferenceAnalyzer())
