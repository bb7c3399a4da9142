"""Benchmark reports side by side: throughput, latency and GPU idle, change vs the first, kernel shares,
and the end-to-end verdict of each report against the first (:mod:`magpie_benchmark.stats`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magpie_benchmark.stats import E2EComparison, compare_reports
from magpie_mcp.models import ToolModel
from magpie_mcp.reports import BenchmarkRun, benchmark_run, number
from pydantic import Field

#: metric -> (path in the report, higher is better)
COMPARED_METRICS: dict[str, tuple[tuple[str, ...], bool]] = {
    "request_throughput": (("throughput", "request_throughput"), True),
    "output_throughput": (("throughput", "output_throughput"), True),
    "total_token_throughput": (("throughput", "total_token_throughput"), True),
    "mean_ttft_ms": (("latency", "ttft", "mean_ms"), False),
    "p99_ttft_ms": (("latency", "ttft", "p99_ms"), False),
    "mean_tpot_ms": (("latency", "tpot", "mean_ms"), False),
    "p99_tpot_ms": (("latency", "tpot", "p99_ms"), False),
    "mean_itl_ms": (("latency", "itl", "mean_ms"), False),
    "mean_e2el_ms": (("latency", "e2el", "mean_ms"), False),
    "gpu_idle_pct": (("gap_analysis", "gpu_idle_pct"), False),
}


class MetricComparison(ToolModel):
    metric: str
    higher_is_better: bool
    values: list[float | None]
    change_vs_first_pct: list[float | None]
    best_index: int | None


class KernelShare(ToolModel):
    name: str
    pct_total: list[float | None]


class BenchmarkComparison(ToolModel):
    runs: list[BenchmarkRun]
    metrics: list[MetricComparison]
    top_kernels: list[KernelShare] = Field(default_factory=list)
    #: each later report against the first: IMPROVED / REGRESSED / WITHIN NOISE / NOT COMPARABLE per metric
    verdicts: list[E2EComparison] = Field(default_factory=list)


def compare_metric(metric: str, keys: tuple[str, ...], higher: bool, reports: list[dict[str, Any]]) -> MetricComparison:
    """One metric across the reports: values, % change vs the first, and which is best."""
    values = [number(data, *keys) for data in reports]
    first = values[0]
    changes = [None if v is None or not first else round(100 * (v - first) / first, 2) for v in values]
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    best = (max if higher else min)(present, key=lambda t: t[1])[0] if present else None
    return MetricComparison(
        metric=metric, higher_is_better=higher, values=values, change_vs_first_pct=changes, best_index=best
    )


def kernel_shares(reports: list[dict[str, Any]], top_k: int) -> list[KernelShare]:
    """Share of GPU kernel time of each run's top kernels, largest first."""
    shares: dict[str, list[float | None]] = {}
    for i, data in enumerate(reports):
        gap = data.get("gap_analysis") or {}
        for kernel in (gap.get("top_kernels") or [])[:top_k]:
            row = shares.setdefault(str(kernel.get("name")), [None] * len(reports))
            row[i] = kernel.get("pct_total")
    top = [KernelShare(name=name, pct_total=values) for name, values in shares.items()]
    top.sort(key=lambda k: -max((v or 0) for v in k.pct_total))
    return top[:top_k]


def compare_benchmark_reports(
    reports: list[tuple[Path, dict[str, Any]]],
    top_k: int = 10,
    *,
    allow_different_workload: bool = False,
    min_effect: float = 0.02,
) -> BenchmarkComparison:
    """``reports`` (path, report) side by side; the first is the base of every change and verdict."""
    runs = [benchmark_run(path, data) for path, data in reports]
    datas = [data for _, data in reports]
    metrics = [
        compare_metric(metric, keys, higher, datas)
        for metric, (keys, higher) in COMPARED_METRICS.items()
        if any(number(data, *keys) is not None for data in datas)
    ]
    (base_path, base), rest = reports[0], reports[1:]
    verdicts = [
        compare_reports(
            base,
            data,
            base_name=str(base_path),
            new_name=str(path),
            allow_different_workload=allow_different_workload,
            min_effect=min_effect,
        )
        for path, data in rest
    ]
    return BenchmarkComparison(runs=runs, metrics=metrics, top_kernels=kernel_shares(datas, top_k), verdicts=verdicts)
