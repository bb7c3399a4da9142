"""What the MCP tools say about kernels and reports beyond running them.

* :func:`discover_kernels`: kernel sources and kernel configs in a folder. The
  patterns come from the installed kernel backends (``source_patterns``), plus
  a generic ``__global__`` rule for GPU C++ files no backend claims.
* :func:`suggest_optimizations`: advice derived from what a report measured
  (correctness, timing spread, launch-bound notes, profiler counters and
  roofline position, speedup verdicts, trace gaps), each with its evidence.
* benchmark report helpers: list, read and compare ``benchmark_report.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from magpie_core.config.kernel import KernelConfigFile
from magpie_core.config.loader import ConfigError, ConfigErrors, load_config
from magpie_core.plugins import get_plugin_manager

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox", ".mypy_cache"}
MAX_FILE_BYTES = 2_000_000

#: GPU C++ files that no installed backend claims: suffix -> kernel type
GENERIC_GPU_SOURCES = {".cu": "cuda", ".cuh": "cuda", ".hip": "hip", ".cpp": "hip", ".cc": "hip"}
GLOBAL_FN = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:[\w:<>,\s*&]+?\s+)?(?P<name>\w+)\s*\(")


# --- discovery -------------------------------------------------------------------


class DiscoveredSource(BaseModel):
    path: str
    kernel_types: list[str]
    kernels: list[str] = Field(default_factory=list, description="kernel function or class names found")


class DiscoveredConfig(BaseModel):
    path: str
    kernel_ids: list[str]
    kernel_types: list[str]


class InvalidConfig(BaseModel):
    path: str
    problem: str


class Discovery(BaseModel):
    root: str
    sources: list[DiscoveredSource] = Field(default_factory=list)
    configs: list[DiscoveredConfig] = Field(default_factory=list)
    invalid_configs: list[InvalidConfig] = Field(default_factory=list)
    truncated: bool = False


def _walk(root: Path, max_depth: int) -> Iterator[Path]:
    base_depth = len(root.parts)
    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).parts) - base_depth
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and depth < max_depth)
        for name in sorted(files):
            yield Path(folder) / name


def _backend_patterns() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """suffix -> [(kernel type, compiled pattern)] from every installed kernel backend."""
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    seen: set[int] = set()
    for kernel_type, backend in get_plugin_manager().components("kernel_backend").items():
        if id(backend) in seen:
            continue
        seen.add(id(backend))
        primary = (getattr(backend, "kernel_types", ()) or (kernel_type,))[0]
        for suffix, patterns in (getattr(backend, "source_patterns", None) or {}).items():
            for pattern in patterns or ("",):
                table.setdefault(suffix.lower(), []).append((primary, re.compile(pattern, re.MULTILINE)))
    return table


def discover_kernels(root: Path, *, max_depth: int = 6, max_results: int = 500) -> Discovery:
    """Kernel sources (by the installed backends' patterns) and kernel YAML configs under ``root``."""
    patterns = _backend_patterns()
    found = Discovery(root=str(root))
    for path in _walk(root, max_depth):
        if len(found.sources) + len(found.configs) >= max_results:
            found.truncated = True
            break
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            _discover_config(path, found)
            continue
        rules = patterns.get(suffix)
        generic = suffix in GENERIC_GPU_SOURCES and not rules
        if not rules and not generic:
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = path.read_text(errors="replace")
        except OSError:
            continue
        types: list[str] = []
        names: list[str] = []
        for kernel_type, pattern in rules or []:
            matches = list(pattern.finditer(text)) if pattern.pattern else [None]
            if matches:
                if kernel_type not in types:
                    types.append(kernel_type)
                names += [m.group("name") for m in matches if m is not None and "name" in m.re.groupindex]
        if generic and "__global__" in text:
            types.append(GENERIC_GPU_SOURCES[suffix])
            names += [m.group("name") for m in GLOBAL_FN.finditer(text)]
        if types:
            unique = list(dict.fromkeys(n for n in names if n))
            found.sources.append(DiscoveredSource(path=str(path), kernel_types=types, kernels=unique))
    return found


def _discover_config(path: Path, found: Discovery) -> None:
    try:
        head = path.read_text(errors="replace")[:MAX_FILE_BYTES]
    except OSError:
        return
    if not re.search(r"(?m)^(kernel|kernels):", head):
        return
    try:
        file = load_config(KernelConfigFile, path)
    except (ConfigError, ConfigErrors) as exc:
        found.invalid_configs.append(InvalidConfig(path=str(path), problem=str(exc)))
        return
    kernels = file.all_kernels()
    found.configs.append(
        DiscoveredConfig(
            path=str(path),
            kernel_ids=[k.id for k in kernels],
            kernel_types=list(dict.fromkeys(k.type for k in kernels)),
        )
    )


# --- suggestions -------------------------------------------------------------------

Severity = Literal["blocker", "high", "medium", "info"]


class Suggestion(BaseModel):
    kernel_id: str | None = None
    category: str = Field(
        description="correctness | measurement | launch_overhead | roofline | occupancy | "
        "comparison | gaps | hotspot | compile"
    )
    severity: Severity
    finding: str = Field(description="what the measurement shows")
    suggestion: str = Field(description="what to try next")
    evidence: dict[str, Any] = Field(default_factory=dict, description="the measured numbers behind it")


class Suggestions(BaseModel):
    report_path: str
    mode: str
    suggestions: list[Suggestion]


LAUNCH_NOTE = re.compile(r"launch-bound: the host needs ([\d.]+) us per launch, the device ([\d.]+) us")
_SEVERITY_ORDER = {"blocker": 0, "high": 1, "medium": 2, "info": 3}


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
            out += _kernel_suggestions(result, peak_tflops, peak_bandwidth_gbps)
        if mode == "compare":
            out += _compare_suggestions(report)
    elif mode == "benchmark" or "gap_analysis" in report or "top_kernels" in report:
        gap = report.get("gap_analysis") if mode == "benchmark" else report
        if isinstance(gap, dict):
            out += _gap_suggestions(gap)
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


def _kernel_suggestions(r: dict[str, Any], peak_tflops: float | None, peak_bw: float | None) -> list[Suggestion]:
    kid = str(r.get("kernel_id"))
    out: list[Suggestion] = []
    compile_ = r.get("compile") or {}
    if compile_.get("status") in ("failed", "error"):
        return [
            Suggestion(
                kernel_id=kid,
                category="compile",
                severity="blocker",
                finding=f"compile {compile_.get('status')}: {compile_.get('message')}",
                suggestion="fix the build first; the compile log is in the kernel's workdir",
                evidence={"log_tail": (compile_.get("log") or "")[-800:]},
            )
        ]
    correctness = r.get("correctness") or {}
    status = correctness.get("status")
    if status in ("failed", "error"):
        return [
            Suggestion(
                kernel_id=kid,
                category="correctness",
                severity="blocker",
                finding=(correctness.get("message") or f"correctness {status}").splitlines()[0],
                suggestion="the kernel is wrong (or crashed): timing it is meaningless until it "
                "matches the reference; look at the first mismatching index and the tail handling",
                evidence={"method": correctness.get("method"), "message": correctness.get("message")},
            )
        ]
    if status == "not_run":
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
    timing = perf.get("timing") or {}
    notes = [str(n) for n in perf.get("notes") or []]
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
    if timing:
        median, lo, hi = timing.get("median"), timing.get("ci95_low"), timing.get("ci95_high")
        if median and lo is not None and hi is not None and median > 0:
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
    for note in notes:
        m = LAUNCH_NOTE.search(note)
        if m:
            host, device = float(m.group(1)), float(m.group(2))
            out.append(
                Suggestion(
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
            )
    for row in perf.get("counters") or []:
        out += _counter_suggestions(kid, row, peak_tflops, peak_bw)
    return out


def _counter_suggestions(
    kid: str, row: dict[str, Any], peak_tflops: float | None, peak_bw: float | None
) -> list[Suggestion]:
    out: list[Suggestion] = []
    name = row.get("kernel_name")
    pct = {k: float(v) for k, v in (row.get("pct_of_peak") or {}).items() if v is not None}
    ai = row.get("arithmetic_intensity")
    flops, time_us = row.get("flops"), row.get("time_us")
    moved = (row.get("dram_read_bytes") or 0) + (row.get("dram_write_bytes") or 0)
    if ai is None and flops and moved:
        ai = flops / moved
    evidence: dict[str, Any] = {"kernel_name": name, "pct_of_peak": pct, "arithmetic_intensity": ai}
    bound: str | None = None
    if ai is not None and peak_tflops and peak_bw:
        ridge = peak_tflops * 1e12 / (peak_bw * 1e9)
        bound = "memory" if ai < ridge else "compute"
        evidence["ridge_point_flops_per_byte"] = ridge
        if time_us:
            achieved = (flops or 0) / (time_us * 1e-6) / 1e12 if flops else None
            attainable = min(peak_tflops, ai * peak_bw / 1e3)
            evidence.update(achieved_tflops=achieved, attainable_tflops=attainable)
            if achieved is not None and attainable:
                pct.setdefault("roofline", 100 * achieved / attainable)
    elif pct:
        top = max(pct, key=lambda k: pct[k])
        bound = "memory" if any(w in top.lower() for w in ("dram", "mem", "hbm", "bw", "bandwidth")) else "compute"
        evidence["limiting_resource"] = top
    if bound is not None:
        best = max(pct.values()) if pct else None
        if best is not None and best < 30:
            out.append(
                Suggestion(
                    kernel_id=kid,
                    category="roofline",
                    severity="high",
                    finding=f"{name}: {bound}-side by intensity but only {best:.0f}% of the nearest "
                    "peak: latency-bound (too little parallelism or stalls)",
                    suggestion="raise occupancy / work per thread, overlap memory with compute, "
                    "check for serialization (atomics, syncs, small grids)",
                    evidence=evidence,
                )
            )
        elif bound == "memory":
            out.append(
                Suggestion(
                    kernel_id=kid,
                    category="roofline",
                    severity="medium",
                    finding=f"{name}: memory-bound"
                    + (f" at {best:.0f}% of peak bandwidth" if best is not None else ""),
                    suggestion="cut bytes moved: fuse with neighbours, use narrower dtypes, "
                    "vectorize and coalesce loads, reuse data through shared memory / LDS",
                    evidence=evidence,
                )
            )
        else:
            out.append(
                Suggestion(
                    kernel_id=kid,
                    category="roofline",
                    severity="medium",
                    finding=f"{name}: compute-bound" + (f" at {best:.0f}% of peak" if best is not None else ""),
                    suggestion="use matrix cores (MFMA / tensor cores) and lower precision where "
                    "accuracy allows; remove redundant arithmetic",
                    evidence=evidence,
                )
            )
    occupancy = row.get("achieved_occupancy_pct")
    if occupancy is not None and occupancy < 25:
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


def _compare_suggestions(report: dict[str, Any]) -> list[Suggestion]:
    out: list[Suggestion] = []
    for entry in report.get("ranking") or []:
        verdict = entry.get("verdict")
        evidence = {
            "speedup": entry.get("speedup"),
            "speedup_ci95": entry.get("speedup_ci95"),
            "median_us": entry.get("median_us"),
        }
        if verdict == "SLOWER":
            out.append(
                Suggestion(
                    kernel_id=entry.get("kernel_id"),
                    category="comparison",
                    severity="medium",
                    finding=f"slower than the baseline ({entry.get('speedup', 0):.3f}x)",
                    suggestion="drop this variant or find what it added",
                    evidence=evidence,
                )
            )
        elif verdict == "SAME":
            out.append(
                Suggestion(
                    kernel_id=entry.get("kernel_id"),
                    category="comparison",
                    severity="info",
                    finding="no significant difference from the baseline",
                    suggestion="the change is within noise; it does not pay for its complexity "
                    "unless it helps other shapes",
                    evidence=evidence,
                )
            )
        elif verdict == "FASTER":
            out.append(
                Suggestion(
                    kernel_id=entry.get("kernel_id"),
                    category="comparison",
                    severity="info",
                    finding=f"faster than the baseline ({entry.get('speedup', 0):.3f}x)",
                    suggestion="keep it; check more input shapes before adopting it",
                    evidence=evidence,
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


def _gap_suggestions(gap: dict[str, Any]) -> list[Suggestion]:
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


# --- benchmark reports ------------------------------------------------------------------

REPORT_NAME = "benchmark_report.json"


class BenchmarkRun(BaseModel):
    path: str
    workspace: str
    framework: str | None = None
    model: str | None = None
    timestamp: str | None = None
    success: bool | None = None
    run_kind: str | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    mean_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    errors: list[str] = Field(default_factory=list)


def find_benchmark_reports(root: Path, limit: int = 200) -> list[Path]:
    """``<root>/benchmark_*/benchmark_report.json`` (and one level deeper), newest first."""
    paths = {*root.glob(f"benchmark_*/{REPORT_NAME}"), *root.glob(f"*/benchmark_*/{REPORT_NAME}")}
    if (root / REPORT_NAME).is_file():
        paths.add(root / REPORT_NAME)
    return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)[:limit]


def load_report_file(path: Path) -> dict[str, Any]:
    if path.is_dir():
        candidates = [path / REPORT_NAME, *sorted(path.glob("*_report.json")), path / "gap_analysis.json"]
        path = next((c for c in candidates if c.is_file()), path / REPORT_NAME)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a magpie report")
    data.setdefault("_path", str(path))
    return data


def _num(data: dict[str, Any], *keys: str) -> float | None:
    current: Any = data
    for key in keys:
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    try:
        return None if current is None else float(current)
    except (TypeError, ValueError):
        return None


def benchmark_run(path: Path, data: dict[str, Any]) -> BenchmarkRun:
    try:
        return BenchmarkRun(
            path=str(path),
            workspace=str(data.get("workspace_dir") or data.get("workspace") or path.parent),
            framework=data.get("framework"),
            model=data.get("model"),
            timestamp=data.get("timestamp"),
            success=data.get("success"),
            run_kind=data.get("run_kind"),
            request_throughput=_num(data, "throughput", "request_throughput"),
            output_throughput=_num(data, "throughput", "output_throughput"),
            mean_ttft_ms=_num(data, "latency", "ttft", "mean_ms"),
            mean_tpot_ms=_num(data, "latency", "tpot", "mean_ms"),
            errors=[str(e) for e in data.get("errors") or []],
        )
    except ValidationError as exc:
        raise ValueError(f"{path}: not a benchmark report: {exc.errors()[0]['msg']}") from exc


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


class MetricComparison(BaseModel):
    metric: str
    higher_is_better: bool
    values: list[float | None]
    change_vs_first_pct: list[float | None]
    best_index: int | None


class KernelShare(BaseModel):
    name: str
    pct_total: list[float | None]


class BenchmarkComparison(BaseModel):
    runs: list[BenchmarkRun]
    metrics: list[MetricComparison]
    top_kernels: list[KernelShare] = Field(default_factory=list)


def compare_benchmark_reports(reports: list[tuple[Path, dict[str, Any]]], top_k: int = 10) -> BenchmarkComparison:
    runs = [benchmark_run(path, data) for path, data in reports]
    metrics: list[MetricComparison] = []
    for metric, (keys, higher) in COMPARED_METRICS.items():
        values = [_num(data, *keys) for _, data in reports]
        if all(v is None for v in values):
            continue
        first = values[0]
        changes = [None if v is None or not first else round(100 * (v - first) / first, 2) for v in values]
        present = [(i, v) for i, v in enumerate(values) if v is not None]
        best = (max if higher else min)(present, key=lambda t: t[1])[0] if present else None
        metrics.append(
            MetricComparison(
                metric=metric, higher_is_better=higher, values=values, change_vs_first_pct=changes, best_index=best
            )
        )
    shares: dict[str, list[float | None]] = {}
    for i, (_, data) in enumerate(reports):
        gap = data.get("gap_analysis") or {}
        for kernel in (gap.get("top_kernels") or [])[:top_k]:
            row = shares.setdefault(str(kernel.get("name")), [None] * len(reports))
            row[i] = kernel.get("pct_total")
    top = [KernelShare(name=name, pct_total=values) for name, values in shares.items()]
    top.sort(key=lambda k: -max((v or 0) for v in k.pct_total))
    return BenchmarkComparison(runs=runs, metrics=metrics, top_kernels=top[:top_k])
