"""Optimisation advice from what a report measured, each suggestion with its evidence.

Rules, in order of severity: compile and correctness failures (blockers), checks
that did not run, timings that mean nothing here or are too noisy to resolve a
change, launch-bound kernels (host us per launch vs device us), profiler counters
(roofline position, latency-bound, low occupancy), compare verdicts, and for
benchmark and gap-analysis reports the GPU idle share and the hot kernels.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from magpie_mcp.models import ToolModel
from pydantic import Field

Severity = Literal["blocker", "high", "medium", "info"]


class Suggestion(ToolModel):
    kernel_id: str | None = None
    category: str = Field(
        description="correctness | measurement | launch_overhead | roofline | occupancy | "
        "comparison | gaps | hotspot | compile"
    )
    severity: Severity
    finding: str = Field(description="what the measurement shows")
    suggestion: str = Field(description="what to try next")
    evidence: dict[str, Any] = Field(default_factory=dict, description="the measured numbers behind it")


class Suggestions(ToolModel):
    report_path: str
    mode: str
    suggestions: list[Suggestion]


LAUNCH_NOTE = re.compile(r"launch-bound: the host needs ([\d.]+) us per launch, the device ([\d.]+) us")
_SEVERITY_ORDER = {"blocker": 0, "high": 1, "medium": 2, "info": 3}
MEMORY_WORDS = ("dram", "mem", "hbm", "bw", "bandwidth")


def suggest_optimizations(
    report: dict[str, Any],
    report_path: str,
    *,
    peak_tflops: float | None = None,
    peak_bandwidth_gbps: float | None = None,
) -> Suggestions:
    """Advice from a magpie report (analyze, compare or benchmark), each item with its evidence."""
    mode = str(report.get("mode", ""))
    out: list[Suggestion] = []
    if mode in ("analyze", "compare"):
        results = report.get("results")
        kernel_results = results.get("kernel_results", []) if isinstance(results, dict) else results or []
        for result in kernel_results:
            out += kernel_suggestions(result, peak_tflops, peak_bandwidth_gbps)
        if mode == "compare":
            out += compare_suggestions(report)
    elif mode == "benchmark" or "gap_analysis" in report or "top_kernels" in report:
        gap = report.get("gap_analysis") if mode == "benchmark" else report
        if isinstance(gap, dict):
            out += gap_suggestions(gap)
        for error in report.get("errors") or []:
            out.append(
                Suggestion(
                    category="measurement",
                    severity="high",
                    finding=str(error),
                    suggestion="fix this before trusting the numbers of this run",
                )
            )
    else:
        raise ValueError(f"{report_path}: no suggestions for a report of mode {mode!r} (analyze, compare, benchmark)")
    out.sort(key=lambda s: _SEVERITY_ORDER[s.severity])
    return Suggestions(report_path=report_path, mode=mode, suggestions=out)


# --- one kernel's result ---------------------------------------------------------------


def kernel_suggestions(r: dict[str, Any], peak_tflops: float | None, peak_bw: float | None) -> list[Suggestion]:
    """Advice about one kernel result of an analyze or compare report."""
    kid = str(r.get("kernel_id"))
    blocker = _blocker(kid, r)
    if blocker is not None:
        return [blocker]
    out: list[Suggestion] = []
    if (r.get("correctness") or {}).get("status") == "not_run":
        out.append(
            Suggestion(
                kernel_id=kid,
                category="correctness",
                severity="high",
                finding="no correctness check ran",
                suggestion="give a reference (or testcase_command) so a fast-but-wrong kernel cannot look like a win",
            )
        )
    perf = r.get("performance") or {}
    notes = [str(n) for n in perf.get("notes") or []]
    out += _measurement_suggestions(kid, perf, notes)
    out += [s for s in (_launch_suggestion(kid, note) for note in notes) if s is not None]
    for row in perf.get("counters") or []:
        out += counter_suggestions(kid, row, peak_tflops, peak_bw)
    return out


def _blocker(kid: str, r: dict[str, Any]) -> Suggestion | None:
    """A failed compile or correctness check: nothing else about the kernel matters yet."""
    compile_ = r.get("compile") or {}
    if compile_.get("status") in ("failed", "error"):
        return Suggestion(
            kernel_id=kid,
            category="compile",
            severity="blocker",
            finding=f"compile {compile_.get('status')}: {compile_.get('message')}",
            suggestion="fix the build first; the compile log is in the kernel's workdir",
            evidence={"log_tail": (compile_.get("log") or "")[-800:]},
        )
    correctness = r.get("correctness") or {}
    status = correctness.get("status")
    if status in ("failed", "error"):
        return Suggestion(
            kernel_id=kid,
            category="correctness",
            severity="blocker",
            finding=(correctness.get("message") or f"correctness {status}").splitlines()[0],
            suggestion="the kernel is wrong (or crashed): timing it is meaningless until it "
            "matches the reference; look at the first mismatching index and the tail handling",
            evidence={"method": correctness.get("method"), "message": correctness.get("message")},
        )
    return None


def _measurement_suggestions(kid: str, perf: dict[str, Any], notes: list[str]) -> list[Suggestion]:
    """Timings that mean nothing on this machine, or whose confidence interval is too wide."""
    out: list[Suggestion] = []
    if perf.get("timing_meaningful") is False:
        out.append(
            Suggestion(
                kernel_id=kid,
                category="measurement",
                severity="high",
                finding="timings here are not meaningful: " + "; ".join(notes[:1]),
                suggestion="time it on the target GPU before optimizing",
            )
        )
    timing = perf.get("timing") or {}
    median, lo, hi = timing.get("median"), timing.get("ci95_low"), timing.get("ci95_high")
    if not (median and lo is not None and hi is not None and median > 0):
        return out
    width = (hi - lo) / median
    if width > 0.05:
        out.append(
            Suggestion(
                kernel_id=kid,
                category="measurement",
                severity="medium",
                finding=f"timing is noisy: 95% CI of the median spans {width:.1%} of it",
                suggestion="differences smaller than this cannot be resolved; raise "
                "performance.budget_seconds, pin clocks or quiet the machine",
                evidence={
                    "median_us": median,
                    "ci95_us": [lo, hi],
                    "samples": timing.get("samples"),
                    "stop_reason": timing.get("stop_reason"),
                },
            )
        )
    return out


def _launch_suggestion(kid: str, note: str) -> Suggestion | None:
    """magpie's launch-bound timing note: the host needs longer per launch than the device."""
    m = LAUNCH_NOTE.search(note)
    if not m:
        return None
    host, device = float(m.group(1)), float(m.group(2))
    return Suggestion(
        kernel_id=kid,
        category="launch_overhead",
        severity="high",
        finding=f"launch-bound: {host:.1f} us of host work per launch vs {device:.1f} us on the device",
        suggestion="making the kernel faster will not help end to end; fuse it with its "
        "neighbours, batch more work per launch, or capture it in a CUDA/HIP graph",
        evidence={
            "host_us_per_launch": host,
            "device_us": device,
            "ratio": round(host / device, 2) if device else None,
        },
    )


