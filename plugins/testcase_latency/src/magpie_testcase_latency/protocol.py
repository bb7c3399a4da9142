"""AMD Magpie's latency protocol: testcases that time themselves and print one marker line.

A testcase built with AMD Magpie's ``magpie_bench.hpp`` (or any harness) prints, on stdout::

    MAGPIE_LATENCY_JSON: {"mode": "...", "stats": {"median_ms": ..., "samples_ms": [...], ...},
                          "kernel_name": "...", "kernel_stats": {...}, "per_kernel": {"name": {...}}}

magpie reads those lines from the testcase's output and turns their samples into its own timing
statistics (median with a bootstrap-free order-statistic CI, in microseconds), as the kernel's
performance result. The ``latency:`` block steers it, with AMD Magpie's meanings:

* ``enabled: false`` or ``method: none``: lines are ignored;
* ``primary_metric``: ``wall_median_ms`` takes ``stats`` (wall clock per call, graph replay);
  ``kernel_median_ms`` takes ``kernel_stats`` (kernel-only) and falls back to ``stats`` with a note;
* ``kernel_filter``: a regular expression a line's ``kernel_name`` must match (lines without a name
  pass); with ``per_kernel`` data, only matching kernels are summed;
* ``pythonpath``: prepended to ``PYTHONPATH`` of the testcase (harness imports);
* ``rep_ms``, ``n_retries``, ``estimate_reps``, ``warmup_iters``, ``seed``: passed to the testcase as
  ``MAGPIE_BENCH_*`` variables, as AMD Magpie's runner receives them.

Methods that need an outer profiler run by AMD Magpie itself (kernel-trace or profiler-timestamp
collection) are not run: magpie reads only what the testcase prints, and says so in the notes.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from magpie_core.measurement.stats import summarize
from magpie_core.reports import PerformanceResult, StageStatus

MARKER = "MAGPIE_LATENCY_JSON:"
#: methods whose numbers the testcase itself prints
SELF_TIMED = ("auto", "cuda_graph", "both", "hip_graph")


def parse_markers(output: str) -> list[dict[str, Any]]:
    """Every well-formed marker payload in ``output``, in order (malformed lines are skipped)."""
    found = []
    for line in output.splitlines():
        head, sep, payload = line.strip().partition(MARKER)
        if not sep or head:
            continue
        try:
            data = json.loads(payload.strip())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def testcase_env(latency: dict[str, Any] | None) -> dict[str, str]:
    """``MAGPIE_BENCH_*`` and ``PYTHONPATH`` for a testcase under a ``latency:`` block."""
    if not latency:
        return {}
    env = {
        "MAGPIE_BENCH_REP_MS": str(latency.get("rep_ms", 20)),
        "MAGPIE_BENCH_N_RETRIES": str(latency.get("n_retries", 5)),
        "MAGPIE_BENCH_ESTIMATE_REPS": str(latency.get("estimate_reps", 5)),
        "MAGPIE_BENCH_WARMUP_ITERS": str(latency.get("warmup_iters", 5)),
        "MAGPIE_BENCH_SEED": str(latency.get("seed", 42)),
    }
    paths = [str(p) for p in latency.get("pythonpath") or []]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _samples_ms(block: Any) -> list[float]:
    if not isinstance(block, dict):
        return []
    samples = [float(v) for v in block.get("samples_ms") or [] if isinstance(v, int | float) and v > 0]
    if not samples and isinstance(block.get("median_ms"), int | float) and block["median_ms"] > 0:
        samples = [float(block["median_ms"])]  # a harness that printed only its median
    return samples


def _pick(payload: dict[str, Any], metric: str, rx: re.Pattern[str] | None, notes: list[str]) -> list[float]:
    per_kernel = payload.get("per_kernel")
    if metric == "kernel_median_ms" and rx and isinstance(per_kernel, dict):
        chosen = {k: v for k, v in per_kernel.items() if rx.search(k)}
        medians = [summarize([x * 1000 for x in _samples_ms(v)]).median / 1000 for v in chosen.values() if v]
        return [sum(medians)] if medians else []
    if metric == "kernel_median_ms":
        if payload.get("kernel_stats"):
            return _samples_ms(payload["kernel_stats"])
        notes.append("primary_metric kernel_median_ms: the testcase printed no kernel_stats; wall-clock stats used")
    return _samples_ms(payload.get("stats"))


def performance_from_output(output: str, latency: dict[str, Any] | None) -> PerformanceResult | None:
    """The kernel's performance result from its testcase's marker lines, or None when none apply."""
    latency = latency or {}
    if latency.get("enabled") is False or latency.get("method") == "none":
        return None
    payloads = parse_markers(output)
    if not payloads:
        return None
    notes: list[str] = []
    method = str(latency.get("method", "auto"))
    if method not in SELF_TIMED:
        notes.append(f"latency.method {method}: magpie reads the testcase's own {MARKER} line only")
    pattern = latency.get("kernel_filter")
    rx = re.compile(pattern) if pattern else None
    if rx is not None:
        payloads = [p for p in payloads if not p.get("kernel_name") or rx.search(str(p["kernel_name"]))]
        if not payloads:
            return PerformanceResult(
                status=StageStatus.FAILED,
                timer="magpie_latency_json",
                message=f"no {MARKER} line names a kernel matching kernel_filter {pattern!r}",
            )
    metric = str(latency.get("primary_metric", "wall_median_ms"))
    samples_ms = [s for p in payloads for s in _pick(p, metric, rx, notes)]
    if not samples_ms:
        return PerformanceResult(
            status=StageStatus.ERROR, timer="magpie_latency_json", message="marker without samples"
        )
    samples_us = [s * 1000.0 for s in samples_ms]
    notes.append(
        f"timed by the testcase itself ({MARKER}, {len(payloads)} line(s), {metric}); "
        f"mode {payloads[-1].get('mode', 'unknown')}"
    )
    return PerformanceResult(
        status=StageStatus.PASSED,
        timer="magpie_latency_json",
        timing=summarize(samples_us, stop_reason="testcase"),
        samples_us=samples_us,
        notes=notes,
    )
