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
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from operator import attrgetter
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from magpie_trace.columns import Interner, collector_paused
from magpie_trace.validity import skipped_messages

from magpie_core.interfaces import TraceAnalyzer
from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.annotations import DECODE, MIXED, PREFILL, StepInfo, parse_step
from magpie_inference_analysis.graphs import CapturedGraph, align, is_graph_launch, load_captures
from magpie_inference_analysis.models import SPECIFIC, OpModel, is_attention_name, model_op
from magpie_inference_analysis.op_content import OpContents
from magpie_inference_analysis.pseudo_ops import TopKIndex, is_moe_kernel, moe_parent, triton_moe_model
from magpie_inference_analysis.specs import GpuSpec, SpecError, detect_spec, load_spec

UNKNOWN = "unclassified"
STAGE_ORDER = (PREFILL, DECODE, MIXED, UNKNOWN)
STAGES_FOR = {
    "all": STAGE_ORDER,
    "prefilldecode": (MIXED,),
    "decode": (DECODE,),
    "prefill": (PREFILL,),
}
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
_TS, _DUR, _NAME, _ARGS = attrgetter("ts"), attrgetter("dur"), attrgetter("name"), attrgetter("args")
_CORR = attrgetter("correlation")
_DIGITS = re.compile(r"\d+")
_DECODE_WORDS = ("decode", "paged_attention", "splitkv", "split_kv", "fwd_kvcache", "flash_decoding", "mla_decode")
_PREFILL_WORDS = ("prefill", "varlen", "context_attention", "fmha_fwd", "flash_fwd", "extend")


class AnalysisError(ValueError):
    """Bad options for the analyzer (unknown stage, bad spec...)."""


@dataclass
class Iteration:
    index: int
    ts: float
    end: float
    annotation: str
    step: StepInfo | None
    phase: str = UNKNOWN
    phase_source: str = "annotation"
    kernels: list[int] = field(default_factory=list)  # indices into the kernel list
    in_window: bool = False


@dataclass(slots=True)
class OpInstance:
    key: Any
    name: str
    dims_raw: bytes  # Input Dims / Input type as recorded (decoded once per roofline row)
    types_raw: bytes
    model: OpModel | None
    index: int = -1  # position among the trace's instances


ORIGIN_LAUNCH, ORIGIN_GRAPH, ORIGIN_CAPTURE = 0, 1, 2
ORIGINS = ("launch", "graph", "graph+capture")  # how a kernel was tied to its op


@dataclass
class KernelOps:
    """The op instance (index into ``instances``, -1: none) and origin code of every kernel; per instance, its
    op name (index into ``op_names``) and roofline row (index into ``row_keys``: category, op, signature),
    set by :func:`_instance_rows` so that each stage aggregates with numpy, not per instance."""

    instances: list[OpInstance]
    k_inst: np.ndarray
    k_origin: np.ndarray
    inst_op: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_names: list[str] = field(default_factory=list)
    inst_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    row_keys: list[tuple[str, str, str]] = field(default_factory=list)


def _dec(raw: Any) -> list[Any]:
    return ev_mod.decode_list(raw)


def _kernel_categories(names: list[str]) -> dict[str, str]:
    try:
        from magpie_core.kernel_names import parse_many

        return {n: p.category for n, p in parse_many(names).items()}
    except Exception:  # no parser plugins installed: categories stay unknown
        return dict.fromkeys(names, "other")


_MATRIX_OK = {"gemm", "other", "attention", "moe"}


def _compatible(model: OpModel, kernel_cat: str) -> bool:
    if model.category in ("GEMM", "MoE", "MoE_fused", "MoE_unfused", "CONV_fwd"):
        return kernel_cat in _MATRIX_OK
    if model.category in ("SDPA_fwd", "InferenceAttention_fwd"):
        return kernel_cat in {"attention", "other", "gemm", "reduce", "sampling"}
    return True