# --- profiler counters -------------------------------------------------------------------


def counter_suggestions(
    kid: str, row: dict[str, Any], peak_tflops: float | None, peak_bw: float | None
) -> list[Suggestion]:
    """Advice from one profiler row: roofline position and occupancy."""
    bound, pct, evidence = roofline_position(row, peak_tflops, peak_bw)
    out: list[Suggestion] = []
    if bound is not None:
        out.append(_roofline_suggestion(kid, str(row.get("kernel_name")), bound, pct, evidence))
    occupancy = row.get("achieved_occupancy_pct")
    if occupancy is not None and occupancy < 25:
        name = row.get("kernel_name")
        out.append(
            Suggestion(
                kernel_id=kid,
                category="occupancy",
                severity="medium",
                finding=f"{name}: achieved occupancy {occupancy:.0f}%",
                suggestion="reduce registers / shared memory per block or change the block size; "
                "low occupancy hides latency poorly",
                evidence={"kernel_name": name, "achieved_occupancy_pct": occupancy},
            )
        )
    return out


def roofline_position(
    row: dict[str, Any], peak_tflops: float | None, peak_bw: float | None
) -> tuple[str | None, dict[str, float], dict[str, Any]]:
    """``(memory | compute | None, % of peak by resource, evidence)`` of one profiler row.

    With both device peaks: arithmetic intensity against the ridge point. Without: the most
    utilized resource in ``pct_of_peak``.
    """
    pct = {k: float(v) for k, v in (row.get("pct_of_peak") or {}).items() if v is not None}
    ai = row.get("arithmetic_intensity")
    flops, time_us = row.get("flops"), row.get("time_us")
    moved = (row.get("dram_read_bytes") or 0) + (row.get("dram_write_bytes") or 0)
    if ai is None and flops and moved:
        ai = flops / moved
    evidence: dict[str, Any] = {"kernel_name": row.get("kernel_name"), "pct_of_peak": pct, "arithmetic_intensity": ai}
    if ai is not None and peak_tflops and peak_bw:
        ridge = peak_tflops * 1e12 / (peak_bw * 1e9)
        evidence["ridge_point_flops_per_byte"] = ridge
        if time_us:
            achieved = (flops or 0) / (time_us * 1e-6) / 1e12 if flops else None
            attainable = min(peak_tflops, ai * peak_bw / 1e3)
            evidence.update(achieved_tflops=achieved, attainable_tflops=attainable)
            if achieved is not None and attainable:
                pct.setdefault("roofline", 100 * achieved / attainable)
        return ("memory" if ai < ridge else "compute"), pct, evidence
    if pct:
        top = max(pct, key=lambda k: pct[k])
        evidence["limiting_resource"] = top
        return ("memory" if any(w in top.lower() for w in MEMORY_WORDS) else "compute"), pct, evidence
    return None, pct, evidence


