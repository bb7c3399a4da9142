"""TraceLens's tables, with its column names and conventions, from the state the analyzer already built.

Written beside magpie's own stage tables (docs/inference-analysis.md, "TraceLens tables"):

* ``unified_perf_summary.csv``: one row per (op, Input Dims, Input type, Input Strides, Concrete Inputs)
  over the whole trace; a kernel's time goes to the OUTERMOST enclosing CPU op that TraceLens models
  (:mod:`tl_ops`), else to the op that launched it; a kernel launched outside any op becomes a
  ``<launch>-><kernel> (Synthetic Op)`` row. An op's kernel time is the busy time (union) of its kernels.
* ``ops_summary.csv`` / ``ops_summary_by_category.csv``: kernel time per op name / per category.
* ``ops_unique_args.csv``: the unified rows without the FLOPs/bytes columns, with kernel counts.
* ``gpu_timeline.csv``: computation / communication / memcpy / idle time of the GPU.
* ``collective_summary.csv``: NCCL/RCCL kernels per collective: count, time, bytes, bus bandwidth.
* ``kernel_summary.csv``, ``short_kernels_summary.csv``, ``short_kernel_histogram.csv``.

Differences from TraceLens that remain are listed in docs/inference-analysis.md.
"""

from __future__ import annotations

import csv
import functools
import itertools
import math
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis import tl_summaries as tls
from magpie_inference_analysis.annotations import StepInfo
from magpie_inference_analysis.models import OpModel, model_op
from magpie_inference_analysis.pseudo_ops import MOE_OPS, TopKIndex, is_moe_kernel, moe_parent, triton_moe_model
from magpie_inference_analysis.tl_models import tl_model
from magpie_inference_analysis.tl_ops import tracelens_category, tracelens_models

KT = "Kernel Time (µs)"
UNIFIED_COLUMNS = [
    "name", "op category", "Input Dims", "Input type", "Input Strides", "Concrete Inputs", "operation_count",
    "total_duration_us", "mean_duration_us", "std_duration_us", "GFLOPS", "Data Moved (MB)", "FLOPS/Byte",
    "Compute Spec", "TB/s_mean", "TB/s_std", "TFLOPS/s_mean", "TFLOPS/s_std", f"{KT}_mean", f"{KT}_std",
    f"{KT}_sum", "duration_us_median", "duration_us_min", "duration_us_max", "TB/s_median", "TB/s_min",
    "TB/s_max", "TFLOPS/s_median", "TFLOPS/s_min", "TFLOPS/s_max", f"{KT}_median", f"{KT}_min", f"{KT}_max",
    "kernel_details_summary", "trunc_kernel_details", "perf_params", "has_perf_model", "call_stack",
    "Percentage (%)", "Cumulative Percentage (%)",
]  # fmt: skip
SHORT_KERNEL_US = 10.0
MIB = 1024.0 * 1024.0
_COLLECTIVE_WORDS = ("nccl", "rccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter",
                     "reduce_scatter", "alltoall", "all_to_all", "cross_device_reduce", "sendrecv")  # fmt: skip


@dataclass(slots=True)
class TLOp:
    """One op instance as TraceLens sees it: the op (or a pseudo-op / synthetic launch) and its kernels."""

    name: str
    args: Any  # the op's args (Input Dims ... as recorded), None for a synthetic op
    cpu_dur: float
    stack: tuple[list[Any], tuple[int, ...], int]  # (op list, chain, the op's place): the call stack, made on use
    step: StepInfo | None
    kernels: list[int] = field(default_factory=list)
    model: OpModel | None = None
    category: str = "other"

    @property
    def chain_names(self) -> tuple[str, ...]:
        """The names of the op and the ops enclosing it, innermost first (the ``call_stack`` column)."""
        ops, chain, at = self.stack
        return tuple(ops[x].name for x in chain[at:])


Context = tuple[tuple[int, ...], list[Any], tuple[Any, ...], Any]
_SGLANG_SUFFIX = re.compile(r"^(sglang_profiler::.+?)_\d+$")


@functools.lru_cache(maxsize=4096)
def tl_name(name: str) -> str:
    """TraceLens's name of an op: SGLang's profiler ops lose their per-layer ``_<n>`` suffix."""
    m = _SGLANG_SUFFIX.match(name)
    return m.group(1) if m else name


