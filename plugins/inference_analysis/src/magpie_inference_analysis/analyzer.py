"""The ``inference`` trace analyzer: stage split, steady-state window, kernel table, roofline.

Pipeline per trace file (see docs/inference-analysis.md):

1. decode (msgspec, only the fields used);
2. link each kernel to its launch call (``correlation``) and the CPU ops enclosing that call;
3. iterations: engine step annotations when present (vLLM / SGLang / ATOM formats, detailed
   variants preferred), else inferred (a repeating top-level annotation, else each graph
   launch, else the whole trace), with the phase inferred from attention shapes / kernel names;
4. graph replays: mapped to captured ops with capture traces, else one ``graph`` group;
5. per stage (``prefill_only``, ``decode_only``, ``prefilldecode``): the steady-state window of
   iterations, then the kernel table, the roofline table and the per-iteration timeline.

This module runs that pipeline over the input files (:class:`InferenceAnalyzer`, :func:`analyze_state`) and
writes the summary and the workbook; the steps are, by job (their names are re-exported here):

* :mod:`~magpie_inference_analysis.trace_state`: the trace's shared state, its iterations and windows (1-3);
* :mod:`~magpie_inference_analysis.kernel_ops`: the op each kernel's time goes to, graph replays included (2, 4);
* :mod:`~magpie_inference_analysis.stage_tables`: each stage's tables and the timeline, written as CSV (5).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from magpie_trace.columns import collector_paused
from magpie_trace.validity import skipped_messages

from magpie_core.interfaces import TraceAnalyzer
from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.annotations import DECODE, MIXED, PREFILL
from magpie_inference_analysis.graphs import CapturedGraph, load_captures
from magpie_inference_analysis.kernel_ops import (
    ORIGIN_CAPTURE,
    ORIGIN_GRAPH,
    ORIGIN_LAUNCH,
    ORIGINS,
    GraphMap,
    KernelOps,
    MoeSplitter,
    OpChooser,
    OpInstance,
    _kernel_ops,
    _map_graph_replays,
)
from magpie_inference_analysis.specs import GpuSpec, SpecError, detect_spec, load_spec
from magpie_inference_analysis.stage_tables import (
    ITER_COLUMNS,
    KERNEL_COLUMNS,
    MIB,
    ROOFLINE_COLUMNS,
    _instance_rows,
    _write_iterations,
    _write_stage,
)
from magpie_inference_analysis.trace_state import (
    _NAME,
    UNKNOWN,
    AnalysisError,
    Iteration,
    TraceState,
    WindowSpec,
    choose_window,
    is_attention_schema_op,
    parse_window,
    steady_state,
)

__all__ = [
    "EXPORT_FORMATS",
    "ITER_COLUMNS",
    "KERNEL_COLUMNS",
    "MIB",
    "ORIGINS",
    "ORIGIN_CAPTURE",
    "ORIGIN_GRAPH",
    "ORIGIN_LAUNCH",
    "ROOFLINE_COLUMNS",
    "STAGES_FOR",
    "STAGE_ORDER",
    "UNKNOWN",
    "AnalysisError",
    "GraphMap",
    "InferenceAnalyzer",
    "Iteration",
    "KernelOps",
    "MoeSplitter",
    "OpChooser",
    "OpInstance",
    "TraceState",
    "WindowSpec",
    "analyze_state",
    "choose_window",
    "is_attention_schema_op",
    "parse_window",
    "steady_state",
    "workbook_sheets",
    "write_workbook",
]

STAGE_ORDER = (PREFILL, DECODE, MIXED, UNKNOWN)
STAGES_FOR = {
    "all": STAGE_ORDER,
    "prefilldecode": (MIXED,),
    "decode": (DECODE,),
    "prefill": (PREFILL,),
}


def analyze_state(
    st: TraceState,
    spec: GpuSpec | None,
    stages: tuple[str, ...],
    out_dir: Path,
    prefix: str,
    suffix: str,
    captures: list[CapturedGraph],
) -> dict[str, Any]:
    """Iterations, graph replays, kernel -> op, then each requested stage's tables and the timeline."""
    its = st.iterations()
    t0 = st.t0
    graph_map, graph_info = _map_graph_replays(st, its, captures)
    kernel_ops = _kernel_ops(st, its, graph_map)
    _instance_rows(st, kernel_ops)
    by_phase: dict[str, list[Iteration]] = {}
    for it in its:
        by_phase.setdefault(it.phase, []).append(it)
    stage_results: dict[str, Any] = {}
    for stage in STAGE_ORDER:
        if stage not in stages or stage not in by_phase:
            continue
        stage_its = by_phase[stage]
        window, how = choose_window(stage_its, parse_window(st.options.get("window")))
        for it in window:
            it.in_window = True
        label = f"{prefix}{stage}{suffix}"
        stage_results[stage] = _write_stage(st, spec, label, stage_its, window, how, kernel_ops, out_dir, t0)
    timeline_path = out_dir / f"{prefix}iterations{suffix}.csv"
    _write_iterations(st, its, timeline_path, t0)
    from magpie_inference_analysis.tracelens_tables import tables_wanted, write_tables

    tl_tables = write_tables(st, its, graph_map, out_dir, prefix, st.options) if tables_wanted(st.options) else {}
    phases = Counter(it.phase for it in its)
    return {
        "trace_file": str(st.trace.path),
        "size_bytes": st.trace.size_bytes,
        "num_events": st.trace.num_events,
        "platform": "rocm" if st.trace.rocm else "cuda/cpu",
        "iterations": len(its),
        "phases": dict(phases),
        "phase_source": "annotation" if its and its[0].phase_source == "annotation" else "inferred",
        **_engine(st, its, captures),
        "kernels": len(st.kernels),
        "kernels_outside_iterations": int(np.count_nonzero(st.k_iter < 0)),
        "graph": graph_info,
        "stages": stage_results,
        "iterations_csv": str(timeline_path),
        "tracelens_tables": tl_tables,
        "notes": st.notes,
    }


