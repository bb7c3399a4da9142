"""TraceLens's summary tables beside ``unified_perf_summary.csv`` (see :mod:`tracelens_tables`).

* ``ops_summary.csv`` / ``ops_summary_by_category.csv``: kernel time per op name / per op category;
* ``ops_unique_args.csv``: per (op, arguments) row: kernels per call and kernel-time statistics;
* ``gpu_timeline.csv``: computation, exposed communication, exposed memcpy, busy, idle and total time;
* ``kernel_summary.csv``: per (op category, op, kernel name);
* ``short_kernels_summary.csv`` / ``short_kernel_histogram.csv``: kernels under 10 us;
* ``collective_summary.csv`` (only with NCCL/RCCL kernels): per collective and kernel name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.tl_models import bpe

KT = "Kernel Time (µs)"
SHORT_US = 10.0
COMM_WORDS = ("nccl", "rccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter",
              "reduce_scatter", "alltoall", "all_to_all", "cross_device_reduce", "sendrecv")  # fmt: skip
#: bus-bandwidth factor per collective for n ranks (NCCL's tests convention)
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}  # fmt: skip


def is_comm(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in COMM_WORDS)


def collective_kind(name: str) -> str:
    low = name.lower().replace("_", "")
    for kind in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"):
        if kind in low:
            return {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
                    "alltoall": "all_to_all"}.get(kind, kind)  # fmt: skip
    return "other"


def with_percentages(rows: list[dict[str, Any]], time_key: str) -> list[dict[str, Any]]:
    rows.sort(key=lambda r: -r[time_key])
    total = sum(r[time_key] for r in rows)
    cum = 0.0
    for r in rows:
        r["Percentage (%)"] = 100.0 * r[time_key] / total if total else 0.0
        cum += r["Percentage (%)"]
        r["Cumulative Percentage (%)"] = cum
    return rows


OPS_SUMMARY_COLUMNS = ["name", "total_direct_kernel_time_sum", "total_direct_kernel_time_ms", "Count", "Categories",
                       "Percentage (%)", "Cumulative Percentage (%)"]  # fmt: skip
BY_CATEGORY_COLUMNS = ["op category", "Count", "total_direct_kernel_time_ms", "Percentage (%)",
                       "Cumulative Percentage (%)"]  # fmt: skip


def ops_summary(unified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by: dict[str, dict[str, Any]] = {}
    for r in unified:
        s = by.setdefault(r["name"], {"name": r["name"], "total_direct_kernel_time_sum": 0.0, "Count": 0, "cats": []})
        s["total_direct_kernel_time_sum"] += r[f"{KT}_sum"]
        s["Count"] += r["operation_count"]
        if r["op category"] not in s["cats"]:
            s["cats"].append(r["op category"])
    for s in by.values():
        s["total_direct_kernel_time_ms"] = s["total_direct_kernel_time_sum"] / 1000.0
        s["Categories"] = repr(s.pop("cats"))
    return with_percentages(list(by.values()), "total_direct_kernel_time_sum")


def ops_by_category(unified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by: dict[str, dict[str, Any]] = {}
    for r in unified:
        s = by.setdefault(r["op category"], {"op category": r["op category"], "Count": 0, "t": 0.0})
        s["Count"] += r["operation_count"]
        s["t"] += r[f"{KT}_sum"]
    for s in by.values():
        s["total_direct_kernel_time_ms"] = s.pop("t") / 1000.0
    return with_percentages(list(by.values()), "total_direct_kernel_time_ms")


UNIQUE_ARGS_COLUMNS = [
    "name", "op category", "Input Dims", "Input type", "Input Strides", "Concrete Inputs", "num_kernels",
    "operation_count", "total_direct_kernel_time_mean", "total_direct_kernel_time_median",
    "total_direct_kernel_time_std", "total_direct_kernel_time_min", "total_direct_kernel_time_max",
    "total_direct_kernel_time_sum", "call_stack", "kernel_details_summary", "Percentage (%)",
    "Cumulative Percentage (%)",
]  # fmt: skip


def unique_args(unified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in unified:
        row = {k: r[k] for k in [*UNIQUE_ARGS_COLUMNS[:6], "operation_count", "call_stack", "kernel_details_summary"]}
        row["num_kernels"] = r["_kernels"] / r["operation_count"]
        for stat in ("mean", "median", "std", "min", "max", "sum"):
            row[f"total_direct_kernel_time_{stat}"] = r[f"{KT}_{stat}"]
        out.append(row)
    return with_percentages(out, "total_direct_kernel_time_sum")


def _measure(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of the intervals."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return float(np.sum(e[last] - s[first]))


def gpu_timeline(st: Any) -> list[dict[str, Any]]:
    """TraceLens's GPU time split over the whole trace, in ms and % of the GPU span."""
    if not len(st.kernels) or st.cpu_mode:
        return []
    cats = [k.cat for k in st.kernels]
    names = st.kernel_names.values
    comm_name = np.array([is_comm(n) for n in names], bool)
    memcpy = np.array([c == "gpu_memcpy" for c in cats], bool)
    comm = comm_name[st.k_name] & ~memcpy
    comp = ~memcpy & ~comm
    s, e = st.k_ts, st.k_ts + st.k_dur
    t_comp = _measure(s[comp], e[comp])
    t_comp_comm = _measure(s[comp | comm], e[comp | comm])
    busy = _measure(s, e)
    total = float(e.max() - s.min())
    values = {
        "computation_time": t_comp, "exposed_comm_time": t_comp_comm - t_comp,
        "exposed_memcpy_time": busy - t_comp_comm, "busy_time": busy, "idle_time": total - busy,
        "total_time": total, "total_comm_time": _measure(s[comm], e[comm]),
        "total_memcpy_time": _measure(s[memcpy], e[memcpy]),
    }  # fmt: skip
    return [
        {"type": k, "time ms": v / 1000.0, "percent": 100.0 * v / total if total else 0.0} for k, v in values.items()
    ]