def _fmt(x: float | None, nd: int = 4) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return ""
    return f"{x:.{nd}f}"


def _g(x: float) -> str:
    """Nine significant digits: small ops keep their precision."""
    return f"{x:.9g}"


class TraceState:
    """Everything derived from one trace file that the stages share."""

    def __init__(self, trace: ev_mod.Trace, options: dict[str, Any]) -> None:
        self.trace = trace
        self.options = options
        self.notes: list[str] = []
        kernels = list(trace.gpu)
        runtime = dict(zip(map(_CORR, map(_ARGS, trace.runtime)), trace.runtime, strict=True))
        cpu_ops = trace.cpu_ops
        anns = trace.annotations
        t0 = trace.t0
        self.t0 = 0.0 if t0 is math.inf else t0
        self.cpu_mode = not kernels and bool(cpu_ops)
        if self.cpu_mode:
            # a CPU-only trace: the leaf CPU ops are where the time goes; they stand in for kernels
            kernels = _leaf_ops(cpu_ops)
            self.notes.append(f"no GPU activity in the trace: {len(kernels)} leaf CPU ops stand in for kernels")
        kernels.sort(key=_TS)
        n = len(kernels)
        self.kernels = kernels
        self.cpu_ops = cpu_ops
        self.annotations = anns
        # launch call per kernel (in CPU mode the op itself: its enclosing ops include itself)
        if self.cpu_mode:
            self.launch: list[ev_mod.Ev | None] = list(kernels)
        else:
            get = runtime.get  # no correlation id: None, which is no key
            self.launch = [get(k.args.correlation) if k.args is not None else None for k in kernels]
        # per-kernel columns the stages aggregate
        self.k_ts = np.fromiter(map(_TS, kernels), np.float64, n)
        self.k_dur = np.fromiter(map(_DUR, kernels), np.float64, n)
        self.kernel_names = Interner()
        self.k_name = np.fromiter(map(self.kernel_names.__getitem__, map(_NAME, kernels)), np.int64, n)
        self.k_launched = np.fromiter((c is not None for c in self.launch), np.bool_, n)
        calls = {id(c): c for c in self.launch if c is not None}
        call_list = list(calls.values())
        from magpie_inference_analysis.graphs import op_chains

        chains = op_chains(cpu_ops, call_list, trace.cpu_columns if not self.cpu_mode else None)
        self.chain_of_call = dict(zip(map(id, call_list), chains, strict=True))
        graph_calls = {name for name in set(map(_NAME, call_list)) if is_graph_launch(name)}
        self.graph = [c is not None and c.name in graph_calls for c in self.launch]
        self.kcat = _kernel_categories(sorted(self.kernel_names.values))
        #: iteration index per kernel (-1: in none), set by :meth:`iterations`
        self.k_iter = np.full(n, -1, np.int64)

    # -- iterations --------------------------------------------------------------------------
    def iterations(self) -> list[Iteration]:
        steps = []
        for a in self.annotations:
            info = parse_step(a.name)
            if info is not None:
                steps.append((a, info))
        its: list[Iteration] = []
        if steps:
            steps.sort(key=lambda p: (p[0].ts, -p[0].dur))
            for a, info in steps:
                end = a.ts + a.dur  # type: ignore[operator]
                last = its[-1] if its else None
                if last is not None and a.ts <= last.end and end <= last.end + 1e-3:
                    # nested step annotations (an engine's own inside a detailed one): keep the richer
                    if info.detailed and not (last.step and last.step.detailed):
                        last.step, last.annotation = info, a.name
                    continue
                its.append(Iteration(len(its), a.ts, end, a.name, info, info.phase, "annotation"))  # type: ignore[arg-type]
        else:
            its = self._inferred_iterations()
        starts = np.array([it.ts for it in its], dtype=np.float64)
        ends = np.array([it.end for it in its], dtype=np.float64)
        # a kernel belongs to the iteration its launch call (or, without one, the kernel) starts in
        t = self.k_ts.copy()
        launched = np.flatnonzero(self.k_launched)
        t[launched] = np.fromiter((self.launch[i].ts for i in launched.tolist()), np.float64, len(launched))  # type: ignore[union-attr]
        j = np.searchsorted(starts, t, side="right") - 1
        inside = (j >= 0) & (t <= ends[np.maximum(j, 0)]) if len(its) else np.zeros(len(t), bool)
        self.k_iter = np.where(inside, j, -1)
        members = np.flatnonzero(inside)
        order = members[np.argsort(j[members], kind="stable")]
        counts = np.bincount(j[members], minlength=len(its)) if len(its) else np.zeros(0, np.int64)
        if its:
            for it, idx in zip(its, np.split(order, np.cumsum(counts)[:-1]), strict=True):
                it.kernels = idx.tolist()
        if not steps:
            for it in its:
                it.phase, it.phase_source = self._infer_phase(it)
        return its

    def _inferred_iterations(self) -> list[Iteration]:
        groups: dict[str, list[ev_mod.Ev]] = {}
        for a in self.annotations:
            groups.setdefault(_DIGITS.sub("#", a.name), []).append(a)
        best = None
        # launch times of a sample of kernels: which repeating annotation holds the GPU work?
        sample = np.array([(self.launch[i] or k).ts for i, k in enumerate(self.kernels[::97])])
        for key, items in groups.items():
            if len(items) < 2 and not key.startswith("ProfilerStep"):
                continue
            lo = np.sort(np.array([x.ts for x in items]))
            hi = np.array([x.ts + x.dur for x in sorted(items, key=lambda e: e.ts)])  # type: ignore[arg-type,return-value,operator]
            j = np.searchsorted(lo, sample, side="right") - 1
            cover = int(np.count_nonzero((j >= 0) & (sample <= hi[np.maximum(j, 0)])))
            if best is None or (cover, len(items)) > (best[2], len(best[1])):
                best = (key, items, cover)
        if best is not None and best[2] > 0:
            items = sorted(best[1], key=lambda e: e.ts)  # type: ignore[arg-type,return-value]
            self.notes.append(f"iterations inferred from the repeating annotation {best[0]!r} ({len(items)} ranges)")
            return [Iteration(i, a.ts, a.ts + a.dur, a.name, None, UNKNOWN, "inferred") for i, a in enumerate(items)]  # type: ignore[arg-type,operator]
        its = self._top_level_pattern()
        if its:
            return its
        graph_calls = sorted(
            {id(c): c for c, g in zip(self.launch, self.graph, strict=True) if g and c is not None}.values(),
            key=lambda c: c.ts,  # type: ignore[arg-type,return-value]
        )
        if graph_calls:
            self.notes.append(f"iterations inferred from graph launches ({len(graph_calls)})")
            return [
                Iteration(i, c.ts, c.ts + c.dur, c.name, None, UNKNOWN, "inferred")  # type: ignore[arg-type,operator]
                for i, c in enumerate(graph_calls)
            ]
        self.notes.append("no step annotation, repeating annotation or graph launch: the whole trace is one iteration")
        lo = min((k.ts for k in self.kernels), default=0.0)
        hi = max((k.ts + k.dur for k in self.kernels), default=0.0)  # type: ignore[operator]
        first_launch = min((c.ts for c in self.launch if c is not None), default=lo)
        return [Iteration(0, min(lo, first_launch), hi, "(whole trace)", None, UNKNOWN, "inferred")]  # type: ignore[type-var]

    def _top_level_pattern(self) -> list[Iteration]:
        """Iterations from a repeating top-level op: each recurrence of the first top-level op starts one."""
        by_tid: dict[Any, list[ev_mod.Ev]] = {}
        for op in self.cpu_ops:
            by_tid.setdefault(op.tid, []).append(op)
        if not by_tid:
            return []
        ops = sorted(max(by_tid.values(), key=len), key=lambda e: (e.ts, -e.dur))  # type: ignore[arg-type,return-value,operator]
        tops: list[ev_mod.Ev] = []
        end = -math.inf
        for op in ops:
            if op.ts >= end:  # type: ignore[operator]
                tops.append(op)
                end = op.ts + op.dur  # type: ignore[operator]
        if len(tops) < 4:
            return []
        first = tops[0].name
        starts = [op for op in tops if op.name == first]
        if len(starts) < 2 or len(starts) > len(tops) // 2:
            return []
        bounds = [op.ts for op in starts] + [tops[-1].ts + tops[-1].dur]  # type: ignore[operator]
        self.notes.append(f"iterations inferred from the repeating top-level op {first!r} ({len(starts)} occurrences)")
        return [
            Iteration(i, a, b, f"(from top-level {first})", None, UNKNOWN, "inferred")  # type: ignore[arg-type]
            for i, (a, b) in enumerate(pairwise(bounds))
        ]

    def _infer_phase(self, it: Iteration) -> tuple[str, str]:
        decode = prefill = 0
        attention = self._attention_op_names
        if attention:
            ops, chain_of_call, launch = self.cpu_ops, self.chain_of_call, self.launch
            for i in it.kernels:
                call = launch[i]
                if call is None:
                    continue
                for j in chain_of_call.get(id(call), ()):
                    op = ops[j]
                    if op.name in attention:
                        dims = _dec(op.args.input_dims) if op.args else []
                        if len(dims) >= 2 and isinstance(dims[0], list) and len(dims[0]) == 4:
                            n_q = dims[0][2]
                            if n_q == 1:
                                decode += 1
                            else:
                                prefill += 1
                        break
        if decode or prefill:
            src = f"inferred from attention query lengths ({prefill} prefill-shaped, {decode} decode-shaped calls)"
            return (MIXED if decode and prefill else DECODE if decode else PREFILL), src
        votes = np.bincount(self._attention_kernel_votes[self.k_name[it.kernels]], minlength=3)
        decode, prefill = int(votes[1]), int(votes[2])
        if decode or prefill:
            src = f"inferred from attention kernel variants ({prefill} prefill, {decode} decode kernels)"
            return (MIXED if decode and prefill else DECODE if decode else PREFILL), src
        return UNKNOWN, "not inferable: no attention op shapes or attention kernel variants"

    @functools.cached_property
    def _attention_op_names(self) -> set[str]:
        names = self.trace.cpu_op_names or set(map(_NAME, self.cpu_ops))
        return {n for n in names if is_attention_schema_op(n)}

    @functools.cached_property
    def _attention_kernel_votes(self) -> np.ndarray:
        """Per kernel name id: 1 a decode attention kernel, 2 a prefill one, 0 neither (by its name's words)."""
        votes = np.zeros(len(self.kernel_names.values), np.int64)
        for k, name in enumerate(self.kernel_names.values):
            if self.kcat.get(name) != "attention":
                continue
            low = name.lower()
            if any(w in low for w in _DECODE_WORDS):
                votes[k] = 1
            elif any(w in low for w in _PREFILL_WORDS):
                votes[k] = 2
        return votes