def _parents(chains: Iterable[tuple[int, ...]]) -> set[int]:
    """The ops that enclose another launching op (TraceLens's non-leaf ops)."""
    return {j for chain in chains for j in chain[1:]}


def _kernel_context(st: Any, i: int, graph_map: dict[int, Any]) -> Context:
    """A kernel's chain of enclosing ops (innermost first), the op list it indexes, the instance key's base
    and the CPU duration its ops take (the replay call's for a graph replay; None: each op's own)."""
    call = st.launch[i]
    hit = graph_map.get(i)
    if hit is not None:
        g, ci, rid = hit
        return g.chains[ci], g.ops, ("cap", id(g), rid), call.dur if call is not None else 0.0
    if call is not None and not st.graph[i]:
        return st.chain_of_call.get(id(call), ()), st.cpu_ops, ("op",), None
    return (), st.cpu_ops, ("op",), None


@dataclass
class _Walk:
    """What :func:`collect_ops` looks up per kernel, computed once per trace (and per op name)."""

    st: Any
    graph_map: dict[int, Any]
    parents: dict[int, set[int]]
    moe_kernel: list[bool]  # per kernel name id: a kernel a MoE pseudo-op takes
    has_moe: dict[int, bool]  # per op list: whether any op in it is a fused MoE op
    modelled: dict[str, bool] = field(default_factory=dict)  # per op name: TraceLens models it

    def modelled_at(self, chain: tuple[int, ...], ops: list[Any]) -> int | None:
        """Where in ``chain`` the outermost op TraceLens models is (None: no such op)."""
        modelled = self.modelled
        for p in range(len(chain) - 1, -1, -1):
            name = ops[chain[p]].name
            m = modelled.get(name)
            if m is None:
                m = modelled[name] = tracelens_models(name)
            if m:
                return p
        return None

    def decide(self, chain: tuple[int, ...], ops: list[Any]) -> tuple[int | None, bool, int | None]:
        """The chain's op (TraceLens's choice), whether it is a non-leaf op launching directly, its MoE op."""
        p = self.modelled_at(chain, ops)
        if p is None:
            if not chain:
                return None, False, None
            j = chain[0]
            direct = j in self.parents.get(id(ops), ())
        else:
            j, direct = chain[p], False
        return j, direct, moe_parent(chain, ops) if self.has_moe.get(id(ops)) else None


def _walk(st: Any, graph_map: dict[int, Any]) -> _Walk:
    parents: dict[int, set[int]] = {id(st.cpu_ops): _parents(st.chain_of_call.values())}
    names = st.trace.cpu_op_names or {op.name for op in st.cpu_ops}
    has_moe = {id(st.cpu_ops): bool(MOE_OPS & set(names))}
    for g, _, _ in graph_map.values():
        if id(g.ops) not in parents:
            parents[id(g.ops)] = _parents(c for g2, _, _ in graph_map.values() if g2.ops is g.ops for c in g2.chains)
            has_moe[id(g.ops)] = any(op.name in MOE_OPS for op in g.ops)
    moe_kernel = [is_moe_kernel(n) for n in st.kernel_names.values]
    return _Walk(st, graph_map, parents, moe_kernel, has_moe)