KERNEL_SUMMARY_COLUMNS = ["Parent op category", "Parent cpu_op", "Kernel name", "Kernel duration (µs)_sum",
                          "Kernel duration (µs)_count", "Kernel duration (µs)_mean", "Kernel duration (µs)_min",
                          "Kernel duration (µs)_max", "Percent of kernels time (%)"]  # fmt: skip
SHORT_COLUMNS = ["Parent cpu_op", "Input dims", "Input strides", "Concrete Inputs", "Kernel name",
                 "Short Kernel duration (µs) sum", "Short Kernel count", "Short Kernel duration (µs) mean",
                 "Short Kernel duration (µs) percent of total time"]  # fmt: skip


def kernel_summary(st: Any, ops: list[Any]) -> list[dict[str, Any]]:
    names, k_name, dur = st.kernel_names.values, st.k_name.tolist(), st.k_dur.tolist()
    by: dict[tuple[str, str, str], list[float]] = {}
    for op in ops:
        cat = op.category
        for i in op.kernels:
            by.setdefault((cat, op.name, names[k_name[i]]), []).append(dur[i])
    total = sum(sum(v) for v in by.values())
    rows = []
    for (cat, op, kn), ds in by.items():
        rows.append({
            "Parent op category": cat, "Parent cpu_op": op, "Kernel name": kn, "Kernel duration (µs)_sum": sum(ds),
            "Kernel duration (µs)_count": len(ds), "Kernel duration (µs)_mean": sum(ds) / len(ds),
            "Kernel duration (µs)_min": min(ds), "Kernel duration (µs)_max": max(ds),
            "Percent of kernels time (%)": 100.0 * sum(ds) / total if total else 0.0,
        })  # fmt: skip
    rows.sort(key=lambda r: -r["Kernel duration (µs)_sum"])
    return rows