def is_attention_schema_op(name: str) -> bool:
    """An attention op whose first input is the query ``[B, H, N_Q, d]`` (SDPA / flash-attention schemas).

    Inductor's fused Triton ops can carry ``scaled_dot_product`` in their names (and torch.compile's
    autotuning runs them on made-up shapes): they are not the op, so they never vote on the phase."""
    if name.startswith(("triton_", "pseudo_op::")) or "::" not in name:
        return False
    return "scaled_dot_product" in name or "flash_attention" in name


def _leaf_ops(cpu_ops: list[ev_mod.Ev]) -> list[ev_mod.Ev]:
    """CPU ops with no CPU op nested inside them on their thread."""
    by_tid: dict[Any, list[ev_mod.Ev]] = {}
    for op in cpu_ops:
        by_tid.setdefault(op.tid, []).append(op)
    leaves = []
    for ops in by_tid.values():
        ops.sort(key=lambda e: (e.ts, -e.dur))  # type: ignore[arg-type,return-value,operator]
        for a, b in zip(ops, [*ops[1:], None], strict=True):
            if b is None or b.ts >= a.ts + a.dur:  # type: ignore[operator]
                leaves.append(a)
    return leaves


def steady_state(its: list[Iteration], min_run: int = 3) -> tuple[list[Iteration], str]:
    """The longest run of consecutive iterations at the peak request count (see docs)."""
    if not its:
        return [], "no iterations"
    counts = [it.step.requests if it.step else 0 for it in its]
    if not any(counts):
        return its, f"all {len(its)} iterations (no request counts to choose a steady state from)"
    peak = max(counts)
    best = (0, 0)
    start = None
    for i, c in enumerate([*counts, -1]):
        if c == peak and start is None:
            start = i
        elif c != peak and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    run = its[best[0] : best[1]]
    if len(run) >= min_run or len(run) == sum(1 for c in counts if c == peak):
        how = (
            f"longest run of consecutive iterations at the peak of {peak} requests: iterations "
            f"{run[0].index}..{run[-1].index} ({len(run)} of {len(its)})"
        )
        return run, how
    stable = [it for it, c in zip(its, counts, strict=True) if c >= 0.9 * peak]
    return stable, (
        f"peak of {peak} requests held for fewer than {min_run} consecutive iterations: "
        f"{len(stable)} of {len(its)} iterations within 10% of the peak"
    )


