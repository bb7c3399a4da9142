"""The CSV tables of a trace's analysis and their summaries: per stage the kernel table and the roofline table over
its window (:func:`_write_stage`), and the per-iteration timeline (:func:`_write_iterations`).
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from magpie_trace.columns import Interner

from magpie_inference_analysis.kernel_ops import ORIGINS, KernelOps, OpInstance
from magpie_inference_analysis.specs import GpuSpec
from magpie_inference_analysis.trace_state import _NAME, Iteration, TraceState, _dec

ROOFLINE_COLUMNS = [
    "source_category", "op_name", "param_signature", "operation_count", "num_kernels", "kernel_time_ms_sum",
    "time_pct", "kernel_time_us_mean", "gflops", "data_moved_mb", "arithmetic_intensity_flops_per_byte",
    "achieved_tflops_mean", "achieved_tbps_mean", "compute_spec", "roofline_bound", "pct_roofline_mean",
    "roofline_time_us", "has_perf_model", "params_json", "input_dims", "input_type",
]  # fmt: skip
KERNEL_COLUMNS = [
    "Name", "Calls", "Total (us)", "Avg (us)", "Min (us)", "Max (us)", "% Stage kernel time", "Kernel category",
    "Op", "Origin",
]  # fmt: skip
ITER_COLUMNS = [
    "iteration", "phase", "phase_source", "in_window", "annotation", "requests", "tokens", "start_us",
    "step_time_us", "gpu_span_us", "gpu_busy_us", "gpu_idle_us", "kernels", "tokens_per_s",
]  # fmt: skip
MIB = 1024.0 * 1024.0


def _fmt(x: float | None, nd: int = 4) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return ""
    return f"{x:.{nd}f}"


def _g(x: float) -> str:
    """Nine significant digits: small ops keep their precision."""
    return f"{x:.9g}"


@functools.lru_cache(maxsize=1 << 16)  # a trace repeats a few thousand signatures over and over
def _signature(dims_raw: bytes, types_raw: bytes) -> str:
    return dims_raw.decode(errors="replace").replace(" ", "") + "|" + types_raw.decode(errors="replace")


def _union_busy(starts: np.ndarray, ends: np.ndarray) -> tuple[float, float]:
    if len(starts) == 0:
        return 0.0, 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    busy = float(np.sum(run_end[last] - s[first]))
    return busy, float(run_end[-1] - s[0])


def _iter_row(st: TraceState, it: Iteration, t0: float) -> dict[str, Any]:
    idx = np.array(it.kernels, np.int64)
    starts = st.k_ts[idx]
    busy, span = _union_busy(starts, starts + st.k_dur[idx])
    step_time = it.end - it.ts
    tokens = it.step.tokens if it.step else None
    return {
        "iteration": it.index,
        "phase": it.phase,
        "phase_source": it.phase_source,
        "in_window": it.in_window,
        "annotation": it.annotation,
        "requests": it.step.requests if it.step else "",
        "tokens": tokens if tokens is not None else "",
        "start_us": round(it.ts - t0, 3),
        "step_time_us": round(step_time, 3),
        "gpu_span_us": round(span, 3),
        "gpu_busy_us": round(busy, 3),
        "gpu_idle_us": round(max(0.0, span - busy), 3),
        "kernels": len(idx),
        "tokens_per_s": round(tokens / (step_time * 1e-6), 1) if tokens and step_time > 0 else "",
    }


def _write_iterations(st: TraceState, its: list[Iteration], path: Path, t0: float) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ITER_COLUMNS)
        w.writeheader()
        for it in its:
            w.writerow(_iter_row(st, it, t0))


def _write_stage(
    st: TraceState,
    spec: GpuSpec | None,
    label: str,
    stage_its: list[Iteration],
    window: list[Iteration],
    how: str,
    kernel_ops: KernelOps,
    out_dir: Path,
    t0: float,
) -> dict[str, Any]:
    """One stage's kernel table and roofline table over its steady-state ``window``; its summary."""
    sel = np.array(list(itertools.chain.from_iterable(it.kernels for it in window)), np.int64)
    dur = st.k_dur[sel]
    dur_l = dur.tolist()
    # sums below add in kernel order, as a plain loop would (np.sum's pairwise order differs in the last bits)
    total = sum(dur_l, 0.0)
    no_launch = sum(dur[~st.k_launched[sel]].tolist(), 0.0)
    inst_sel = kernel_ops.k_inst[sel]
    kpath = out_dir / f"{label}_kernels.csv"
    _write_kernel_table(kpath, st, sel, dur, total, inst_sel, kernel_ops)
    out_rows: list[dict[str, Any]] = []
    bound_time = {"compute": 0.0, "memory": 0.0}
    modelled_time = 0.0
    for (cat, name, sig), inst0, times, nk in _window_rows(inst_sel, dur, kernel_ops):
        tsum = sum(times)
        row, modelled, bound = _roofline_row(cat, name, sig, inst0, times, nk, total, spec)
        if modelled:
            modelled_time += tsum
        if bound is not None:
            bound_time[bound] += tsum
        out_rows.append(row)
    out_rows.sort(key=lambda r: -float(r["kernel_time_ms_sum"] or 0))
    rpath = _write_rows(out_dir / f"{label}_kernel_roofline_simple.csv", ROOFLINE_COLUMNS, out_rows)
    return {
        "label": label,
        "iterations": len(stage_its),
        "window_iterations": [it.index for it in window],
        "window_choice": how,
        "kernel_time_us": round(total, 3),
        "kernel_time_without_launch_record_us": round(no_launch, 3),
        "kernels": len(sel),
        "modelled_kernel_time_pct": round(100.0 * modelled_time / total, 2) if total else 0.0,
        "bound_time_us": {k: round(v, 3) for k, v in bound_time.items()},
        "timeline": _window_timeline([_iter_row(st, it, t0) for it in window]),
        "roofline_csv": str(rpath),
        "kernels_csv": str(kpath),
        "top_ops": [
            {k: r[k] for k in ("source_category", "op_name", "kernel_time_ms_sum", "time_pct", "roofline_bound")}
            for r in out_rows[:10]
        ],
    }