def short_kernels(st: Any, ops: list[Any], fmt_args: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Kernels under 10 us by (op, arguments, kernel name), and their duration histogram (100 bins)."""
    names, k_name, dur = st.kernel_names.values, st.k_name.tolist(), st.k_dur.tolist()
    total = float(st.k_dur.sum()) or 1.0
    by: dict[tuple[Any, ...], list[float]] = {}
    for op in ops:
        a = op.args
        key_args = (a.input_dims, a.strides, a.concrete) if a is not None else (b"", b"", b"")
        for i in op.kernels:
            if dur[i] < SHORT_US:
                by.setdefault((op.name, *key_args, names[k_name[i]]), []).append(dur[i])
    rows = []
    for (op, dims, strides, concrete, kn), ds in by.items():
        rows.append({
            "Parent cpu_op": op, "Input dims": fmt_args(dims), "Input strides": fmt_args(strides),
            "Concrete Inputs": fmt_args(concrete), "Kernel name": kn, "Short Kernel duration (µs) sum": sum(ds),
            "Short Kernel count": len(ds), "Short Kernel duration (µs) mean": sum(ds) / len(ds),
            "Short Kernel duration (µs) percent of total time": 100.0 * sum(ds) / total,
        })  # fmt: skip
    rows.sort(key=lambda r: -r["Short Kernel duration (µs) sum"])
    short = st.k_dur[st.k_dur < SHORT_US]
    hist: list[dict[str, Any]] = []
    if len(short):
        counts, edges = np.histogram(short, bins=100)
        hist = [{"bin_start": float(a), "bin_end": float(b), "count": int(c)}
                for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True) if c]  # fmt: skip
    return rows, hist


COLLECTIVE_COLUMNS = ["collective", "kernel name", "op", "count", "total_time_us", "mean_time_us", "bytes_per_call",
                      "algbw_GBps", "busbw_GBps", "world_size"]  # fmt: skip


def _op_bytes(args: Any) -> float:
    """The bytes a collective moves per call: its first tensor argument (the buffer), at its dtype."""
    try:
        return _buffer_bytes(args)
    except (TypeError, ValueError, OverflowError):  # shapes not as recorded by PyTorch
        return math.nan


def _buffer_bytes(args: Any) -> float:
    if args is None:
        return math.nan
    dims, types = ev_mod.decode_list(args.input_dims), ev_mod.decode_list(args.input_type)
    for d, t in zip(dims, types, strict=False):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d) and bpe(t):
            return float(math.prod(d) * bpe(t))  # type: ignore[operator]
        if isinstance(d, list) and d and isinstance(d[0], list):  # a TensorList: every tensor
            total = sum(math.prod(x) for x in d if isinstance(x, list))
            return float(total * (bpe(t) or math.nan)) if bpe(t) else math.nan
    return math.nan


def collectives(st: Any, ops: list[Any], world_size: int | None) -> list[dict[str, Any]]:
    """Per (collective, kernel name, op): count, time, bytes from the op's shapes, algorithm / bus bandwidth."""
    names, k_name, dur = st.kernel_names.values, st.k_name.tolist(), st.k_dur.tolist()
    comm = [is_comm(n) for n in names]
    if not any(comm):
        return []
    by: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for op in ops:
        mine = [i for i in op.kernels if comm[k_name[i]]]
        if not mine:
            continue
        nbytes = _op_bytes(op.args)
        for i in mine:
            kn = names[k_name[i]]
            by.setdefault((collective_kind(kn), kn, op.name), []).append((dur[i], nbytes))
    rows = []
    for (kind, kn, opname), xs in by.items():
        t = sum(d for d, _ in xs)
        b = xs[0][1]
        alg = [bb / (d * 1e3) for d, bb in xs if d > 0 and not math.isnan(bb)]  # GB/s
        algbw = sum(alg) / len(alg) if alg else math.nan
        factor = BUS_FACTOR.get(kind)
        bus = algbw * factor(world_size) if factor and world_size and world_size > 1 else math.nan
        rows.append({"collective": kind, "kernel name": kn, "op": opname, "count": len(xs), "total_time_us": t,
                     "mean_time_us": t / len(xs), "bytes_per_call": b, "algbw_GBps": algbw, "busbw_GBps": bus,
                     "world_size": world_size or ""})  # fmt: skip
    rows.sort(key=lambda r: -r["total_time_us"])
    return rows
