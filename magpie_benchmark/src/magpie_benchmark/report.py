"""``benchmark_report.json``: the report model of ``magpie benchmark`` (AMD Magpie's fields, then magpie's own) and
its summary, AMD Magpie's top-level blocks filled from the measured load points."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from magpie_benchmark.amd_magpie import throughput_block
from magpie_core.reports import Report

LATENCY_KEYS = ("ttft", "tpot", "itl", "e2el")


class BenchmarkReport(Report):
    """``benchmark_report.json``: AMD Magpie's fields, then magpie's own."""

    mode: str = "benchmark"
    success: bool = False
    framework: str = ""
    model: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    throughput: dict[str, Any] = Field(default_factory=dict)
    latency: dict[str, Any] = Field(default_factory=dict)
    kernel_summary: list[dict[str, Any]] = Field(default_factory=list)
    top_bottlenecks: list[dict[str, Any]] = Field(default_factory=list)
    tracelens_analysis: dict[str, Any] | None = None
    gap_analysis: dict[str, Any] | None = None
    gpu_monitor: dict[str, Any] | None = None
    errors: list[str] = Field(default_factory=list)
    execution_time: float = 0.0
    workspace_dir: str = ""
    profiling_enabled: bool = False
    run_kind: str = "measurement"
    # magpie's own
    run_mode: str = "local"
    base_url: str | None = None
    points: list[dict[str, Any]] = Field(default_factory=list)
    summary_point: int | None = None
    client_checks: dict[str, Any] = Field(default_factory=dict)
    diagnostic: dict[str, Any] | None = None
    server: dict[str, Any] = Field(default_factory=dict)
    gpus: dict[str, Any] = Field(default_factory=dict)
    metric_definitions: str = "TTFT, TPOT, ITL, E2EL and throughputs as defined in docs/benchmark.md"
    #: measurement repeats, and the summary point's between-repeat spread per metric (docs/optimization-loop.md)
    repeats: int = 1
    repeat_stats: dict[str, Any] | None = None
    #: what was measured and on what: compared runs must share ``workload`` (magpie_benchmark.fingerprint)
    fingerprint: dict[str, Any] | None = None
    #: ``profiler.targeted_trace``: the bounded summary and the manifest path (AMD Magpie's report keeps the same)
    targeted_trace: dict[str, Any] | None = None
    #: AMD Magpie's field: an offline framework's own metrics (e.g. images_per_sec), as its plugin read them
    raw_result: dict[str, Any] | None = None
    #: an offline framework's command runs (argv with secrets hidden, exit code, log, result file)
    offline: dict[str, Any] | None = None
    #: each benchmark check's verdict by check name (``passed``, ``summary``, the check's own fields)
    checks: dict[str, Any] = Field(default_factory=dict)


def summarize_report(report: BenchmarkReport) -> None:
    """Top-level AMD fields from the last measured point (the heaviest load of a sweep)."""
    wanted_measurement = report.run_kind in ("measurement", "auto")
    if report.offline is not None:  # the command's own result file filled the AMD fields
        report.success = not report.errors and (bool(report.throughput) or not wanted_measurement)
        return
    measured = [i for i, p in enumerate(report.points) if p["metrics"]["completed"] > 0]
    if measured:
        idx = measured[-1]
        m = report.points[idx]["metrics"]
        report.summary_point = idx
        report.throughput = throughput_block(m)
        report.latency = {k: m[k] for k in LATENCY_KEYS}
        report.repeat_stats = report.points[idx].get("repeat_stats")
        report.client_checks.update({"points_ok": all(p["client_checks"]["ok"] for p in report.points)})
        methods: dict[str, int] = {}
        for p in report.points:
            for k, v in p["metrics"]["token_count_methods"].items():
                methods[k] = methods.get(k, 0) + v
        report.client_checks["token_count_methods"] = methods
    report.success = not report.errors and (bool(measured) or not wanted_measurement)