WindowSpec = tuple[int, int] | str  # "auto" | "all" | (first, last) iteration index


def parse_window(text: Any) -> WindowSpec:
    """The ``window`` option: ``auto`` (steady state, the default), ``all`` (no window) or ``FIRST:LAST``
    (iteration indices as in iterations.csv, inclusive; either side may be left out)."""
    t = str(text or "auto").strip().lower()
    if t in ("auto", "all"):
        return t
    m = re.fullmatch(r"(\d*):(\d*)", t)
    if m is None or not (m.group(1) or m.group(2)):
        raise AnalysisError(f"window must be auto, all or FIRST:LAST (iteration indices), not {text!r}")
    lo, hi = int(m.group(1) or 0), int(m.group(2) or 1 << 62)
    if lo > hi:
        raise AnalysisError(f"window {text!r}: FIRST is after LAST")
    return lo, hi


def choose_window(its: list[Iteration], spec: WindowSpec) -> tuple[list[Iteration], str]:
    """A stage's window: the steady state, every iteration, or the iterations the user named."""
    if spec == "auto":
        return steady_state(its)
    if spec == "all":
        return its, f"steady-state window disabled (window=all): all {len(its)} iterations"
    lo, hi = spec  # type: ignore[misc]
    chosen = [it for it in its if lo <= it.index <= hi]
    return chosen, f"set by hand (window={lo}:{hi if hi < 1 << 62 else ''}): {len(chosen)} of {len(its)} iterations"


