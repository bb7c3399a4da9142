"""Per-rank trace analysis: kernel statistics, GPU busy/idle time, gaps, launch-boundness.

Everything here runs inside a worker process per rank and returns a small
picklable :class:`RankAnalysis`, never the events themselves.

Definitions (also in docs/gap-analysis.md):

* kernel statistics follow AMD Magpie: events whose ``cat`` contains one of
  ``categories`` (case-insensitive substring) and none of ``ignore_categories``,
  overlapping the window, at least ``min_duration_us`` long, grouped by name;
  durations are not clamped to the window.
* GPU activity = ``kernel``, ``gpu_memcpy`` and ``gpu_memset`` events, per
  device (``args.device``, else ``pid``). Busy time is the union of their
  intervals clipped to the window, so concurrent streams are not counted twice.
  The active span runs from the first activity start to the last end inside the
  window; idle = active span - busy; each hole in the union is a gap.
* a gap is "host-bound" when the call that launched the kernel ending the gap
  started after the gap began: the device had nothing queued and waited for the
  CPU. ``launch_bound`` is set when idle time is at least 10% of the active span
  and at least half of it is host-bound.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from magpie_core.trace.columns import (
    ANNOTATION_CATS,
    GPU_ACTIVITY_CATS,
    NONE,
    RUNTIME_CATS,
    EventTable,
    FallBack,
    load_table,
    merge_tables,
    stream_table,
    table_from_loaded,
)
from magpie_core.trace.loader import LoadedTrace

__all__ = [
    "ANNOTATION_CATS",
    "GPU_ACTIVITY_CATS",
    "RUNTIME_CATS",
    "AnalysisOptions",
    "DeviceStats",
    "Gap",
    "KernelStat",
    "RankAnalysis",
    "WindowSpec",
    "analyze_file",
    "analyze_loaded",
    "analyze_parts",
    "analyze_table",
    "splittable",
    "table_part",
]
MAX_SHAPES = 10


@dataclass
class WindowSpec:
    """What part of the trace to analyze; at most one of pct / absolute / annotation applies."""

    start_pct: float = 0.0
    end_pct: float = 100.0
    start_us: float | None = None  # microseconds from the trace's first timestamp
    end_us: float | None = None
    annotation: str | None = None  # user_annotation / record_function name (exact, or glob with *)


@dataclass
class AnalysisOptions:
    categories: list[str] = field(default_factory=lambda: ["kernel", "gpu"])
    ignore_categories: list[str] = field(default_factory=lambda: ["gpu_user_annotation", "user_annotation"])
    min_duration_us: float = 0.0
    window: WindowSpec = field(default_factory=WindowSpec)
    top_gaps: int = 10


@dataclass
class KernelStat:
    name: str
    calls: int = 0
    total_us: float = 0.0
    sumsq: float = 0.0
    min_us: float = math.inf
    max_us: float = 0.0
    shapes: list[str] = field(default_factory=list)

    @property
    def avg_us(self) -> float:
        return self.total_us / self.calls if self.calls else 0.0

    @property
    def std_us(self) -> float:
        """Sample standard deviation (as Python's statistics.stdev)."""
        if self.calls < 2:
            return 0.0
        var = (self.sumsq - self.total_us * self.total_us / self.calls) / (self.calls - 1)
        return math.sqrt(var) if var > 0 else 0.0

    def merge(self, other: KernelStat) -> None:
        self.calls += other.calls
        self.total_us += other.total_us
        self.sumsq += other.sumsq
        self.min_us = min(self.min_us, other.min_us)
        self.max_us = max(self.max_us, other.max_us)
        for s in other.shapes:
            if len(self.shapes) >= MAX_SHAPES:
                break
            if s not in self.shapes:
                self.shapes.append(s)


@dataclass
class Gap:
    device: str
    start_us: float  # relative to the trace start
    duration_us: float
    before: str  # last activity before the gap
    after: str  # activity that ended the gap
    host_bound: bool | None  # None: no launch record for the activity after
    cpu_op: str | None  # innermost CPU op running when the gap began
    annotation: str | None  # innermost user annotation at that moment
    launch_call: str | None  # the runtime call that launched ``after``


@dataclass
class DeviceStats:
    device: str
    activities: int
    busy_us: float
    active_span_us: float
    idle_us: float
    wall_us: float
    num_gaps: int
    host_bound_idle_us: float
    launch_records: int
    median_launch_to_start_us: float | None
    median_launch_call_us: float | None
    median_kernel_us: float | None
    kernels_shorter_than_launch_pct: float | None
    gaps: list[Gap] = field(default_factory=list)

    @property
    def idle_pct(self) -> float:
        return 100.0 * self.idle_us / self.active_span_us if self.active_span_us > 0 else 0.0

    @property
    def host_bound_idle_pct(self) -> float:
        return 100.0 * self.host_bound_idle_us / self.idle_us if self.idle_us > 0 else 0.0

    @property
    def launch_bound(self) -> bool:
        return self.idle_pct >= 10.0 and self.host_bound_idle_pct >= 50.0


@dataclass
class RankAnalysis:
    rank: int
    label: str
    path: str
    platform: str = "unknown"
    error: str | None = None
    size_bytes: int = 0
    num_events: int = 0
    trace_start_ts: float = 0.0
    trace_span_us: float = 0.0
    window_us: tuple[float, float] = (0.0, 0.0)  # relative to trace start
    window_note: str | None = None
    total_duration_us: float = 0.0  # sum over the selected events (AMD Magpie's % Total denominator)
    kernels: dict[str, KernelStat] = field(default_factory=dict)
    devices: list[DeviceStats] = field(default_factory=list)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    dist_rank: int | None = None
    world_size: int | None = None

    @property
    def busy_us(self) -> float:
        return sum(d.busy_us for d in self.devices)

    @property
    def wall_us(self) -> float:
        return sum(d.wall_us for d in self.devices)


def _format_dims(raw: msgspec.Raw | bytes) -> str:
    if not raw:
        return ""
    try:
        dims = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return ""
    if not isinstance(dims, list):
        return ""
    parts = ["[" + ",".join(str(d) for d in dim) + "]" for dim in dims if isinstance(dim, list) and dim]
    return "x".join(parts)


def _cat_matcher(categories: list[str], ignore: list[str]) -> dict[str, bool]:
    cats = [c.lower() for c in categories]
    ign = [c.lower() for c in ignore]

    class _Cache(dict[str, bool]):
        def __missing__(self, cat: str) -> bool:
            low = cat.lower()
            ok = not (ign and any(i in low for i in ign)) and (not cats or any(c in low for c in cats))
            self[cat] = ok
            return ok

    return _Cache()


def _merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals. Returns (merged_starts, merged_ends, index of the interval opening each merged one)."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run_end[last], order[first]


def _intersect_total(ms: np.ndarray, me: np.ndarray, ws: list[tuple[float, float]]) -> float:
    total = 0.0
    for a, b in ws:
        lo = np.clip(ms, a, b)
        hi = np.clip(me, a, b)
        total += float(np.sum(hi - lo))
    return total


def _merge_simple(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class _IdNames:
    """``names[ids[i]]`` as a sequence, so the helpers below can take interned names."""

    def __init__(self, ids: np.ndarray, names: list[str]) -> None:
        self.ids = ids
        self.names = names

    def __getitem__(self, i: int) -> str:
        return self.names[int(self.ids[i])]


def _innermost(starts: np.ndarray, ends: np.ndarray, names: Any, t: float) -> str | None:
    if len(starts) == 0:
        return None
    mask = (starts <= t) & (ends >= t)
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return None
    best = idx[np.argmin(ends[idx] - starts[idx])]
    return names[int(best)]


def _frames_at(starts: np.ndarray, ends: np.ndarray, names: Any, t: float, n: int = 4) -> list[str]:
    if len(starts) == 0:
        return []
    idx = np.flatnonzero((starts <= t) & (ends >= t))
    if len(idx) == 0:
        return []
    idx = idx[np.argsort(ends[idx] - starts[idx])][:n]
    return [names[int(i)] for i in idx]


def _looks_bare(name: str) -> bool:
    return not (" " in name or "<" in name or "(" in name or name.startswith("_Z"))


def _last_index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys (NONE left out) and, for each, the index of its last occurrence."""
    if len(keys) == 0:
        return keys, np.zeros(0, np.int64)
    rev = keys[::-1]
    uniq, first_rev = np.unique(rev, return_index=True)
    last = len(keys) - 1 - first_rev
    keep = uniq != NONE
    return uniq[keep], last[keep]


def _lookup(uniq: np.ndarray, where: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each key, ``where`` of its match in ``uniq``; -1 when absent (or NONE)."""
    if len(uniq) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, np.int64)
    pos = np.minimum(np.searchsorted(uniq, keys), len(uniq) - 1)
    found = (uniq[pos] == keys) & (keys != NONE)
    return np.where(found, where[pos], -1)


def analyze_table(table: EventTable, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """The per-rank analysis over the columns of one trace (see the module docstring for definitions)."""
    names = table.names
    result = RankAnalysis(
        rank=rank,
        label=label,
        path=str(table.path),
        platform=table.platform,
        size_bytes=table.size_bytes,
        num_events=table.num_events,
        dist_rank=table.rank,
        world_size=table.world_size,
    )
    win = options.window
    ann_pattern = win.annotation
    if table.t_min is math.inf:
        result.error = None
        result.window_note = "no timed events"
        return result
    t_min, t_max = table.t_min, table.t_max
    result.trace_start_ts = t_min
    result.trace_span_us = t_max - t_min
    cpu, py, rt, act, ann, sel, flow = (table[g] for g in ("cpu", "py", "rt", "act", "ann", "sel", "flow"))
    cat_id = {c: i for i, c in enumerate(table.cats)}
    gpu_ann = cat_id.get("gpu_user_annotation", -1)
    user_ann = cat_id.get("user_annotation", -1)

    # -- window -----------------------------------------------------------------
    intervals: list[tuple[float, float]]
    if ann_pattern:
        import fnmatch

        def hit(name: str) -> bool:
            return name == ann_pattern or ("*" in ann_pattern and fnmatch.fnmatchcase(name, ann_pattern))

        ids = np.unique(np.concatenate([ann["name"], cpu["name"]]))
        hits = ids[np.array([hit(names[i]) for i in ids.tolist()], dtype=bool)] if len(ids) else ids

        def chosen_rows(group: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
            return np.flatnonzero(mask & np.isin(group["name"], hits))

        is_gpu = ann["cat"] == gpu_ann
        gpu_side = chosen_rows(ann, is_gpu)
        cpu_side = chosen_rows(ann, ~is_gpu)
        src, rows = (ann, gpu_side) if len(gpu_side) else (ann, cpu_side)
        if not len(rows):
            # record_function ranges may also be exported as cpu_op events
            src, rows = cpu, chosen_rows(cpu, np.ones(len(cpu["name"]), bool))
        if not len(rows):
            result.window_note = f"annotation {ann_pattern!r} not found in this trace"
            intervals = []
        else:
            a_ts = src["ts"][rows]
            intervals = _merge_simple(list(zip(a_ts.tolist(), (a_ts + src["dur"][rows]).tolist(), strict=True)))
            side = "GPU" if len(gpu_side) else "CPU"
            result.window_note = f"{len(rows)} {side}-side range(s) named {ann_pattern!r}"
    elif win.start_us is not None or win.end_us is not None:
        a = t_min + (win.start_us or 0.0)
        b = t_min + win.end_us if win.end_us is not None else t_max
        intervals = [(a, min(b, t_max))] if b > a else []
    else:
        span = t_max - t_min
        intervals = [(t_min + span * win.start_pct / 100.0, t_min + span * win.end_pct / 100.0)]
    full = not ann_pattern and intervals == [(t_min, t_max)]
    # CPU-side ranges (no GPU-side copy of the annotation): a GPU event belongs to the
    # range in which it was *launched*, since it runs later than the host code around it.
    by_launch = (
        bool(ann_pattern) and bool(intervals) and result.window_note is not None and "CPU-side" in result.window_note
    )
    if intervals:
        result.window_us = (intervals[0][0] - t_min, intervals[-1][1] - t_min)
    iv_lo = np.array([a for a, _ in intervals], dtype=np.float64)
    iv_hi = np.array([b for _, b in intervals], dtype=np.float64)

    def group_of(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Index of the window range each event falls in (inclusive overlap, as AMD Magpie); -1 outside."""
        if full:
            return np.zeros(len(ts), np.int64)
        if not intervals:
            return np.full(len(ts), -1, np.int64)
        i = np.searchsorted(iv_lo, end, side="right") - 1
        j = np.maximum(i, 0)
        return np.where((i >= 0) & (ts <= iv_hi[j]) & (end >= iv_lo[j]), i, -1)

    # -- launches: the runtime call (last one per correlation) or else the flow start ---------
    rt_keys, rt_row = _last_index(rt["corr"])
    fl_keys, fl_row = _last_index(flow["id"])

    def launch_of(corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(absolute launch time or nan, row of the runtime call or -1) for each correlation id."""
        call = _lookup(rt_keys, rt_row, corr)
        fl = _lookup(fl_keys, fl_row, corr)
        t = np.full(len(corr), np.nan)
        if len(fl_row):
            t = np.where(fl >= 0, flow["ts"][np.maximum(fl, 0)], t)
        if len(rt_row):
            t = np.where(call >= 0, rt["ts"][np.maximum(call, 0)], t)
        return t, call

    def member_group(group: dict[str, np.ndarray]) -> np.ndarray:
        ts = group["ts"]
        if by_launch:
            t, _ = launch_of(group["corr"])
            t = np.where(np.isnan(t), ts, t)
            return group_of(t, t)
        return group_of(ts, ts + group["dur"])

    # -- kernel statistics ----------------------------------------------------------
    keep = sel["dur"] >= options.min_duration_us
    if not full:
        keep &= member_group(sel) >= 0
    rows = np.flatnonzero(keep)
    stats: dict[str, KernelStat] = {}
    first_row: dict[str, int] = {}
    if len(rows):
        name_ids = sel["name"][rows]
        d = sel["dur"][rows]
        uniq, inv = np.unique(name_ids, return_inverse=True)
        inv = inv.reshape(-1)
        calls = np.bincount(inv, minlength=len(uniq))
        total = np.bincount(inv, weights=d, minlength=len(uniq))  # accumulates in event order, as a loop would
        sumsq = np.bincount(inv, weights=d * d, minlength=len(uniq))
        lo = np.full(len(uniq), math.inf)
        np.minimum.at(lo, inv, d)
        hi = np.zeros(len(uniq))
        np.maximum.at(hi, inv, d)
        first = np.full(len(uniq), len(rows), np.int64)
        np.minimum.at(first, inv, np.arange(len(rows)))
        slot_stats: list[KernelStat] = [None] * len(uniq)  # type: ignore[list-item]
        for k in np.argsort(first, kind="stable").tolist():
            name = names[int(uniq[k])]
            ks = KernelStat(name, int(calls[k]), float(total[k]), float(sumsq[k]), float(lo[k]), float(hi[k]))
            stats[name] = ks
            slot_stats[k] = ks
            first_row[name] = int(rows[first[k]])
        # shapes: Input Dims of the CPU op with the kernel's External id, first MAX_SHAPES distinct ones
        ext = sel["ext"][rows]
        has = ext != NONE
        if has.any() and len(cpu["ext"]):
            wanted: dict[int, set[int]] = {}
            for x, k in zip(ext[has].tolist(), inv[has].tolist(), strict=True):
                wanted.setdefault(x, set()).add(k)
            c_rows = np.flatnonzero((cpu["dims"] >= 0) & np.isin(cpu["ext"], np.fromiter(wanted, np.int64)))
            formatted: dict[int, str] = {}  # the same Input Dims text repeats: format it once
            for x, di in zip(cpu["ext"][c_rows].tolist(), cpu["dims"][c_rows].tolist(), strict=True):
                shape = formatted.get(di)
                if shape is None:
                    shape = formatted[di] = _format_dims(table.dims[di])
                if shape:
                    for k in wanted[x]:
                        shapes = slot_stats[k].shapes
                        if len(shapes) < MAX_SHAPES and shape not in shapes:
                            shapes.append(shape)
    result.kernels = stats
    result.total_duration_us = sum(k.total_us for k in stats.values())

    # -- CPU side arrays (for gap context and launch context) ------------------------
    cpu_s = cpu["ts"] - t_min
    cpu_e = cpu_s + cpu["dur"]
    cpu_names = _IdNames(cpu["name"], names)
    ann_rows = np.flatnonzero(ann["cat"] == user_ann)
    ann_s = ann["ts"][ann_rows] - t_min
    ann_e = ann_s + ann["dur"][ann_rows]
    ann_names = _IdNames(ann["name"][ann_rows], names)

    # -- launch context for names that do not say what they are -------------------
    if len(py["ts"]) or len(cpu["ts"]):
        py_by_tid: dict[Any, tuple[np.ndarray, np.ndarray, _IdNames]] = {}
        firsts = np.fromiter(first_row.values(), np.int64, len(first_row))
        f_launch, f_call = launch_of(sel["corr"][firsts])
        for (name, _), t_abs, call in zip(first_row.items(), f_launch.tolist(), f_call.tolist(), strict=True):
            ctx: dict[str, Any] = {"platform": table.platform}
            if call >= 0:
                ctx["launch_api"] = names[int(rt["name"][call])]
            if not math.isnan(t_abs) and _looks_bare(name):
                ts_launch = t_abs - t_min
                ctx["cpu_op"] = _innermost(cpu_s, cpu_e, cpu_names, ts_launch)
                tid = int(rt["tid"][call]) if call >= 0 else None
                if tid not in py_by_tid:
                    group = np.arange(len(py["ts"])) if tid is None else np.flatnonzero(py["tid"] == tid)
                    ps = py["ts"][group] - t_min
                    py_by_tid[tid] = (ps, ps + py["dur"][group], _IdNames(py["name"][group], names))
                ps, pe, pn = py_by_tid[tid]
                ctx["python_frames"] = _frames_at(ps, pe, pn, ts_launch)
            result.contexts[name] = ctx
    else:
        result.contexts = {name: {"platform": table.platform} for name in first_row}

    # -- GPU busy / idle per device ------------------------------------------------
    wall = sum(b - a for a, b in intervals)
    if len(act["ts"]):
        groups_all = member_group(act)
        launch_all, call_all = launch_of(act["corr"])
    for dev_id in sorted(np.unique(act["dev"]).tolist(), key=lambda i: table.devs[i]):
        dev = table.devs[dev_id]
        evs = np.flatnonzero((act["dev"] == dev_id) & (groups_all >= 0))
        if not len(evs):
            continue
        grp = groups_all[evs]
        starts = act["ts"][evs] - t_min
        durs = act["dur"][evs]
        ends = starts + durs
        if by_launch:
            starts_c, ends_c = starts, ends
        else:
            rel_lo = np.array([a - t_min for a, _ in intervals])[grp]
            rel_hi = np.array([b - t_min for _, b in intervals])[grp]
            starts_c, ends_c = np.clip(starts, rel_lo, rel_hi), np.clip(ends, rel_lo, rel_hi)
        ms, me, opener = _merge_intervals(starts_c, ends_c)
        busy = float(np.sum(me - ms))
        span = 0.0
        for g in np.unique(grp):
            sel_g = grp == g
            span += float(ends_c[sel_g].max() - starts_c[sel_g].min())
        gap_len = ms[1:] - me[:-1]
        if len(gap_len) and len(intervals) > 1:
            # a hole between two window ranges is not a gap
            gap_len = np.where(grp[opener[1:]] == grp[opener[:-1]], gap_len, 0.0)
        # launch records
        calls_d = call_all[evs]
        launch_ts = launch_all[evs] - t_min
        launch_dur = (
            np.where(calls_d >= 0, rt["dur"][np.maximum(calls_d, 0)], np.nan)
            if len(rt["dur"])
            else (np.full(len(evs), np.nan))
        )
        has = ~np.isnan(launch_ts)
        # host-bound gaps: the activity after the gap was launched after the gap began
        after_idx = opener[1:]
        gap_start = me[:-1]
        after_launch = launch_ts[after_idx]
        host_bound = after_launch >= gap_start
        host_idle = float(np.sum(np.where(host_bound & (gap_len > 0), gap_len, 0.0)))
        kinds = act["kernel"][evs]
        kl = has & kinds & ~np.isnan(launch_dur)
        result_dev = DeviceStats(
            device=dev,
            activities=len(evs),
            busy_us=busy,
            active_span_us=span,
            idle_us=max(0.0, span - busy),
            wall_us=wall,
            num_gaps=int(np.count_nonzero(gap_len > 0)),
            host_bound_idle_us=host_idle,
            launch_records=int(np.count_nonzero(has)),
            median_launch_to_start_us=float(np.median(starts[has] - launch_ts[has])) if has.any() else None,
            median_launch_call_us=float(np.median(launch_dur[kl])) if kl.any() else None,
            median_kernel_us=float(np.median(durs[kinds])) if kinds.any() else None,
            kernels_shorter_than_launch_pct=(
                100.0 * float(np.count_nonzero(durs[kl] < launch_dur[kl])) / int(np.count_nonzero(kl))
                if kl.any()
                else None
            ),
        )
        if len(gap_len) and options.top_gaps > 0:
            top = np.argsort(-gap_len, kind="stable")[: options.top_gaps]
            # the activity that ends each merged run before a gap: latest-ending one
            order_by_end = np.argsort(ends_c, kind="stable")
            sorted_ends = ends_c[order_by_end]
            for gi in top:
                if gap_len[gi] <= 0:
                    break
                g0 = float(me[gi])
                j = int(np.searchsorted(sorted_ends, g0, side="right")) - 1
                before = names[int(act["name"][evs[int(order_by_end[j])]])] if j >= 0 else ""
                after_row = int(evs[int(after_idx[gi])])
                call = int(call_all[after_row])
                lt = after_launch[gi]
                result_dev.gaps.append(
                    Gap(
                        device=dev,
                        start_us=g0,
                        duration_us=float(gap_len[gi]),
                        before=before,
                        after=names[int(act["name"][after_row])],
                        host_bound=None if math.isnan(lt) else bool(lt >= g0),
                        cpu_op=_innermost(cpu_s, cpu_e, cpu_names, g0),
                        annotation=_innermost(ann_s, ann_e, ann_names, g0),
                        launch_call=names[int(rt["name"][call])] if call >= 0 else None,
                    )
                )
        result.devices.append(result_dev)
    return result


def analyze_loaded(trace: LoadedTrace, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """The per-rank analysis of an already decoded trace."""
    selected = _cat_matcher(options.categories, options.ignore_categories)
    return analyze_table(table_from_loaded(trace, selected), rank, label, options)


def analyze_file(path: str, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """Load and analyze one rank; a broken file gives a result with ``error`` set, never an exception.

    The file is decoded chunk by chunk into compact columns (:mod:`magpie_core.trace.columns`),
    so memory stays well below the file's size.
    """
    import gc

    from magpie_core.trace.loader import TraceLoadError

    gc_was = gc.isenabled()
    gc.disable()  # millions of short-lived objects, none cyclic: skip the collector's repeated scans
    try:
        selected = _cat_matcher(options.categories, options.ignore_categories)
        table = load_table(Path(path), selected)
        return analyze_table(table, rank, label, options)
    except TraceLoadError as exc:
        return RankAnalysis(rank=rank, label=label, path=path, error=str(exc))
    except MemoryError:
        return RankAnalysis(rank=rank, label=label, path=path, error=f"{path}: out of memory while loading")
    finally:
        if gc_was:
            gc.enable()


#: plain-JSON traces at least this large are split across idle workers (smaller ones are not worth a process)
SPLIT_MIN_BYTES = 64 << 20


def splittable(path: Path | str, min_bytes: int | None = None) -> bool:
    """Whether ``path`` is a plain (not gzip) file of at least ``min_bytes`` (default SPLIT_MIN_BYTES),
    so it can be decoded in parts."""
    min_bytes = SPLIT_MIN_BYTES if min_bytes is None else min_bytes
    try:
        with Path(path).open("rb") as f:
            return f.read(2) != b"\x1f\x8b" and os.fstat(f.fileno()).st_size >= min_bytes
    except OSError:
        return False


def part_count(path: Path | str, workers: int, per_worker: int = 1) -> int:
    """How many byte-range parts to decode ``path`` in with ``workers`` processes (1: read it whole).

    Workers take parts as they become free (:mod:`magpie_core.fanout`), so with more parts per worker they
    finish closer together, but each part costs a little (its buffer, its transfer, the merge): on the
    555 MB benchmark trace gap analysis was fastest with one part per worker (1.56-1.72 s vs 1.70-1.90 s
    with two)."""
    if workers <= 1 or not splittable(path):
        return 1
    size = Path(path).stat().st_size
    return max(2, min(workers * per_worker, size // max(SPLIT_MIN_BYTES // 2, 1)))


def table_part(path: str, index: int, count: int, options: AnalysisOptions) -> EventTable | None:
    """Part ``index`` of ``count`` of a plain-JSON trace as columns (runs in a worker process);
    None when the file has to be read whole (see :func:`magpie_core.trace.columns.stream_table`)."""
    import gc

    gc_was = gc.isenabled()
    gc.disable()
    try:
        selected = _cat_matcher(options.categories, options.ignore_categories)
        return stream_table(Path(path), selected, part=(index, count))
    except (FallBack, OSError, MemoryError):
        return None
    finally:
        if gc_was:
            gc.enable()


def analyze_parts(
    path: str, rank: int, label: str, options: AnalysisOptions, parts: list[EventTable | None]
) -> RankAnalysis:
    """The analysis of one file from its parts (:func:`table_part`); any missing part means the whole file
    is analyzed again by :func:`analyze_file`, which also reports what is wrong with it."""
    if not parts or any(p is None for p in parts):
        return analyze_file(path, rank, label, options)
    return analyze_table(merge_tables(parts), rank, label, options)  # type: ignore[arg-type]
