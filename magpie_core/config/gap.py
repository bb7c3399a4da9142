"""The ``gap_analysis:`` block of a benchmark file (AMD Magpie's ``benchmark: gap_analysis:``).

Owned by the gap analysis: the benchmark file's ``gap_analysis:`` block is this model, registered by the gap
plugin (``magpie_register_config_blocks``); ``magpie gap`` validates it from its flags.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from magpie_core.config.common import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, StrictModel

__all__ = ["GapAnalysisConfig"]


class GapAnalysisConfig(StrictModel):
    enabled: bool = False
    trace_start_pct: float = Field(0.0, ge=0, le=100)
    trace_end_pct: float = Field(100.0, ge=0, le=100)
    top_k: PositiveInt = 20
    min_duration_us: NonNegativeFloat = 0.0
    categories: list[str] = Field(default_factory=lambda: ["kernel", "gpu"])
    ignore_categories: list[str] = Field(default_factory=lambda: ["gpu_user_annotation", "user_annotation"])
    find_kernel_sources: bool = False
    kernel_source_repos: list[str] | None = None
    auto_clone_repos: bool = Field(True, description="accepted for AMD Magpie files; magpie clones only with --clone")
    repos_base_dir: str | None = None
    no_rank_csv: bool = False
    # magpie's own
    window_annotation: str | None = Field(
        None, description="analyze only inside record_function / user annotation ranges of this name (glob with *)"
    )
    window_start_us: NonNegativeFloat | None = Field(None, description="window start, microseconds from trace start")
    window_end_us: PositiveFloat | None = Field(None, description="window end, microseconds from trace start")
    clone_repos: bool = Field(False, description="let the source finder clone known upstreams (network)")
    workers: int | None = Field(
        None, ge=1, le=1024, description="processes for ranks; idle ones split a big JSON trace (default: CPU count)"
    )
    top_gaps: NonNegativeInt = Field(10, description="largest GPU idle gaps reported per device")

    @model_validator(mode="after")
    def _one_window(self) -> GapAnalysisConfig:
        ways = [
            keys
            for keys, given in (
                ("trace_start_pct/trace_end_pct", self.trace_start_pct != 0.0 or self.trace_end_pct != 100.0),
                ("window_start_us/window_end_us", self.window_start_us is not None or self.window_end_us is not None),
                ("window_annotation", self.window_annotation is not None),
            )
            if given
        ]
        if len(ways) > 1:
            raise ValueError(f"{' and '.join(ways)} both choose the analysis window: set only one of them")
        return self

    @model_validator(mode="after")
    def _window(self) -> GapAnalysisConfig:
        if self.trace_start_pct >= self.trace_end_pct:
            raise ValueError("trace_start_pct must be below trace_end_pct")
        if (
            self.window_start_us is not None
            and self.window_end_us is not None
            and self.window_start_us >= self.window_end_us
        ):
            raise ValueError("window_start_us must be below window_end_us")
        return self