@functools.lru_cache(maxsize=1 << 16)  # a trace repeats a few thousand signatures over and over
def _signature(dims_raw: bytes, types_raw: bytes) -> str:
    return dims_raw.decode(errors="replace").replace(" ", "") + "|" + types_raw.decode(errors="replace")


GraphMap = dict[int, tuple[CapturedGraph, int, int]]  # kernel index -> (graph, index in its capture, replay id)


def _map_graph_replays(
    st: TraceState, its: list[Iteration], captures: list[CapturedGraph]
) -> tuple[GraphMap, dict[str, Any]]:
    """Align each graph replay's kernels with a capture trace's (the capture whose batch size fits the
    iteration's tokens best, first); the kernel -> captured-op map and the ``graph`` summary."""
    kernels = st.kernels
    graph_map: GraphMap = {}
    graph_info: dict[str, Any] = {"replays": 0, "kernels": sum(st.graph), "mapped": 0, "captures": len(captures)}
    if not any(st.graph):
        return graph_map, graph_info
    replays: dict[int, list[int]] = {}
    for i, g in enumerate(st.graph):
        if g:
            replays.setdefault(id(st.launch[i]), []).append(i)
    graph_info["replays"] = len(replays)
    unmatched = 0
    for rid, idxs in replays.items():
        names = [kernels[i].name for i in idxs if kernels[i].cat == "kernel"]
        kidx = [i for i in idxs if kernels[i].cat == "kernel"]
        it = its[st.k_iter[idxs[0]]] if st.k_iter[idxs[0]] >= 0 else None
        want = it.step.tokens if it is not None and it.step is not None else None
        cands = sorted(
            captures,
            key=lambda g: (
                want is not None and g.batch_size < want,
                abs(g.batch_size - want) if want is not None else 0,
                abs(len(g.kernel_names) - len(names)),
            ),
        )
        done = False
        for g in cands:
            m = align(g.kernel_names, names)
            if m is not None:
                for i, ci in zip(kidx, m, strict=True):
                    if ci is not None:
                        graph_map[i] = (g, ci, rid)
                done = True
                break
        unmatched += not done
    graph_info["mapped"] = len(graph_map)
    if captures and unmatched:
        st.notes.append(f"{unmatched} graph replay(s) could not be aligned with any capture trace")
    if not captures:
        st.notes.append(
            f"{graph_info['kernels']} graph-replayed kernels in {len(replays)} replay(s) have no capture trace: "
            "reported as one 'graph' group"
        )
    return graph_map, graph_info