def collect_ops(st: Any, its: list[Any], graph_map: dict[int, Any], include_unlinked: bool) -> list[TLOp]:
    """The op instances of the whole trace and their kernels (graph replays through their capture traces)."""
    out: dict[Any, TLOp] = {}
    moe: dict[Any, tuple[TLOp, list[Any]]] = {}
    walk = _walk(st, graph_map)
    decide, moe_kernel = walk.decide, walk.moe_kernel
    steps = [it.step for it in its]
    k_iter, k_name = st.k_iter.tolist(), st.k_name.tolist()
    launch, graph, chain_of_call, cpu_ops = st.launch, st.graph, st.chain_of_call, st.cpu_ops
    kernel_names = st.kernel_names.values
    no_stack: tuple[list[Any], tuple[int, ...], int] = ([], (), 0)
    synthetic: dict[tuple[str, int], str] = {}  # (launcher, kernel name id) -> the synthetic op's name
    op_key = ("op",)
    for i in range(len(k_name)):
        call = launch[i]
        step = steps[k_iter[i]] if k_iter[i] >= 0 else None
        if call is not None and not graph[i]:  # the common case, inline
            chain, ops, key_base, dur = chain_of_call.get(id(call), ()), cpu_ops, op_key, None
            j, direct, jm = decide(chain, ops) if chain else (None, False, None)
        elif graph[i] and i not in graph_map:  # a graph replay without a capture: no op
            chain, j, direct, jm = (), None, False, None
        else:
            chain, ops, key_base, dur = _kernel_context(st, i, graph_map)
            j, direct, jm = decide(chain, ops)
        if jm is not None and moe_kernel[k_name[i]]:
            key: Any = (*key_base, "moe", jm)
            if key not in moe:
                moe[key] = (TLOp(ops[jm].name, ops[jm], 0.0, (ops, chain, chain.index(jm)), step), ops)
            moe[key][0].kernels.append(i)
            continue
        if j is None:
            if call is None and not include_unlinked:
                continue
            launcher = call.name if call is not None else "(no launch record)"
            name = synthetic.get((launcher, k_name[i]))
            if name is None:
                name = synthetic[(launcher, k_name[i])] = f"{launcher}->{kernel_names[k_name[i]]} (Synthetic Op)"
            out[("syn", i)] = TLOp(name, None, call.dur if call else 0.0, no_stack, step, [i])
            continue
        key = (*key_base, j, i) if direct else (*key_base, j)
        op = out.get(key)  # type: ignore[assignment]
        if op is None:
            e = ops[j]
            name = f"{e.name}->{kernel_names[k_name[i]]} (Synthetic Op)" if direct else tl_name(e.name)
            op = out[key] = TLOp(name, e.args, e.dur if dur is None else dur, (ops, chain, chain.index(j)), step)
        op.kernels.append(i)
    return [*out.values(), *_split_moe(st, moe)]


def _split_moe(st: Any, moe: dict[Any, tuple[TLOp, list[Any]]]) -> list[TLOp]:
    """Each fused MoE op's GEMM kernels as pseudo-ops (:mod:`pseudo_ops`): up, down, finalize."""
    out: list[TLOp] = []
    topk_index: dict[int, TopKIndex] = {}
    for holder, ops in moe.values():
        ev = holder.args  # the MoE op event itself
        idx = topk_index.get(id(ops)) or topk_index.setdefault(id(ops), TopKIndex(ops))
        topk = idx.topk_in(ev)
        gemms = 0
        for i in sorted(holder.kernels, key=lambda x: st.k_ts[x]):
            name = st.kernels[i].name
            kind = "finalize_matmul_scatter" if "matmul_scatter" in name.lower() else "up" if gemms == 0 else "down"
            gemms += kind != "finalize_matmul_scatter"
            op = TLOp(f"pseudo_op::moe_triton_unfused_{kind}", ev.args, 0.0, holder.stack, holder.step, [i])
            op.model = triton_moe_model(kind, ev, topk, name)
            op.category = "MoE_unfused" if op.model is not None else "other"
            out.append(op)
    return out


def busy_time(ts: list[float], dur: list[float], kernels: list[int]) -> float:
    """The union of the kernels' [start, end) intervals, in us (TraceLens's per-op kernel time)."""
    if len(kernels) == 1:
        return dur[kernels[0]]
    spans = sorted((ts[i], ts[i] + dur[i]) for i in kernels)
    busy, (run_s, run_e) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > run_e:
            busy += run_e - run_s
            run_s, run_e = a, b
        elif b > run_e:
            run_e = b
    return busy + run_e - run_s


def _dec(raw: bytes) -> list[Any]:
    return ev_mod.decode_list(raw)


def _tup(x: Any) -> Any:
    return tuple(_tup(y) for y in x) if isinstance(x, list) else x


def fmt_args(raw: bytes | None) -> str:
    """A recorded argument list as TraceLens prints it (Python tuples)."""
    return repr(_tup(_dec(raw))) if raw else ""


def _model(op: TLOp) -> OpModel | None:
    """TraceLens's model of the op: none where TraceLens has none; its convention where it differs from magpie's."""
    if op.model is not None or op.args is None or not tracelens_models(op.name):
        return op.model
    a = op.args
    dims, types, concrete = _dec(a.input_dims), _dec(a.input_type), _dec(a.concrete)
    try:
        tl = tl_model(op.name, dims, types, concrete)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):  # inputs not as the convention expects
        return None
    return model_op(op.name, dims, types, concrete, op.step) if tl is True else tl  # type: ignore[return-value]


