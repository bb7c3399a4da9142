"""The gap analysis summary: ``gap_analysis.json``, and ``benchmark_report.json``'s ``gap_analysis`` key.

AMD Magpie's keys (``config`` ... ``output_dir``) and magpie's own.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from magpie_core.reports import Model

__all__ = ["DeviceSummary", "GapAnalysisResult", "GapInfo", "RankSummary", "TopKernel"]


class TopKernel(Model):
    """One row of the kernel tables (the CSVs' columns, by name)."""

    name: str
    calls: int
    self_cuda_total_us: float
    avg_time_us: float
    pct_total: float
    input_shapes: str
    min_us: float
    max_us: float
    std_us: float
    pct_gpu_busy: float
    pct_wall: float
    family: str = "unknown"
    category: str = "other"
    function: str | None = None
    dtype: str | None = None
    tile: str | None = None
    parse_confidence: float = 0.0
    source: dict[str, Any] | None = None


class GapInfo(Model):
    """One GPU idle gap and what the host was doing when it began."""

    start_us: float
    duration_us: float
    before: str
    after: str
    host_bound: bool | None
    cpu_op: str | None
    annotation: str | None
    launch_call: str | None


class DeviceSummary(Model):
    """Busy and idle time, launch records and largest gaps of one device of one rank."""

    device: str
    activities: int
    busy_us: float
    active_span_us: float
    idle_us: float
    idle_pct: float
    wall_us: float
    busy_pct_of_wall: float
    num_gaps: int
    host_bound_idle_us: float
    host_bound_idle_pct: float
    launch_bound: bool
    #: the few longest host-bound gaps (us), when they are most of the host-bound idle time; what ran before them
    host_stalls: list[float] = Field(default_factory=list)
    host_stalls_after: str | None = None
    launch_records: int
    median_launch_to_start_us: float | None
    median_launch_call_us: float | None
    median_kernel_us: float | None
    kernels_shorter_than_launch_pct: float | None
    largest_gaps: list[GapInfo] = Field(default_factory=list)
    #: busy share per time bin (``start_us``, ``bin_us``, ``busy_pct``), for the report's timeline
    timeline: dict[str, Any] = Field(default_factory=dict)


class RankSummary(Model):
    """One trace file: what was read, its window, devices and per-rank CSV."""

    rank: int
    label: str
    trace_file: str
    platform: str
    ok: bool
    error: str | None = None
    size_bytes: int = 0
    num_events: int = 0
    total_duration_us: float = 0.0
    trace_span_us: float = 0.0
    window_us: tuple[float, float] = (0.0, 0.0)
    window_note: str | None = None
    num_kernels: int = 0
    devices: list[DeviceSummary] = Field(default_factory=list)
    csv_path: str | None = None
    #: complete events skipped for a missing, mistyped, negative or absurd ts/dur, in words
    skipped_events: list[str] = Field(default_factory=list)


class GapAnalysisResult(Model):
    """The JSON summary (``gap_analysis.json`` and ``benchmark_report.json``'s ``gap_analysis`` key)."""

    config: dict[str, Any]
    total_duration_us: float = 0.0
    num_ranks: int = 0
    top_kernels: list[TopKernel] = Field(default_factory=list)
    clamped_trace_paths: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    #: what the figures leave out and why ("rank 0 (t.json): 1,204 kernel events without a numeric `dur` skipped")
    warnings: list[str] = Field(default_factory=list)
    csv_path: str | None = None
    output_dir: str | None = None
    # magpie's own
    trace_path: str = ""
    ranks: list[RankSummary] = Field(default_factory=list)
    num_kernel_names: int = 0
    gpu_busy_us: float = 0.0
    gpu_idle_us: float = 0.0
    gpu_idle_pct: float = 0.0
    wall_us: float = 0.0
    launch_bound: bool = False
    full_csv_path: str | None = None
    gaps_csv_path: str | None = None
    json_path: str | None = None
    source_repos: list[dict[str, Any]] = Field(default_factory=list)
    elapsed_s: float = 0.0
    workers: int = 1