def _engine(st: TraceState, its: list[Iteration], captures: list[CapturedGraph]) -> dict[str, Any]:
    """The engine, from the op names of the trace and its capture traces (:mod:`engine`)."""
    from magpie_inference_analysis.engine import detect_engine

    fmt = its[0].step.engine if its and its[0].step else None
    names = set(st.trace.cpu_op_names or map(_NAME, st.cpu_ops))
    for ops in {id(g.ops): g.ops for g in captures}.values():
        names.update(map(_NAME, ops))
    engine, how = detect_engine(names, fmt, st.kernel_names.values)
    return {"engine": engine, "engine_source": how, "annotation_format": fmt}


def _trace_files(target: Path) -> list[Path]:
    from magpie_trace.discover import find_trace_files

    files = find_trace_files(target)
    return [p for p in files if "capture_traces" not in p.parts[len(target.parts) - 1 :]]


def _input_files(traces: Any) -> list[Path]:
    """The trace files of ``traces`` (a file, a folder of them, or a list of files); none is an error."""
    if isinstance(traces, (str, Path)):
        root = Path(traces)
        if not root.exists():
            raise AnalysisError(f"{root}: no such file or folder")
        files = _trace_files(root)
    else:
        files = [Path(p) for p in traces]
        root = files[0] if files else Path(".")
    if not files:
        raise AnalysisError(f"{root}: no trace files (.json, .json.gz) found")
    return files


def _user_spec(options: dict[str, Any]) -> GpuSpec | None:
    """The GPU spec the options name (a bundled name or a JSON file), or None."""
    if not options.get("spec"):
        return None
    try:
        return load_spec(str(options["spec"]))
    except SpecError as exc:
        raise AnalysisError(str(exc)) from None


class InferenceAnalyzer(TraceAnalyzer):
    """Stage split (prefill / decode / mixed), steady-state window and per-op roofline of inference traces."""

    name: ClassVar[str] = "inference"
    description: ClassVar[str] = (
        "inference traces: prefill/decode stage split, steady-state window, per-op roofline (AMD and NVIDIA specs)"
    )

    def analyze(self, traces: Any, options: dict[str, Any], out_dir: Path) -> dict[str, Any]:
        """``traces``: a trace file, a folder of them, or a list of files. Options:

        ``stages`` (all|prefilldecode|decode|prefill), ``spec`` (name or JSON path; default from the trace),
        ``capture_traces`` (folder; default ``capture_traces/`` next to the trace), ``label_suffix``
        (e.g. ``_ISL1024_OSL512_CONC32``), ``workers`` (processes that decode a large trace; default: cores),
        ``window`` (auto | all | FIRST:LAST), ``include_unlinked_kernels`` (TraceLens tables: also kernels
        without a launch record), ``world_size`` (ranks, for the collectives' bus bandwidth), ``tracelens_tables``
        (false: skip TraceLens's tables, ~0.15 s of CPU per 150 MB of trace), ``export_format`` (csv, the default;
        excel: also ``inference_tables<label_suffix>.xlsx``, every table a sheet, its path as ``workbook``).
        """
        t_start = time.perf_counter()
        stages_opt = str(options.get("stages") or "all")
        if stages_opt not in STAGES_FOR:
            raise AnalysisError(f"stages must be one of {', '.join(STAGES_FOR)}, not {stages_opt!r}")
        user_spec = _user_spec(options)
        parse_window(options.get("window"))  # a bad window is a usage error before any work
        export = str(options.get("export_format") or "csv")
        if export not in EXPORT_FORMATS:
            raise AnalysisError(f"export_format must be one of {', '.join(EXPORT_FORMATS)}, not {export!r}")
        files = _input_files(traces)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        summary: dict[str, Any] = {
            "analyzer": self.name,
            "stages_requested": stages_opt,
            "output_dir": str(out_dir),
            "traces": [],
            "errors": [],
            "warnings": [],
            "outputs": [],
        }
        for n, path in enumerate(files):
            prefix = f"rank{n}_" if len(files) > 1 else ""
            result = _analyze_file(path, options, STAGES_FOR[stages_opt], user_spec, out_dir, prefix, summary)
            if result is None:
                continue
            summary["traces"].append(result)
            for s in result["stages"].values():
                summary["outputs"] += [s["roofline_csv"], s["kernels_csv"]]
            summary["outputs"].append(result["iterations_csv"])
            summary["outputs"] += list(result.get("tracelens_tables", {}).values())
        if export == "excel" and summary["traces"]:
            workbook = out_dir / f"inference_tables{options.get('label_suffix') or ''}.xlsx"
            summary["workbook"] = str(write_workbook(workbook, summary["traces"]))
            summary["outputs"].append(summary["workbook"])
        summary["elapsed_s"] = round(time.perf_counter() - t_start, 3)
        jpath = out_dir / "inference_summary.json"
        summary["outputs"].append(str(jpath))
        jpath.write_text(json.dumps(summary, indent=2, default=str))
        return summary