class OpChooser:
    """Which op of a kernel's enclosing-op chain its time goes to (:meth:`position`, :meth:`choose_lazy`: the
    innermost op with a specific model that fits the kernel, else the innermost modelled op, else the innermost
    op), and ``instance(key, op, step)``: the index of that op's :class:`OpInstance` in ``instances`` (made on
    first use, with its FLOPs/bytes model).

    Models are made per distinct op content (:mod:`op_content`) and step where the op is an attention op; for
    chains many kernels share (capture traces), the choice is made once per (chain signature, kernel category,
    step): :meth:`position`; for a launch call's own chain, :meth:`choose_lazy`."""

    def __init__(self, instances: dict[Any, OpInstance], contents: OpContents) -> None:
        self.instances = instances
        self.contents = contents
        self._models: dict[Any, OpModel | None] = {}
        self._attention: dict[int, bool] = {}  # per content id: an attention op (its model reads the step)
        self._chosen: dict[Any, int] = {}  # (signature, kernel category, id(step)) -> position in chain

    def model(self, cid: int, step: StepInfo | None) -> OpModel | None:
        """The model of the ops of content ``cid`` under ``step``."""
        attn = self._attention.get(cid)
        if attn is None:
            attn = self._attention[cid] = is_attention_name(self.contents.first[cid].name)
        key = (cid, id(step)) if attn and step is not None else cid
        model = self._models.get(key, self._models)
        if model is self._models:
            op = self.contents.first[cid]
            a = op.args
            if a is None or a.input_dims == ev_mod.NO_LIST:
                model = None
            else:
                model = model_op(op.name, _dec(a.input_dims), _dec(a.input_type), _dec(a.concrete), step)
            self._models[key] = model
        return model  # type: ignore[return-value]

    def position(self, chain: tuple[int, ...], ops: list[ev_mod.Ev], kcat: str, step: StepInfo | None) -> int | None:
        """Where in ``chain`` the chosen op is (None for an empty chain)."""
        if not chain:
            return None
        return self.position_of(self.contents.signature(ops, chain), kcat, step)

    def position_of(self, sig: tuple[int, ...], kcat: str, step: StepInfo | None) -> int:
        """:meth:`position` from the chain's signature (not empty)."""
        key = (sig, kcat, id(step))
        got = self._chosen.get(key)
        if got is None:
            got = self._chosen[key] = self._choose(sig, kcat, step)
        return got

    def choose_lazy(
        self, chain: tuple[int, ...], ops: list[ev_mod.Ev], kcat: str, step: StepInfo | None
    ) -> tuple[int, int]:
        """:meth:`position` (and the chosen op's content id) for a chain no other kernel shares: the ops' content
        ids are looked up from the innermost out only as far as the choice needs (usually the innermost op)."""
        of_op, model = self.contents.of_op, self.model
        innermost_model = None
        for p, j in enumerate(chain):
            cid = of_op(ops[j])
            m = model(cid, step)
            if m is None:
                continue
            if m.category in SPECIFIC and _compatible(m, kcat):
                return p, cid
            if innermost_model is None and m.category not in SPECIFIC:
                innermost_model = (p, cid)
        if innermost_model is not None:
            return innermost_model
        return 0, of_op(ops[chain[0]])

    def _choose(self, sig: tuple[int, ...], kcat: str, step: StepInfo | None) -> int:
        """The innermost op with a specific model that fits the kernel, else the innermost modelled op,
        else the innermost op."""
        innermost_model = None
        for p, cid in enumerate(sig):
            m = self.model(cid, step)
            if m is None:
                continue
            if m.category in SPECIFIC and _compatible(m, kcat):
                return p
            if innermost_model is None and m.category not in SPECIFIC:
                innermost_model = p
        return innermost_model if innermost_model is not None else 0

    def instance(self, key: Any, op: ev_mod.Ev | None, step: StepInfo | None, cid: int = -1) -> int:
        """``cid``: the content id of ``op`` when the caller knows it."""
        inst = self.instances.get(key)
        return inst.index if inst is not None else self.new_instance(key, op, step, cid)

    def new_instance(self, key: Any, op: ev_mod.Ev | None, step: StepInfo | None, cid: int = -1) -> int:
        """:meth:`instance` for a key not seen yet."""
        if op is None:
            inst = OpInstance(key, "graph" if key == ("graph",) else "(no op)", b"", b"", None)
        else:
            a = op.args
            dims, types = (a.input_dims, a.input_type) if a is not None else (b"", b"")
            inst = OpInstance(key, op.name, dims, types, self.model(self.contents.of_op(op) if cid < 0 else cid, step))
        inst.index = len(self.instances)
        self.instances[key] = inst
        return inst.index


