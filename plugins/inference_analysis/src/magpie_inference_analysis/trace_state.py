"""One trace's state that the stages share (:class:`TraceState`), its iterations and their windows.

:class:`TraceState` holds the kernels (or, in a CPU-only trace, the leaf CPU ops), each one's launch call and
the chain of CPU ops enclosing it, and the kernel categories; :meth:`TraceState.iterations` splits the trace into
:class:`Iteration` s (engine step annotations, else inferred) with their phases; :func:`choose_window` picks a
stage's window of iterations (the steady state by default, :func:`steady_state`).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from itertools import pairwise
from operator import attrgetter
from typing import Any

import numpy as np
from magpie_trace.columns import Interner

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.annotations import DECODE, MIXED, PREFILL, StepInfo, parse_step
from magpie_inference_analysis.graphs import is_graph_launch

UNKNOWN = "unclassified"
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


def _dec(raw: Any) -> list[Any]:
    return ev_mod.decode_list(raw)


def _kernel_categories(names: list[str]) -> dict[str, str]:
    try:
        from magpie_core.kernel_names import parse_many

        return {n: p.category for n, p in parse_many(names).items()}
    except Exception:  # no parser plugins installed: categories stay unknown
        return dict.fromkeys(names, "other")


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