def _write_rows(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    return path


def _write_kernel_table(
    path: Path,
    st: TraceState,
    sel: np.ndarray,
    dur: np.ndarray,
    total: float,
    inst_sel: np.ndarray,
    kernel_ops: KernelOps,
) -> None:
    """The kernel table of the kernels ``sel`` (durations ``dur``, ops ``inst_sel``): one row per name,
    by total time."""
    names = st.kernel_names.values
    _, first, inv = np.unique(st.k_name[sel], return_index=True, return_inverse=True)
    name_ids = st.k_name[sel][first]
    sums = np.bincount(inv, weights=dur, minlength=len(first))
    counts = np.bincount(inv, minlength=len(first))
    mins = np.full(len(first), np.inf)
    maxs = np.full(len(first), -np.inf)
    np.minimum.at(mins, inv, dur)
    np.maximum.at(maxs, inv, dur)
    # the origin of a name's last kernel, and its most frequent op (ties: the op met first)
    last = len(sel) - 1 - np.unique(inv[::-1], return_index=True)[1]
    top_op = _most_common_op(inv, inst_sel, kernel_ops, len(first))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(KERNEL_COLUMNS)
        for r in np.lexsort((first, -sums)).tolist():
            name, s, c = names[name_ids[r]], float(sums[r]), int(counts[r])
            w.writerow(
                [
                    name, c, f"{s:.3f}", f"{s / c:.3f}", f"{mins[r]:.3f}", f"{maxs[r]:.3f}",
                    f"{100 * s / total:.2f}" if total else "0.00", st.kcat.get(name, "other"),
                    top_op[r], ORIGINS[kernel_ops.k_origin[sel[last[r]]]],
                ]
            )  # fmt: skip


def _instance_rows(st: TraceState, kernel_ops: KernelOps) -> None:
    """Each instance's op-name code and roofline row (:class:`KernelOps`), decided once per distinct (op name,
    inputs, model) rather than per instance and stage."""
    op_names = Interner()
    rows: dict[tuple[str, str, str], int] = {}
    known: dict[Any, int] = {}
    inst_row = []
    for inst in kernel_ops.instances:
        name = inst.name
        what = (name, inst.key[1]) if name == "(no op)" else (name, inst.dims_raw, inst.types_raw, id(inst.model))
        r = known.get(what)
        if r is None:
            r = known[what] = rows.setdefault(_roofline_key(st, inst), len(rows))
        inst_row.append(r)
    inst_op = np.fromiter(map(op_names.__getitem__, map(_NAME, kernel_ops.instances)), np.int64)
    kernel_ops.inst_op, kernel_ops.op_names = inst_op, op_names.values
    kernel_ops.inst_row, kernel_ops.row_keys = np.array(inst_row, np.int64), list(rows)


def _roofline_key(st: TraceState, inst: OpInstance) -> tuple[str, str, str]:
    """The roofline row of an instance: (category, op, signature)."""
    m = inst.model
    if inst.name == "graph":
        return "graph", inst.name, "graph-replayed kernels without a capture trace"
    if inst.name == "(no op)":
        return st.kcat.get(inst.key[1], "other"), inst.name, inst.key[1]
    cat = m.category if m is not None else "other"
    sig = _signature(inst.dims_raw, inst.types_raw)
    if m is not None and m.category == "InferenceAttention_fwd":
        sig += "|" + json.dumps({k: v for k, v in m.params.items() if k.startswith(("c_", "g_"))})
    return cat, inst.name, sig


def _window_rows(
    inst_sel: np.ndarray, dur: np.ndarray, kernel_ops: KernelOps
) -> list[tuple[tuple[str, str, str], OpInstance, list[float], int]]:
    """The roofline rows of a window's kernels (instances ``inst_sel``, durations ``dur``), in order of their
    first instance, each with that instance, its instances' kernel times (in order of their first kernel)
    and its number of kernels. An instance's time adds its kernels in kernel order (``np.bincount``)."""
    has = inst_sel >= 0
    ids, first_k, inst_inv = np.unique(inst_sel[has], return_index=True, return_inverse=True)
    if not len(ids):
        return []
    inst_sum = np.bincount(inst_inv, weights=dur[has], minlength=len(ids))
    inst_count = np.bincount(inst_inv, minlength=len(ids))
    order = np.argsort(first_k, kind="stable")  # the instances in order of their first kernel
    ids, inst_sum, inst_count = ids[order], inst_sum[order], inst_count[order]
    rows, row_first, row_inv = np.unique(kernel_ops.inst_row[ids], return_index=True, return_inverse=True)
    by_row = np.argsort(row_inv, kind="stable")  # each row's instances, in their order
    cuts = np.cumsum(np.bincount(row_inv, minlength=len(rows)))[:-1]
    times = np.split(inst_sum[by_row], cuts)
    kernels = np.split(inst_count[by_row], cuts)
    heads = ids[by_row][np.concatenate(([0], cuts))]
    return [
        (kernel_ops.row_keys[rows[r]], kernel_ops.instances[heads[r]], times[r].tolist(), int(kernels[r].sum()))
        for r in np.argsort(row_first, kind="stable").tolist()
    ]


def _roofline_row(
    cat: str,
    name: str,
    sig: str,
    inst0: OpInstance,
    times: list[float],
    nk: int,
    total: float,
    spec: GpuSpec | None,
) -> tuple[dict[str, Any], bool, str | None]:
    """One roofline row from its instances' kernel ``times`` (``nk`` kernels in all); whether its time is
    modelled, and what bounds it (None without a model or a spec)."""
    m = inst0.model
    tsum = sum(times)
    row: dict[str, Any] = {c: "" for c in ROOFLINE_COLUMNS}
    row.update(
        source_category=cat,
        op_name=name,
        param_signature=sig,
        operation_count=len(times),
        num_kernels=round(nk / len(times), 3),
        kernel_time_ms_sum=_fmt(tsum / 1000.0, 6),
        time_pct=_fmt(100.0 * tsum / total if total else 0.0, 3),
        kernel_time_us_mean=_fmt(tsum / len(times), 3),
        has_perf_model=bool(m is not None and not math.isnan(m.flops)),
        input_dims=json.dumps(_dec(inst0.dims_raw)),
        input_type=json.dumps(_dec(inst0.types_raw)),
    )
    if m is not None:
        row["params_json"] = json.dumps(m.params, default=str)
    if m is None or math.isnan(m.flops):
        return row, False, None
    flops, nbytes = m.flops, m.bytes
    row.update(
        gflops=_g(flops / 1e9),
        data_moved_mb=_g(nbytes / MIB),
        arithmetic_intensity_flops_per_byte=_fmt(flops / nbytes if nbytes else None, 4),
        achieved_tflops_mean=_fmt(float(np.mean([flops / (t * 1e6) for t in times if t > 0] or [0])), 4),
        achieved_tbps_mean=_fmt(float(np.mean([nbytes / (t * 1e6) for t in times if t > 0] or [0])), 4),
    )
    if spec is None:
        return row, True, None
    peak, key = spec.peak_tflops(m.kind, m.dtype)
    row["compute_spec"] = key
    t_mem = nbytes / (spec.hbm_bandwidth_tbps * 1e6)  # us
    t_cmp = flops / (peak * 1e6) if peak else math.nan
    roof = max(t_mem, t_cmp) if not math.isnan(t_cmp) else t_mem
    bound = "compute" if not math.isnan(t_cmp) and t_cmp >= t_mem else "memory"
    row.update(
        roofline_bound=bound,
        roofline_time_us=_fmt(roof, 4),
        pct_roofline_mean=_fmt(float(np.mean([100.0 * roof / t for t in times if t > 0] or [0])), 3),
    )
    return row, True, bound


def _window_timeline(iter_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the window's iteration rows (:func:`_iter_row`)."""
    n = len(iter_rows) or 1
    mean = lambda key: sum(float(r[key] or 0) for r in iter_rows) / n  # noqa: E731
    toks = [r["tokens"] for r in iter_rows if r["tokens"] != ""]
    return {
        "mean_step_time_us": round(mean("step_time_us"), 3),
        "mean_gpu_busy_us": round(mean("gpu_busy_us"), 3),
        "mean_gpu_idle_us": round(mean("gpu_idle_us"), 3),
        "mean_gpu_span_us": round(mean("gpu_span_us"), 3),
        "mean_tokens_per_step": round(sum(toks) / len(toks), 3) if toks else None,
        "tokens_per_s": round(sum(toks) / (sum(float(r["step_time_us"]) for r in iter_rows) * 1e-6), 1)
        if toks
        else None,
    }


def _most_common_op(name_inv: np.ndarray, inst_sel: np.ndarray, kernel_ops: KernelOps, n_names: int) -> list[str]:
    """Per kernel name (codes ``name_inv``), the op name most of its kernels went to ("" for none); a tie goes
    to the op met first."""
    out = [""] * n_names
    has = np.flatnonzero(inst_sel >= 0)
    if len(has) == 0:
        return out
    width = len(kernel_ops.op_names)
    pair = name_inv[has].astype(np.int64) * width + kernel_ops.inst_op[inst_sel[has]]
    uniq, first, count = np.unique(pair, return_index=True, return_counts=True)
    name = uniq // width
    order = np.lexsort((first, -count, name))
    head = np.ones(len(order), bool)
    head[1:] = name[order][1:] != name[order][:-1]
    for q in order[head].tolist():
        out[int(name[q])] = kernel_ops.op_names[int(uniq[q] % width)]
    return out