class MoeSplitter:
    """The MoE pseudo-op instance (:mod:`pseudo_ops`) of a fused MoE op's GEMM / finalize kernel; kernels
    come in time order, so a MoE op's first GEMM is its up-projection."""

    def __init__(self, instances: dict[Any, OpInstance], moe_kernel: list[bool]) -> None:
        self.instances = instances
        self.kernel = moe_kernel  # per kernel name id
        self.gemms: dict[Any, int] = {}
        self.topk: dict[int, TopKIndex] = {}

    def instance(self, chain: tuple[int, ...], ops: list[ev_mod.Ev], base: tuple[Any, ...], kernel: ev_mod.Ev) -> int:
        """The pseudo-op instance index, -1 when the kernel is in no fused MoE op."""
        jm = moe_parent(chain, ops)
        if jm is None:
            return -1
        moe_key = (*base, jm)
        seen = self.gemms.get(moe_key, 0)
        scatter = "matmul_scatter" in kernel.name.lower()
        kind = "finalize_matmul_scatter" if scatter else "up" if seen == 0 else "down"
        self.gemms[moe_key] = seen + (not scatter)
        key = ("moe", moe_key, kind, seen if kind == "down" else 0)
        inst = self.instances.get(key)
        if inst is None:
            ev = ops[jm]
            idx = self.topk.get(id(ops)) or self.topk.setdefault(id(ops), TopKIndex(ops))
            model = triton_moe_model(kind, ev, idx.topk_in(ev), kernel.name)
            a = ev.args
            dims, types = (a.input_dims, a.input_type) if a is not None else (b"", b"")
            inst = OpInstance(key, f"pseudo_op::moe_triton_unfused_{kind}", dims, types, model)
            inst.index = len(self.instances)
            self.instances[key] = inst
        return inst.index


