"""Reports of ``analyze`` and ``compare``.

They carry AMD Magpie's fields (``results`` with ``compiling_state``, ``correctness_state``, ``performance_state``;
``kernel_results``, ``comparison_metrics``, ``winner``, ``rankings``, ``summary``) next to magpie's richer ones (stage
details, timing statistics, speedup intervals, verdicts)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, computed_field

from magpie_core.config.amd_magpie import EVALUATION_STATE
from magpie_core.reports import CompileResult, CorrectnessResult, Model, PerformanceResult, Report, StageStatus


class KernelResult(Model):
    kernel_id: str
    kernel_type: str
    compile: CompileResult
    correctness: CorrectnessResult
    performance: PerformanceResult
    environment: dict[str, Any] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)
    workdir: str | None = None
    #: built, but no device of its kind here to run it on (neither a failure nor a pass)
    no_device: bool = False

    @property
    def failed_checks(self) -> bool:
        """Counts against the exit status: not passed, unless only the device was missing."""
        return not self.passed and not self.no_device

    @property
    def passed(self) -> bool:
        """Correct (proved, not merely executed) and not failing any stage that ran."""
        return (
            self.compile.status in (StageStatus.PASSED, StageStatus.SKIPPED)
            and self.correctness.status == StageStatus.PASSED
            and self.performance.status in (StageStatus.PASSED, StageStatus.SKIPPED, StageStatus.NOT_RUN)
        )

    @property
    def median_us(self) -> float | None:
        return self.performance.timing.median if self.performance.timing else None

    # --- AMD Magpie's EvaluationState fields -------------------------------
    @computed_field  # type: ignore[prop-decorator]
    @property
    def compiling_state(self) -> str:
        return EVALUATION_STATE[self.compile.status.value]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def correctness_state(self) -> str:
        return EVALUATION_STATE[self.correctness.status.value]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def performance_state(self) -> str:
        return EVALUATION_STATE[self.performance.status.value]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def extra(self) -> dict[str, str]:
        return {"kernel_id": self.kernel_id, "kernel_type": self.kernel_type}


def summary_row(result: KernelResult) -> dict[str, Any]:
    timing = result.performance.timing
    return {
        "kernel_id": result.kernel_id,
        "kernel_type": result.kernel_type,
        "compiling_state": result.compiling_state,
        "correctness_state": result.correctness_state,
        "performance_state": result.performance_state,
        "correctness": result.correctness.status.value,
        "median_us": timing.median if timing else None,
        "ci95_us": [timing.ci95_low, timing.ci95_high] if timing else None,
        "samples": timing.samples if timing else None,
        "timer": result.performance.timer,
        "message": (result.errors[0] if result.errors else None),
    }


class RankEntry(Model):
    rank: int
    index: int
    kernel_id: str
    median_us: float
    ci95_low_us: float
    ci95_high_us: float
    speedup: float | None = None  # baseline median / this median
    speedup_ci95: tuple[float, float] | None = None
    verdict: str | None = None  # FASTER | SLOWER | SAME | UNSTABLE | BASELINE
    verdict_reason: str | None = None  # why UNSTABLE


class ComparisonResults(Model):
    """AMD Magpie's ``results`` block of ``compare_report.json``."""

    kernel_results: list[KernelResult]
    comparison_metrics: dict[str, Any]
    winner: int | None
    rankings: list[tuple[int, float]]  # (index, median us), fastest first
    summary: str


class AnalyzeReport(Report):
    mode: str = "analyze"
    results: list[KernelResult]
    summary: list[dict[str, Any]] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)


class CompareReport(Report):
    mode: str = "compare"
    baseline: int
    baseline_id: str
    results: ComparisonResults
    ranking: list[RankEntry]
    winner_id: str | None
    verdict: str
    unranked: list[dict[str, Any]] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    summary_rows: list[dict[str, Any]] = Field(default_factory=list)
    #: how noisy the run was: A/A check, noise floor, drift, load (interleaved-block timing)
    stability: dict[str, Any] | None = None