def _roofline_suggestion(
    kid: str, name: str, bound: str, pct: dict[str, float], evidence: dict[str, Any]
) -> Suggestion:
    best = max(pct.values()) if pct else None
    if best is not None and best < 30:
        return Suggestion(
            kernel_id=kid,
            category="roofline",
            severity="high",
            finding=f"{name}: {bound}-side by intensity but only {best:.0f}% of the nearest "
            "peak: latency-bound (too little parallelism or stalls)",
            suggestion="raise occupancy / work per thread, overlap memory with compute, "
            "check for serialization (atomics, syncs, small grids)",
            evidence=evidence,
        )
    if bound == "memory":
        return Suggestion(
            kernel_id=kid,
            category="roofline",
            severity="medium",
            finding=f"{name}: memory-bound" + (f" at {best:.0f}% of peak bandwidth" if best is not None else ""),
            suggestion="cut bytes moved: fuse with neighbours, use narrower dtypes, "
            "vectorize and coalesce loads, reuse data through shared memory / LDS",
            evidence=evidence,
        )
    return Suggestion(
        kernel_id=kid,
        category="roofline",
        severity="medium",
        finding=f"{name}: compute-bound" + (f" at {best:.0f}% of peak" if best is not None else ""),
        suggestion="use matrix cores (MFMA / tensor cores) and lower precision where "
        "accuracy allows; remove redundant arithmetic",
        evidence=evidence,
    )


# --- compare verdicts and trace gaps --------------------------------------------------------