#: ``export_format`` values (AMD Magpie's ``profiler.tracelens.export_format``)
EXPORT_FORMATS = ("csv", "excel")


def workbook_sheets(traces: list[dict[str, Any]]) -> dict[str, Path]:
    """The CSV tables of analysed traces by sheet name: each stage's roofline and kernels, the iterations, then
    TraceLens's tables (a ``rankN`` in front when there are several traces, as in the file names)."""
    sheets: dict[str, Path] = {}
    for n, tr in enumerate(traces):
        rank = f"rank{n} " if len(traces) > 1 else ""
        for stage, st in tr["stages"].items():
            sheets[f"{rank}{stage} roofline"] = Path(st["roofline_csv"])
            sheets[f"{rank}{stage} kernels"] = Path(st["kernels_csv"])
        sheets[f"{rank}iterations"] = Path(tr["iterations_csv"])
        sheets |= {f"{rank}{name}": Path(file) for name, file in (tr.get("tracelens_tables") or {}).items()}
    return sheets


def write_workbook(path: Path, traces: list[dict[str, Any]]) -> Path:
    """One workbook of every table the analysis wrote (``export_format: excel``, ``--format xlsx``)."""
    from magpie_trace.workbook import write_csv_workbook

    return write_csv_workbook(path, workbook_sheets(traces))


def _analyze_file(
    path: Path,
    options: dict[str, Any],
    stages: tuple[str, ...],
    user_spec: GpuSpec | None,
    out_dir: Path,
    prefix: str,
    summary: dict[str, Any],
) -> dict[str, Any] | None:
    """One trace file with its capture traces; its result, or None when it could not be read (errors go
    to ``summary["errors"]``)."""
    cap_dir = options.get("capture_traces")
    cap_path = Path(cap_dir) if cap_dir else path.parent / "capture_traces"
    captures: list[CapturedGraph] = []
    if cap_path.is_dir():
        captures, cap_errors = load_captures(cap_path)
        summary["errors"] += cap_errors
    elif cap_dir:
        summary["errors"].append(f"{cap_path}: capture_traces folder not found")
    workers = int(options.get("workers") or os.cpu_count() or 1)
    # from the load on the trace's events are alive: the collections new (acyclic) objects trigger would scan them
    # (after the load, gc re-enabled, the first ones cost ~0.02 s on the 555 MB benchmark trace)
    with collector_paused():
        try:
            trace = ev_mod.load(path, workers)
        except ev_mod.TraceLoadError as exc:
            summary["errors"].append(str(exc))
            return None
        warnings = skipped_messages(trace.skipped)
        if not trace.cpu_ops and not trace.gpu:  # nothing measured: an error, never an empty success
            why = "; ".join(warnings) or "no complete (ph X) CPU op or GPU events"
            summary["errors"].append(f"{path}: no usable events ({trace.num_events:,} read): {why}")
            return None
        summary.setdefault("warnings", []).extend(f"{path.name}: {w}" for w in warnings)
        spec = user_spec or detect_spec(trace.device_properties)
        suffix = str(options.get("label_suffix") or "")
        st = TraceState(trace, options)
        result = analyze_state(st, spec, stages, out_dir, prefix, suffix, captures)
    result["skipped_events"] = warnings
    result["spec"] = spec.as_dict() if spec is not None else None
    if spec is None:
        result["notes"].append("no GPU spec (none given, none matched deviceProperties): no roofline columns")
    if captures:
        result["capture_traces"] = str(cap_path)
    return result
