"""CUDA/HIP graph replays: map replayed kernels to the ops that launched them during capture.

A graph replay shows up as one ``cudaGraphLaunch`` / ``hipGraphLaunch`` runtime call whose
correlation id every replayed kernel carries: the kernels have no CPU op of their own. A
graph-capture trace (TraceLens's ``capture_traces/`` layout: one trace per batch size, with
``capture_<bs>_<mode>`` annotations and an optional ``execution_details.json``) records the
launch calls made while capturing, each with its kernel name (``args.kernel``) under the
CPU ops that issued it. Replayed kernels, in GPU order, are aligned with the captured launches:
first position by position, then a greedy forward scan by kernel name (skipping captured
launches that did not replay), then per kernel name in order (for multi-stream replays whose
GPU order differs from the capture order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
from magpie_trace.columns import Interner

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.annotations import parse_capture
from magpie_inference_analysis.kept_reader import enclosing_chains

LAUNCH_WORDS = ("LaunchKernel", "LaunchCooperativeKernel", "ModuleLaunchKernel")


def is_kernel_launch(name: str) -> bool:
    return any(w in name for w in LAUNCH_WORDS)


def is_graph_launch(name: str) -> bool:
    return "GraphLaunch" in name


@dataclass
class CapturedGraph:
    batch_size: int
    mode: str
    file: str
    kernel_names: list[str] = field(default_factory=list)
    chains: list[tuple[int, ...]] = field(default_factory=list)  # enclosing op indices per launch, innermost first
    ops: list[ev_mod.Ev] = field(default_factory=list)  # the capture file's cpu ops (indexed by chains)


_TS, _DUR, _TID = attrgetter("ts"), attrgetter("dur"), attrgetter("tid")


def op_chains(
    cpu_ops: list[ev_mod.Ev], calls: list[ev_mod.Ev], op_columns: ev_mod.OpColumns | None = None
) -> list[tuple[int, ...]]:
    """For each call, the indices (into ``cpu_ops``) of the CPU ops enclosing it on its thread, innermost first.

    One sweep per thread over ops and calls in start order (longer first, ops before calls at equal
    times), keeping the stack of open ops; sorted with numpy, swept with the stack in plain lists. Ops
    with no call inside them on their thread (views, allocations: about 70 % of the ops in a
    typical inference trace) are left out of the sweep first, with one vectorised search: such an op
    is in no chain and, never enclosing a call while open, never holds another op on the stack.

    ``op_columns``: the ops' ``ts``, ``dur`` and integer ``tid`` columns when the loader built them."""
    n_ops = len(cpu_ops)
    ts, dur, tid = _columns(cpu_ops, calls, op_columns)
    swept = np.flatnonzero(~np.isnan(ts))
    swept = np.concatenate((_enclosing_calls(ts, dur, tid, n_ops, swept[swept < n_ops]), swept[swept >= n_ops]))
    kind = (swept >= n_ops).astype(np.int8)
    order = swept[np.lexsort((kind, -dur[swept], ts[swept], tid[swept]))]
    native = enclosing_chains(order, ts, ts + dur, tid, n_ops, len(calls))
    if native is not None:  # the compiled sweep (magpie_inference_analysis.kept_reader): the same stack, in C
        return native
    out: list[tuple[int, ...]] = [()] * len(calls)
    ends_all = (ts + dur).tolist()
    ts_l = ts.tolist()
    tid_l = tid.tolist()
    ends: list[float] = []  # the open ops of the current thread: their ends and indices, outermost first
    open_ops: list[int] = []
    current = -1
    for i in order.tolist():
        if tid_l[i] != current:
            current = tid_l[i]
            ends.clear()
            open_ops.clear()
        t = ts_l[i]
        while ends and ends[-1] <= t:
            ends.pop()
            open_ops.pop()
        if i < n_ops:
            ends.append(ends_all[i])
            open_ops.append(i)
        elif open_ops:
            out[i - n_ops] = tuple(open_ops[::-1])
    return out


def _columns(cpu_ops: list[ev_mod.Ev], calls: list[ev_mod.Ev], op_columns: ev_mod.OpColumns | None) -> ev_mod.OpColumns:
    """``ts`` (NaN where absent), ``dur`` and dense thread ids of the ops followed by the calls."""
    if op_columns is not None:
        m = len(calls)
        try:
            call_tid = np.fromiter(map(_TID, calls), np.int64, m)
            call_ts = np.fromiter(map(_TS, calls), np.float64, m)
        except (TypeError, ValueError, OverflowError):
            pass
        else:
            tid = np.unique(np.concatenate((op_columns[2], call_tid)), return_inverse=True)[1]
            return (
                np.concatenate((op_columns[0], call_ts)),
                np.concatenate((op_columns[1], np.fromiter(map(_DUR, calls), np.float64, m))),
                tid.astype(np.int64),
            )
    items = [*cpu_ops, *calls]
    n = len(items)
    try:
        ts = np.fromiter(map(_TS, items), np.float64, n)
    except TypeError:  # an event without ts (the loader drops those; capture files might not)
        ts = np.array([np.nan if e.ts is None else e.ts for e in items], dtype=np.float64)
    dur = np.fromiter(map(_DUR, items), np.float64, n)
    tids = Interner()
    return ts, dur, np.fromiter(map(tids.__getitem__, map(_TID, items)), np.int64, n)