def _kernel_ops(st: TraceState, its: list[Iteration], graph_map: GraphMap) -> KernelOps:
    """The op instance and origin of every kernel inside an iteration: through its launch call's chain of
    enclosing CPU ops, or, for a graph replay, the captured op it aligned with (else one ``graph`` group)."""
    kernels = st.kernels
    instances: dict[Any, OpInstance] = {}
    chooser = OpChooser(instances, OpContents())
    position, choose_lazy = chooser.position, chooser.choose_lazy
    instance, new_instance, signature = chooser.instance, chooser.new_instance, chooser.contents.signature
    n = len(kernels)
    k_inst = [-1] * n  # the op instance each kernel's time goes to (index into ``instances``)
    k_origin = [ORIGIN_LAUNCH] * n
    k_iter = st.k_iter.tolist()
    step_of = [it.step for it in its]
    kcat_of_name = [st.kcat.get(name, "other") for name in st.kernel_names.values]
    k_name = st.k_name.tolist()
    cpu_ops, chain_of_call, launch, graph = st.cpu_ops, st.chain_of_call, st.launch, st.graph
    moe = MoeSplitter(instances, [is_moe_kernel(name) for name in st.kernel_names.values])
    moe_kernel = moe.kernel
    op_inst: dict[int, int] = {}  # CPU op index -> its instance (key ("op", j)), the common case's short cut
    graph_inst = -1  # the one instance of graph replays without a capture trace, once made
    for i in range(n):
        if k_iter[i] < 0:
            continue
        step = step_of[k_iter[i]]
        name_id = k_name[i]
        if graph[i]:
            hit = graph_map.get(i)
            if hit is None:
                k_origin[i] = ORIGIN_GRAPH
                if graph_inst < 0:
                    graph_inst = instance(("graph",), None, step)
                k_inst[i] = graph_inst
                continue
            g, ci, rid = hit
            k_origin[i] = ORIGIN_CAPTURE
            got = moe.instance(g.chains[ci], g.ops, ("cap", id(g), rid), kernels[i]) if moe_kernel[name_id] else -1
            if got >= 0:
                k_inst[i] = got
                continue
            chain = g.chains[ci]
            p = position(chain, g.ops, kcat_of_name[name_id], step)
            k_inst[i] = (
                instance(("nokernelop", kernels[i].name, i), None, step)
                if p is None
                else instance(("cap", id(g), chain[p], rid), g.ops[chain[p]], step, signature(g.ops, chain)[p])
            )
            continue
        call = launch[i]
        chain = chain_of_call.get(id(call), ()) if call is not None else ()
        if moe_kernel[name_id]:
            got = moe.instance(chain, cpu_ops, ("op",), kernels[i])
            if got >= 0:
                k_inst[i] = got
                continue
        if not chain:  # no launch record (dropped by the profiler) or launched outside any op
            k_inst[i] = instance(("nokernelop", kernels[i].name, i), None, step)
            continue
        p, cid = choose_lazy(chain, cpu_ops, kcat_of_name[name_id], step)
        j = chain[p]
        got = op_inst.get(j, -1)
        if got < 0:
            got = op_inst[j] = new_instance(("op", j), cpu_ops[j], step, cid)
        k_inst[i] = got
    return KernelOps(list(instances.values()), np.array(k_inst, np.int64), np.array(k_origin, np.int8))


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
