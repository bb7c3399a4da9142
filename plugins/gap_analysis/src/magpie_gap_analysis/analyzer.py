"""The ``gap`` trace analyzer: what ``magpie benchmark`` and other plugins (the MCP server) call."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from magpie_core.interfaces import TraceAnalyzer

__all__ = ["GapAnalyzer"]


class GapAnalyzer(TraceAnalyzer):
    """Kernel tables, GPU idle gaps and launch-bound indicators of PyTorch profiler traces.

    ``options``: the keys of the ``gap_analysis:`` benchmark block
    (:class:`magpie_core.config.gap.GapAnalysisConfig`), all optional, unknown keys an error.
    ``out_dir`` None: ``gap_analysis/`` next to the trace folder (``<workspace>/gap_analysis`` for a
    benchmark workspace). Returns the JSON summary (``gap_analysis.json``); a rank that could not be read
    is in its ``errors``, the others are still analyzed. Nothing to analyze (no such path, no trace in it)
    or bad options: ``ValueError``.
    """

    name: ClassVar[str] = "gap"
    description: ClassVar[str] = "kernel time tables, GPU idle gaps and launch-bound indicators (magpie gap)"

    def analyze(self, traces: Path, options: dict[str, Any], out_dir: Path | None) -> dict[str, Any]:
        from magpie_core.config.gap import GapAnalysisConfig
        from magpie_core.config.loader import validate
        from magpie_gap_analysis.pipeline import gap_analysis

        config = validate(GapAnalysisConfig, dict(options), "gap analyzer options")
        result = gap_analysis(Path(traces), config, None if out_dir is None else Path(out_dir))
        if result.output_dir is None:
            raise ValueError("; ".join(result.errors) or f"nothing to analyze in {traces}")
        return result.model_dump(mode="json")