def _stats(xs: list[float]) -> dict[str, float]:
    """mean, std (n - 1, pandas' as TraceLens), median, min, max of the non-NaN values, in plain Python: the lists
    are short, numpy's per-call cost is larger than the work (and its first median costs a 14 ms lazy import)."""
    # C-level maps instead of generator expressions (graph replays give lists of 10^4-10^5): the same float
    # operations in the same order, so the same results
    xs = sorted(x for x in xs if x == x) if any(map(math.isnan, xs)) else sorted(xs)
    n = len(xs)
    if not n:
        return dict.fromkeys(("mean", "std", "median", "min", "max"), math.nan)
    mean = sum(xs) / n
    sq = map(operator.pow, map(operator.sub, xs, itertools.repeat(mean)), itertools.repeat(2))
    std = math.sqrt(sum(sq) / (n - 1)) if n > 1 else math.nan
    median = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return {"mean": mean, "std": std, "median": median, "min": xs[0], "max": xs[-1]}


def _kernel_details(names: list[str], k_name: np.ndarray, dur: np.ndarray, kernels: list[int]) -> list[dict[str, Any]]:
    """Per kernel name (in order of first appearance in ``kernels``): count, total, mean, median, std, min, max
    of its kernels' durations (each name's durations in ``kernels`` order, so sums add in that order)."""
    idx = np.array(kernels, np.int64)
    ids = k_name[idx]
    uniq, first = np.unique(ids, return_index=True)
    order = np.argsort(ids, kind="stable")  # each name's kernels, in their order in ``kernels``
    counts = np.bincount(np.searchsorted(uniq, ids), minlength=len(uniq))
    per_name = np.split(dur[idx[order]], np.cumsum(counts)[:-1])
    out = []
    for r in np.argsort(first, kind="stable").tolist():
        ds = per_name[r].tolist()
        s = _stats(ds)
        out.append({
            "name": names[int(uniq[r])], "count": len(ds), "total_duration_us": sum(ds), "mean_duration_us": s["mean"],
            "median_duration_us": s["median"],
            "std_dev_duration_us": s["std"] * math.sqrt((len(ds) - 1) / len(ds)) if len(ds) > 1 else 0.0,
            "min_duration_us": s["min"], "max_duration_us": s["max"],
        })  # fmt: skip
    return out


def unified_rows(st: Any, ops: list[TLOp]) -> list[dict[str, Any]]:
    """The rows of ``unified_perf_summary.csv``, by kernel time, with percentages."""
    groups: dict[Any, tuple[list[TLOp], list[float]]] = {}  # per row: its ops and their kernel (busy) times
    ts, dur = st.k_ts.tolist(), st.k_dur.tolist()
    for op in ops:
        a, ks = op.args, op.kernels
        key = (op.name, a.input_dims, a.input_type, a.strides, a.concrete) if a is not None else op.name
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([], [])
        group[0].append(op)
        group[1].append(dur[ks[0]] if len(ks) == 1 else busy_time(ts, dur, ks))
    cols = (st.kernel_names.values, st.k_name, st.k_dur)
    rows = []
    for members, times in groups.values():
        row = _unified_row(cols, members, times)
        rows.append(row)
        cat = row["op category"]
        for op in members:
            op.category = cat
    rows.sort(key=lambda r: -r[f"{KT}_sum"])
    total = sum(r[f"{KT}_sum"] for r in rows)
    cum = 0.0
    for r in rows:
        pct = 100.0 * r[f"{KT}_sum"] / total if total else 0.0
        cum += pct
        r["Percentage (%)"], r["Cumulative Percentage (%)"] = pct, cum
    return rows


_KERNELS, _CPU_DUR = operator.attrgetter("kernels"), operator.attrgetter("cpu_dur")