#: compare verdict -> (severity, finding (formatted with the speedup), suggestion)
VERDICT_ADVICE: dict[str, tuple[Severity, str, str]] = {
    "SLOWER": ("medium", "slower than the baseline ({speedup:.3f}x)", "drop this variant or find what it added"),
    "SAME": (
        "info",
        "no significant difference from the baseline",
        "the change is within noise; it does not pay for its complexity unless it helps other shapes",
    ),
    "FASTER": (
        "info",
        "faster than the baseline ({speedup:.3f}x)",
        "keep it; check more input shapes before adopting it",
    ),
    "UNSTABLE": (
        "medium",
        "too noisy to tell from the baseline ({speedup:.3f}x, but the interval allows either way)",
        "re-run on a quieter machine, with a longer budget_seconds or a larger min_effect; the report's "
        "stability block says how noisy the run was",
    ),
}


def compare_suggestions(report: dict[str, Any]) -> list[Suggestion]:
    """Advice from a compare report's ranking: each verdict, unranked variants, no clear winner."""
    out: list[Suggestion] = []
    for entry in report.get("ranking") or []:
        advice = VERDICT_ADVICE.get(str(entry.get("verdict")))
        if advice is None:
            continue
        severity, finding, suggestion = advice
        out.append(
            Suggestion(
                kernel_id=entry.get("kernel_id"),
                category="comparison",
                severity=severity,
                finding=finding.format(speedup=entry.get("speedup", 0)),
                suggestion=suggestion,
                evidence={k: entry.get(k) for k in ("speedup", "speedup_ci95", "median_us")},
            )
        )
    for unranked in report.get("unranked") or []:
        if not str(unranked.get("reason", "")).startswith(("correctness", "compile")):
            out.append(
                Suggestion(
                    kernel_id=unranked.get("kernel_id"),
                    category="measurement",
                    severity="high",
                    finding=f"not ranked: {unranked.get('reason')}",
                    suggestion="it could not be timed meaningfully here",
                )
            )
    if report.get("winner_id") is None and len(report.get("ranking") or []) >= 2:
        out.append(
            Suggestion(
                category="comparison",
                severity="info",
                finding=str(report.get("verdict")),
                suggestion="no candidate is significantly faster than the runner-up",
            )
        )
    return out


def gap_suggestions(gap: dict[str, Any]) -> list[Suggestion]:
    """Advice from a gap analysis: launch-bound or idle GPU, and kernels with >= 10 % of GPU time."""
    out: list[Suggestion] = []
    idle = gap.get("gpu_idle_pct")
    evidence = {"gpu_idle_pct": idle, "gpu_busy_us": gap.get("gpu_busy_us"), "wall_us": gap.get("wall_us")}
    if gap.get("launch_bound"):
        out.append(
            Suggestion(
                category="gaps",
                severity="high",
                finding=f"launch-bound: the GPU idles {idle or 0:.1f}% of the window, waiting for the host",
                suggestion="use CUDA/HIP graphs, fuse small kernels, move host work off the critical "
                "path (larger batches, async scheduling)",
                evidence=evidence,
            )
        )
    elif idle is not None and idle > 20:
        out.append(
            Suggestion(
                category="gaps",
                severity="medium",
                finding=f"GPU idle {idle:.1f}% of the window",
                suggestion="look at the largest gaps and the CPU ops running in them",
                evidence=evidence,
            )
        )
    for kernel in (gap.get("top_kernels") or [])[:3]:
        share = kernel.get("pct_total")
        if share is not None and share >= 10:
            out.append(
                Suggestion(
                    kernel_id=kernel.get("name"),
                    category="hotspot",
                    severity="medium",
                    finding=f"{share:.1f}% of GPU kernel time ({kernel.get('calls')} calls, "
                    f"{kernel.get('avg_time_us', 0):.1f} us each)",
                    suggestion="a candidate for kernel work: find its source (find_kernel_sources) "
                    "and compare variants (compare)",
                    evidence={k: kernel.get(k) for k in ("family", "category", "dtype", "tile")},
                )
            )
    return out
