"""The diagnostic pass of a benchmark run (``run_kind: diagnostic``, or ``auto`` with the torch profiler on):
``start_profile``, a short load, ``stop_profile``, the traces waited for in ``torch_trace/`` (one folder per capture
when there are several), then the trace analyses of each capture by the installed trace analyzers (gap analysis,
the targeted trace, the inference analysis), looked up in the registry. Its numbers are kept apart and never
replace the measurement; an analysis that is missing or breaks is an error of the report, never of the run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from magpie_benchmark.benchmark_server import ServerHandle
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.measure import run_point
from magpie_benchmark.workload import Point
from magpie_core.runtime.workspace import Workspace

if TYPE_CHECKING:
    from magpie_benchmark.report import BenchmarkReport


def run_diagnostic_captures(
    config: BenchmarkConfig,
    framework: Any,
    handle: ServerHandle,
    model: str,
    point: Point,
    tokenizer: Any,
    ws: Workspace,
    report: BenchmarkReport,
) -> None:
    """The profiled diagnostic captures (``num_profiles``, ``interval_seconds`` apart), then the trace
    analyses of what each recorded; the report's ``gap_analysis`` is the first capture's."""
    tp = config.profiler.torch_profiler
    captures = []
    for i in range(tp.num_profiles):
        if i and tp.interval_seconds:
            time.sleep(tp.interval_seconds)  # starts once the previous capture's traces are written
        diag = run_diagnostic(config, framework, handle, model, point, tokenizer, ws, capture=i)
        if handle.process:
            handle.process.check_alive()
        if diag.get("traces"):
            index = i if tp.num_profiles > 1 else None
            analyze_capture(config, Path(diag["trace_dir"]), ws, point, report, diag, index)
        report.errors += [f"diagnostic: {e}" for e in diag["errors"]]
        captures.append(diag)
    report.diagnostic = {**captures[0], "captures": captures} if len(captures) > 1 else captures[0]


def analyze_capture(
    config: BenchmarkConfig,
    trace_dir: Path,
    ws: Workspace,
    point: Point | None,
    report: BenchmarkReport,
    diag: dict[str, Any],
    index: int | None,
) -> None:
    """The trace analyses of one capture's traces (gap analysis; the targeted trace and the inference analysis when
    configured), each into its folder (``profile_<NNN>/`` of capture ``index``), recorded in ``diag`` and the report
    (whose summaries are the first capture's); ``point`` names the tables (None: an offline workload)."""
    suffix = "" if index is None else f"/profile_{index + 1:03d}"
    gap = run_gap_analysis(config, trace_dir, Path(f"{ws.path / 'gap_analysis'}{suffix}"))
    diag["gap_analysis"] = gap.get("output_dir") or gap.get("trace_dir")
    report.errors += [f"gap analysis: {e}" for e in gap.get("errors") or []]
    report.gap_analysis = report.gap_analysis or gap
    if getattr(config.profiler.plugin_block("targeted_trace"), "enabled", False):
        targeted = run_targeted_trace(config, trace_dir, Path(f"{ws.path / 'targeted_trace'}{suffix}"), ws.path.name)
        diag["targeted_trace"] = targeted.get("manifest") or targeted.get("trace_dir")
        report.errors += [f"targeted trace: {e}" for e in targeted["errors"]]
        report.targeted_trace = report.targeted_trace or targeted
    if config.profiler.tracelens.enabled:
        lens = run_tracelens_analysis(config, trace_dir, Path(f"{ws.path / 'tracelens'}{suffix}"), point)
        report.errors += [f"trace analysis: {e}" for e in lens.get("errors") or []]
        report.tracelens_analysis = report.tracelens_analysis or lens


def run_diagnostic(
    config: BenchmarkConfig,
    framework: Any,
    handle: ServerHandle,
    model: str,
    point: Point,
    tokenizer: Any,
    ws: Workspace,
    capture: int = 0,
) -> dict[str, Any]:
    """One profiled capture: start_profile, a short load, stop_profile, then wait for its traces.

    With ``profiler.torch_profiler.num_profiles`` above 1, each capture's new traces are moved to
    ``torch_trace/profile_<NNN>/`` (AMD Magpie's layout), so every capture is analyzed on its own.
    """
    tp = config.profiler.torch_profiler
    trace_dir = ws.path / "torch_trace"
    out: dict[str, Any] = {"trace_dir": str(trace_dir), "errors": [], "capture": capture + 1}
    if not framework.start_profile_path:
        out["errors"].append(f"{framework.name} has no profiler endpoints")
        return out
    if tp.num_steps and not getattr(framework, "supports_num_steps", False):
        out["errors"].append(f"profiler.torch_profiler.num_steps: {framework.name} cannot limit a capture to steps")
    before = set(_traces_now(trace_dir, framework.trace_patterns))
    if _profiled_load(config, framework, handle, model, point, tokenizer, out):
        _collect_traces(config, framework, trace_dir, before, capture, out)
    return out


def _profiled_load(
    config: BenchmarkConfig,
    framework: Any,
    handle: ServerHandle,
    model: str,
    point: Point,
    tokenizer: Any,
    out: dict[str, Any],
) -> bool:
    """start_profile, the short load, stop_profile (even when the load fails), recorded in ``out``; False when the
    server refused to start profiling."""
    tp = config.profiler.torch_profiler
    num = config.load.diagnostic_num_prompts or max(point.concurrency or 1, 1)
    body = framework.start_profile_body(config) if hasattr(framework, "start_profile_body") else None
    status, text = _http_post(handle.base_url + framework.start_profile_path, body=body)
    out["start_profile"] = status
    if status >= 300:
        out["errors"].append(f"start_profile answered HTTP {status}: {text}")
        return False
    try:
        row, load = run_point(
            config,
            handle.base_url,
            model,
            point,
            tokenizer,
            num_prompts=num,
            label="diagnostic (profiled)",
            warmup=0,
            point_timeout_s=tp.capture_timeout_seconds,
            framework=framework,
        )
        out["point"] = row
        if load.stall is not None:
            out["errors"].append(f"the profiled load stopped: {load.stall}")
        if load.interrupted:
            raise KeyboardInterrupt  # no waiting for traces: the run is stopping
    finally:
        status, text = _http_post(handle.base_url + framework.stop_profile_path)
        out["stop_profile"] = status
        if status >= 300:
            out["errors"].append(f"stop_profile answered HTTP {status}: {text}")
    return True


def _collect_traces(
    config: BenchmarkConfig, framework: Any, trace_dir: Path, before: set[Path], capture: int, out: dict[str, Any]
) -> None:
    """The capture's new trace files once the server has written them (into ``profile_<NNN>/`` when there are
    several captures), recorded in ``out``."""
    tp = config.profiler.torch_profiler
    flush_s = tp.flush_timeout_seconds or min(config.timeout_seconds, 300)
    traces = [p for p in wait_for_traces(trace_dir, framework.trace_patterns, timeout_s=flush_s) if p not in before]
    if tp.num_profiles > 1 and traces:
        trace_dir = trace_dir / f"profile_{capture + 1:03d}"
        traces = _move_into(traces, trace_dir)
        out["trace_dir"] = str(trace_dir)
    out["traces"] = [str(p) for p in traces]
    if not traces:
        out["errors"].append(f"no trace file appeared under {trace_dir} within {flush_s:g} s")


def _traces_now(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    return [p for pat in patterns for p in folder.rglob(pat) if p.is_file()] if folder.is_dir() else []


def _move_into(files: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [f.rename(folder / f.name) for f in files]


def _http_post(url: str, timeout: float = 600.0, body: dict[str, Any] | None = None) -> tuple[int, str]:
    with httpx.Client(timeout=timeout) as client:
        resp = client.post(url) if body is None else client.post(url, json=body)
        return resp.status_code, resp.text[:300]


def wait_for_traces(folder: Path, patterns: tuple[str, ...], timeout_s: float, settle_s: float = 2.0) -> list[Path]:
    """Trace files under ``folder`` once they exist and their sizes stop changing."""
    deadline = time.monotonic() + timeout_s
    last: dict[Path, int] = {}
    stable_since = None
    while True:
        found = {p: p.stat().st_size for pat in patterns for p in folder.rglob(pat) if p.is_file()}
        if found and found == last:
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since >= settle_s:
                return sorted(found)
        else:
            stable_since = None
        last = found
        if time.monotonic() > deadline:
            return sorted(found)
        time.sleep(0.5)


#: the trace analyzer of ``gap_analysis:`` (plugin distribution magpie-gap-analysis)
GAP_ANALYZER = "gap"


def run_trace_analyzer(
    name: str, distribution: str, what: str, trace_dir: Path, options: dict[str, Any], out_dir: Path
) -> dict[str, Any]:
    """The installed trace analyzer ``name`` on ``trace_dir``: its summary, or ``errors`` (never raises:
    the measurement must survive a missing or broken analysis)."""
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        analyzer = get_plugin_manager().get("trace_analyzer", name)
    except UnknownComponentError as exc:
        message = f"{what} is not available: install the plugin distribution {distribution} ({exc})"
        return {"errors": [message], "trace_dir": str(trace_dir)}
    try:
        data = dict(analyzer.analyze(trace_dir, options, out_dir))
    except (ValueError, OSError) as exc:
        return {"errors": [str(exc)], "trace_dir": str(trace_dir)}
    except Exception as exc:
        return {"errors": [f"{what} failed: {type(exc).__name__}: {exc}"], "trace_dir": str(trace_dir)}
    data.setdefault("trace_dir", str(trace_dir))
    return data


def block_options(block: Any) -> dict[str, Any]:
    """A plugin config block's settings as the analyzer's options (no block: {}, the analyzer's defaults)."""
    return block.model_dump() if block is not None else {}


def run_gap_analysis(config: BenchmarkConfig, trace_dir: Path, out_dir: Path) -> dict[str, Any]:
    """``gap_analysis:`` by the installed ``gap`` trace analyzer: its summary, or ``errors`` (never raises)."""
    options = block_options(config.plugin_block("gap_analysis"))
    return run_trace_analyzer(GAP_ANALYZER, "magpie-gap-analysis", "gap analysis", trace_dir, options, out_dir)


#: the trace analyzer of ``profiler.targeted_trace`` (plugin distribution magpie-targeted-trace)
TARGETED_ANALYZER = "targeted-trace"


def run_targeted_trace(config: BenchmarkConfig, trace_dir: Path, out_dir: Path, run_id: str) -> dict[str, Any]:
    """``profiler.targeted_trace``: the capture's matching kernels as checksummed shards, validated; the
    analyzer's bounded summary, its integrity issues as ``errors``."""
    block = block_options(config.profiler.plugin_block("targeted_trace"))
    options = {**block, "run_id": run_id, "framework": config.framework}
    data = run_trace_analyzer(TARGETED_ANALYZER, "magpie-targeted-trace", "targeted trace", trace_dir, options, out_dir)
    data.setdefault("errors", list(data.get("issues") or []))
    return data


TRACE_ANALYZER = "inference"


def run_tracelens_analysis(
    config: BenchmarkConfig, trace_dir: Path, out_dir: Path, point: Point | None
) -> dict[str, Any]:
    """``profiler.tracelens``: stage split and roofline by the installed ``inference`` trace analyzer.

    Writes ``<stage>_ISL<i>_OSL<o>_CONC<c>_kernel_roofline_simple.csv`` (AMD Magpie's names) and the rest
    under ``out_dir``; returns the analyzer's summary with ``outputs`` and ``errors`` (never raises).
    """
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    tl = config.profiler.tracelens
    result: dict[str, Any] = {"trace_dir": str(trace_dir), "output_dir": str(out_dir), "outputs": [], "errors": []}
    try:
        analyzer = get_plugin_manager().get("trace_analyzer", TRACE_ANALYZER)
    except UnknownComponentError as exc:
        result["errors"].append(str(exc))
        return result
    options: dict[str, Any] = {
        "stages": tl.analysis_stages,
        # excel: the CSVs, and one workbook of them (inference_tables_<label>.xlsx)
        "export_format": tl.export_format,
        # an offline workload (no point) has no load shape to name its tables by
        "label_suffix": f"_ISL{point.input_len}_OSL{point.output_len}_CONC{point.concurrency}" if point else "",
    }
    if tl.gpu_arch_config:
        options["spec"] = tl.gpu_arch_config
    notes = []
    if tl.analysis_mode != "inference":
        notes.append(f"analysis_mode {tl.analysis_mode!r}: magpie runs the inference analysis (use magpie gap too)")
    try:
        summary = analyzer.analyze(trace_dir, options, out_dir)
    except Exception as exc:  # the measurement must survive a broken analysis
        result["errors"].append(f"trace analysis failed: {type(exc).__name__}: {exc}")
        return result
    summary = dict(summary)
    summary.setdefault("errors", [])
    summary.setdefault("outputs", [])
    summary["trace_dir"] = str(trace_dir)
    summary["notes"] = notes
    return summary