def _unified_row(cols: tuple[list[str], np.ndarray, np.ndarray], ops: list[TLOp], times: list[float]) -> dict[str, Any]:
    op0 = ops[0]
    durs = list(map(_CPU_DUR, ops))
    model = _model(op0)
    modelled = model is not None and not math.isnan(model.flops)
    a = op0.args
    kernels = list(itertools.chain.from_iterable(map(_KERNELS, ops)))
    details = _kernel_details(*cols, kernels)
    row: dict[str, Any] = dict.fromkeys(UNIFIED_COLUMNS, "")
    row.update({
        "name": op0.name, "op category": tracelens_category(op0.name, details[0]["name"] if details else ""),
        "Input Dims": fmt_args(a.input_dims) if a else "", "Input type": fmt_args(a.input_type) if a else "",
        "Input Strides": fmt_args(a.strides) if a else "", "Concrete Inputs": fmt_args(a.concrete) if a else "",
        "operation_count": len(ops), "total_duration_us": sum(durs), "has_perf_model": modelled,
        "kernel_details_summary": repr(details),
        "call_stack": repr(list(op0.chain_names)), f"{KT}_sum": sum(times),
        "_kernels": len(kernels),
    })  # fmt: skip
    row["trunc_kernel_details"] = repr(
        [{"name": d["name"][:64], "mean_duration_us": round(d["mean_duration_us"], 2)} for d in details]
    )
    for k, v in _stats(durs).items():
        row["mean_duration_us" if k == "mean" else "std_duration_us" if k == "std" else f"duration_us_{k}"] = v
    for k, v in _stats(times).items():
        row[f"{KT}_{k}"] = v
    if model is not None:
        row["perf_params"] = repr(model.params)
    if modelled:
        _perf_columns(row, model, times)  # type: ignore[arg-type]
    return row


def _perf_columns(row: dict[str, Any], m: OpModel, times: list[float]) -> None:
    row["GFLOPS"] = m.flops / 1e9
    row["Data Moved (MB)"] = m.bytes / MIB if not math.isnan(m.bytes) else math.nan
    row["FLOPS/Byte"] = m.flops / m.bytes if m.bytes else math.nan
    row["Compute Spec"] = f"{m.kind}_{m.dtype}" if m.dtype else ""
    tf = [m.flops / 1e12 / (t / 1e6) for t in times if t > 0]
    tb = [m.bytes / 1e12 / (t / 1e6) for t in times if t > 0]
    for label, xs in (("TFLOPS/s", tf), ("TB/s", tb)):
        for k, v in _stats(xs).items():
            row[f"{label}_{k}"] = v


def _fmt_cell(v: Any) -> Any:
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt_cell(r.get(k, "")) for k in columns})
    return path


def is_collective(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _COLLECTIVE_WORDS)


def tables_wanted(options: dict[str, Any]) -> bool:
    """The ``tracelens_tables`` option (default true; false, "false", "0", "no", "off": skip the tables)."""
    v = options.get("tracelens_tables", True)
    return str(v).strip().lower() not in ("false", "0", "no", "off", "none", "")


def write_tables(
    st: Any, its: list[Any], graph_map: dict[int, Any], out_dir: Path, prefix: str, options: dict[str, Any]
) -> dict[str, str]:
    """Every TraceLens table of one trace under ``out_dir`` (names prefixed ``prefix``); their paths."""
    ops = collect_ops(st, its, graph_map, bool(options.get("include_unlinked_kernels")))
    unified = unified_rows(st, ops)
    short, hist = tls.short_kernels(st, ops, fmt_args)
    tables: dict[str, tuple[list[str], list[dict[str, Any]]]] = {
        "unified_perf_summary": (UNIFIED_COLUMNS, unified),
        "ops_summary": (tls.OPS_SUMMARY_COLUMNS, tls.ops_summary(unified)),
        "ops_summary_by_category": (tls.BY_CATEGORY_COLUMNS, tls.ops_by_category(unified)),
        "ops_unique_args": (tls.UNIQUE_ARGS_COLUMNS, tls.unique_args(unified)),
        "gpu_timeline": (["type", "time ms", "percent"], tls.gpu_timeline(st)),
        "kernel_summary": (tls.KERNEL_SUMMARY_COLUMNS, tls.kernel_summary(st, ops)),
        "short_kernels_summary": (tls.SHORT_COLUMNS, short),
        "short_kernel_histogram": (["bin_start", "bin_end", "count"], hist),
    }
    world = options.get("world_size")
    coll = tls.collectives(st, ops, int(world) if world else None)
    if coll:
        tables["collective_summary"] = (tls.COLLECTIVE_COLUMNS, coll)
    return {name: str(write_csv(out_dir / f"{prefix}{name}.csv", cols, rows)) for name, (cols, rows) in tables.items()}