def _enclosing_calls(ts: np.ndarray, dur: np.ndarray, tid: np.ndarray, n_ops: int, ops: np.ndarray) -> np.ndarray:
    """The ops (of ``ops``) whose ``[ts, ts + dur]`` holds the start of a call (items from ``n_ops`` on) on
    their thread: a superset of the ops the sweep puts in a chain."""
    calls = np.arange(n_ops, len(ts))
    calls = calls[~np.isnan(ts[calls])]
    if len(calls) == 0 or len(ops) == 0:
        return ops[:0]
    # one sorted key per (thread, time): threads laid end to end, each over the trace's whole time span
    lo = min(float(ts[calls].min()), float(ts[ops].min()))
    span = max(float((ts[calls] + dur[calls]).max()), float((ts[ops] + dur[ops]).max())) - lo + 1.0
    call_keys = np.sort(tid[calls] * span + (ts[calls] - lo))
    start = tid[ops] * span + (ts[ops] - lo)
    first = np.searchsorted(call_keys, start, side="left")
    last = np.searchsorted(call_keys, start + dur[ops], side="right")
    return ops[last > first]


def load_captures(folder: Path) -> tuple[list[CapturedGraph], list[str]]:
    """Every captured graph in a ``capture_traces`` folder, and the problems met (never raises for one file)."""
    errors: list[str] = []
    details: dict[str, dict[str, Any]] = {}
    det = folder / "execution_details.json"
    if det.is_file():
        try:
            for item in json.loads(det.read_text()):
                details[str(item.get("file"))] = item
        except (ValueError, TypeError, AttributeError) as exc:
            errors.append(f"{det}: not a list of {{file, batch_size, mode}} ({exc})")
    graphs: list[CapturedGraph] = []
    for path in sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")) and p != det):
        try:
            tr = ev_mod.load(path)
        except ev_mod.TraceLoadError as exc:
            errors.append(str(exc))
            continue
        cpu_ops = [e for e in tr.events if e.ph == "X" and e.cat == "cpu_op"]
        runtime = [e for e in tr.events if e.ph == "X" and e.cat in ("cuda_runtime", "cuda_driver", "hip_runtime")]
        runtime.sort(key=lambda e: e.ts or 0.0)
        anns = [
            (e, parse_capture(e.name))
            for e in tr.events
            if e.ph == "X" and e.cat == "user_annotation" and parse_capture(e.name)
        ]
        info = details.get(path.name, {})
        if not anns:
            bs = int(info.get("batch_size", 0) or 0)
            anns = [(None, (bs, str(info.get("mode", ""))))]
        for ann, (bs, mode) in anns:  # type: ignore[misc]
            lo = ann.ts if ann is not None else -1e300
            hi = ann.ts + ann.dur if ann is not None else 1e300
            inside = [c for c in runtime if c.ts is not None and lo <= c.ts <= hi]
            # one graph per stream capture (piecewise modes capture several graphs under one annotation)
            segments: list[list[ev_mod.Ev]] = []
            current: list[ev_mod.Ev] | None = None
            for c in inside:
                if "BeginCapture" in c.name:
                    current = []
                    segments.append(current)
                elif "EndCapture" in c.name:
                    current = None
                elif is_kernel_launch(c.name) and c.args is not None and c.args.kernel:
                    if current is None:
                        current = []
                        segments.append(current)
                    current.append(c)
            for seg in segments:
                if not seg:
                    continue
                g = CapturedGraph(bs or int(info.get("batch_size", 0) or 0), mode, str(path))
                g.kernel_names = [c.args.kernel for c in seg]  # type: ignore[union-attr,misc]
                g.chains = op_chains(cpu_ops, seg)
                g.ops = cpu_ops
                graphs.append(g)
        if not any(g.file == str(path) for g in graphs):
            errors.append(f"{path}: no kernel launches with kernel names found inside a capture annotation")
    return graphs, errors


def align(captured: list[str], replayed: list[str]) -> list[int | None] | None:
    """Index into ``captured`` for each replayed kernel, or None when they cannot be aligned."""
    if len(captured) == len(replayed) and captured == replayed:
        return list(range(len(replayed)))
    out: list[int | None] = []
    ci = 0
    for name in replayed:  # greedy forward scan
        while ci < len(captured) and captured[ci] != name:
            ci += 1
        if ci >= len(captured):
            out = []
            break
        out.append(ci)
        ci += 1
    if len(out) == len(replayed):
        return out
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(captured):
        positions.setdefault(name, []).append(i)
    seen: dict[str, int] = {}
    res: list[int | None] = []
    for name in replayed:  # per-name order
        k = seen.get(name, 0)
        pos = positions.get(name, [])
        if k >= len(pos):
            return None
        res.append(pos[k])
        seen[name] = k + 1
    return res
