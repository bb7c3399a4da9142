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
  CPU. ``launch_bound`` is set when idle time is at least 10% of the active span,
  at least half of it is host-bound, and the 5 longest host-bound gaps are less
  than half of that (a few long host stalls are not launch overhead).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from magpie_trace.columns import NONE, EventTable, category_matcher, collector_paused, load_table, merge_tables
from magpie_trace.validity import skipped_messages

__all__ = [
    "AnalysisOptions",
    "DeviceStats",
    "Gap",
    "KernelStat",
    "RankAnalysis",
    "WindowSpec",
    "analyze_file",
    "analyze_parts",
    "analyze_table",
]
MAX_SHAPES = 10

Columns = dict[str, np.ndarray]
Intervals = list[tuple[float, float]]


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
    """What one rank's analysis selects: event categories, shortest event, window, gaps reported."""

    categories: list[str] = field(default_factory=lambda: ["kernel", "gpu"])
    ignore_categories: list[str] = field(default_factory=lambda: ["gpu_user_annotation", "user_annotation"])
    min_duration_us: float = 0.0
    window: WindowSpec = field(default_factory=WindowSpec)
    top_gaps: int = 10


@dataclass
class KernelStat:
    """Calls and time of one kernel name."""

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
    """One hole in a device's busy time."""

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
    """Busy and idle time of one device, its launch records and largest gaps."""

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
    #: busy share per time bin over the device's active span (report timelines): start, bin width, percents
    timeline: dict[str, Any] = field(default_factory=dict)

    @property
    def idle_pct(self) -> float:
        return 100.0 * self.idle_us / self.active_span_us if self.active_span_us > 0 else 0.0

    @property
    def host_bound_idle_pct(self) -> float:
        return 100.0 * self.host_bound_idle_us / self.idle_us if self.idle_us > 0 else 0.0

    @property
    def launch_bound(self) -> bool:
        """Idle >= 10 % of the span, at least half of it waiting for the host, and spread over many gaps (launch
        overhead): when a few long host stalls (copies to the host, synchronizes) make most of it, it is not."""
        return self.waits_on_host and not self.host_stalls()

    @property
    def waits_on_host(self) -> bool:
        """Idle >= 10 % of the active span, at least half of it waiting for the host."""
        return self.idle_pct >= 10.0 and self.host_bound_idle_pct >= 50.0

    def host_stalls(self) -> list[Gap]:
        """Host-bound gaps each a tenth or more of the host-bound idle time, when together they are half of it or
        more and the device waits on the host (a few long stalls: copies to the host, synchronizes)."""
        long = [g for g in self.gaps if g.host_bound and g.duration_us >= 0.1 * self.host_bound_idle_us]
        enough = sum(g.duration_us for g in long) >= 0.5 * self.host_bound_idle_us
        return sorted(long, key=lambda g: -g.duration_us) if self.waits_on_host and enough else []


@dataclass
class RankAnalysis:
    """Everything the pipeline keeps of one rank's trace."""

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
    #: events skipped for a missing or unbelievable ts/dur: (category, reason code) -> count
    skipped: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def busy_us(self) -> float:
        return sum(d.busy_us for d in self.devices)

    @property
    def wall_us(self) -> float:
        return sum(d.wall_us for d in self.devices)


# -- small helpers -------------------------------------------------------------------------------------------------


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


def _merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals. Returns (merged_starts, merged_ends, index of the interval opening each merged one)."""
    if len(starts) < 2 or bool(np.all(starts[1:] >= starts[:-1])):
        order, s = None, starts  # a device's activity usually comes in start order: no sort, no copies
        run_end = np.maximum.accumulate(ends)
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
        run_end = np.maximum.accumulate(e, out=e)  # e is a copy of our own
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    # each run ends where the next one opens, the last one at the end
    merged_e = np.empty(len(first))
    np.take(run_end, first[1:] - 1, out=merged_e[:-1], mode="clip")  # indices are in range; "raise" would buffer
    merged_e[-1] = run_end[-1]
    return s[first], merged_e, first if order is None else order[first]


def _merge_simple(intervals: Intervals) -> Intervals:
    out: Intervals = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class _Ranges:
    """Named time ranges (CPU ops, annotations, Python frames) of one event group, relative to the trace start;
    ``key`` (a per-row column, e.g. thread or category ids) lets a question look at the rows with one value only.

    The relative starts and ends are computed when a question needs them, and only for the rows it needs: with
    ordered starts (the usual export order) the moments asked about, mostly early in the trace, need a short prefix
    of a group that may hold a million Python frames."""

    def __init__(self, ts: np.ndarray, dur: np.ndarray, t_min: float, name_ids: np.ndarray, names: list[str]) -> None:
        self.ts, self.dur, self.t_min = ts, dur, t_min
        self.name_ids, self.names = name_ids, names
        self.starts = np.zeros(0)  # of the first ``len(self.starts)`` rows
        self.ends = np.zeros(0)

    @cached_property
    def ordered(self) -> bool:
        """Starts never decrease (checked at the first question: a group may never be asked about)."""
        return len(self.ts) < 2 or bool(np.all(self.ts[1:] >= self.ts[:-1]))

    def _upto(self, t: float) -> int:
        """Rows [0, n) hold every range that starts at or before ``t``; their starts and ends are computed."""
        total = len(self.ts)
        if self.ordered:
            # every row after the first absolute ts past t + t_min (with a slack far beyond float rounding) has a
            # relative start past t: ts - t_min is monotone in ts
            slack = 1e-9 * (abs(t) + abs(self.t_min) + 1.0)
            need = int(np.searchsorted(self.ts, t + self.t_min + slack, side="right"))
        else:
            need = total
        done = len(self.starts)
        if need > done:
            upto = min(total, max(need, 2 * done))  # grow by doubling: later questions mostly need more
            more = self.ts[done:upto] - self.t_min
            self.starts = np.concatenate((self.starts, more))
            self.ends = np.concatenate((self.ends, more + self.dur[done:upto]))
        if not self.ordered:
            return total
        return int(np.searchsorted(self.starts[:need], t, side="right"))

    def containing(self, t: float, key: np.ndarray | None = None, value: int = 0) -> np.ndarray:
        """Rows of the ranges that contain ``t`` (with ``key == value`` when ``key`` is given), in row order."""
        n = self._upto(t)
        hit = (self.starts[:n] <= t) & (self.ends[:n] >= t)
        if key is not None:
            hit &= key[:n] == value
        return np.flatnonzero(hit)

    def name(self, row: int) -> str:
        return self.names[int(self.name_ids[row])]

    def innermost(self, t: float, key: np.ndarray | None = None, value: int = 0) -> str | None:
        """The name of the shortest range containing ``t`` (the first such in row order)."""
        idx = self.containing(t, key, value)
        if len(idx) == 0:
            return None
        return self.name(int(idx[np.argmin(self.ends[idx] - self.starts[idx])]))

    def frames_at(self, t: float, key: np.ndarray | None = None, value: int = 0, n: int = 4) -> list[str]:
        """The names of the ``n`` shortest ranges containing ``t``, shortest first."""
        idx = self.containing(t, key, value)
        if len(idx) == 0:
            return []
        idx = idx[np.argsort(self.ends[idx] - self.starts[idx])][:n]
        return [self.name(int(i)) for i in idx]


def _median(x: np.ndarray, overwrite: bool = False) -> float:
    """``float(np.median(x))`` of a non-empty 1-D float array, the same way (partition, then the middle value or
    the mean of the two middle ones; nan when any is nan) without the ``numpy.ma`` import np.median does (~7 ms
    once per process). ``overwrite``: ``x`` is the caller's scratch, partitioned in place instead of copied."""
    n, h = len(x), len(x) // 2
    kth = [h - 1, h, n - 1] if n % 2 == 0 else [h, n - 1]
    if overwrite:
        x.partition(kth)
        part = x
    else:
        part = np.partition(x, kth)
    if np.isnan(part[-1]):
        return math.nan
    return float(part[h]) if n % 2 else float(np.mean(part[h - 1 : h + 1]))


def _looks_bare(name: str) -> bool:
    return not (" " in name or "<" in name or "(" in name or name.startswith("_Z"))


def _distinct_ids(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` for ids in ``range(n)`` (interned names): counting, not sorting."""
    uniq = np.flatnonzero(np.bincount(ids, minlength=n))
    slot = np.zeros(max(n, 1), np.int64)
    slot[uniq] = np.arange(len(uniq))
    return uniq, slot[ids]


def _top_indices(values: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-values, kind="stable")[:k]``: the k largest, ties by index, without sorting all of them."""
    if len(values) <= k:
        return np.argsort(-values, kind="stable")
    kth = _kth_largest_bound(values, k)
    candidates = np.flatnonzero(values >= kth)  # every value tied with the k-th largest stays in the running
    return candidates[np.argsort(-values[candidates], kind="stable")][:k]


def _kth_largest_bound(values: np.ndarray, k: int, chunk: int = 512) -> float:
    """A value at most the k-th largest of ``values`` (n > k), and usually close to it: the k-th largest of the
    maxima of ``chunk``-sized slices (k slices hold k values at least that large). Cheaper than partitioning a copy
    of every value; the exact k-th largest when some value is nan or there are too few slices."""
    whole = len(values) // chunk * chunk
    if whole // chunk > k:
        maxima = values[:whole].reshape(-1, chunk).max(axis=1)
        if whole < len(values):
            maxima = np.append(maxima, values[whole:].max())
        if not np.isnan(maxima).any():
            return float(np.partition(maxima, len(maxima) - k)[len(maxima) - k])
    return float(np.partition(values, len(values) - k)[len(values) - k])


def _last_index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys (NONE left out) and, for each, the index of its last occurrence."""
    if len(keys) == 0:
        return keys, np.zeros(0, np.int64)
    rev = keys[::-1]
    uniq, first_rev = np.unique(rev, return_index=True)
    last = len(keys) - 1 - first_rev
    keep = uniq != NONE
    return uniq[keep], last[keep]


def _find(uniq: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each key, a position in the sorted, non-empty ``uniq`` and whether the key is there. ``uniq`` comes
    from :func:`_last_index`, without NONE, so a NONE key is never found."""
    pos = np.searchsorted(uniq, keys)
    np.minimum(pos, len(uniq) - 1, out=pos)
    return pos, uniq[pos] == keys


# -- the pieces of one rank's analysis -------------------------------------------------------------------------------


class _Launches:
    """Which runtime call launched a GPU event: the last call with its correlation id, or else the flow start."""

    def __init__(self, rt: Columns, flow: Columns) -> None:
        self.rt = rt
        self.flow = flow
        self.rt_keys, self.rt_row = _last_index(rt["corr"])
        self.fl_keys, self.fl_row = _last_index(flow["id"])
        # launch time per distinct key: a lookup gathers from these small arrays only
        self.rt_ts, self.fl_ts = rt["ts"][self.rt_row], flow["ts"][self.fl_row]

    def of(self, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(absolute launch time or nan, row of the runtime call or -1) for each correlation id."""
        # the kernels of one launch (a CUDA/HIP graph's) share its correlation id and come one after another: look up
        # each run of equal ids once (the binary searches were most of the cost) and repeat the answers
        if len(corr) > 1:
            heads = np.flatnonzero(corr[1:] != corr[:-1])
            if len(heads) < len(corr) // 4:
                lengths = np.diff(heads, prepend=-1, append=len(corr) - 1)
                t, call = self._lookup(np.append(corr[heads], corr[-1]))
                return np.repeat(t, lengths), np.repeat(call, lengths)
        return self._lookup(corr)

    def _lookup(self, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`of`, one binary search per id."""
        # gathers written into the result arrays and fixed up in place: a large table's every per-event temporary
        # is fresh memory (page faults), so fewer of them is most of the cost
        if len(self.fl_keys) and len(corr):
            pos, found = _find(self.fl_keys, corr)
            t = np.take(self.fl_ts, pos)
            t[~found] = np.nan
        else:
            t = np.full(len(corr), np.nan)
        if len(self.rt_keys) and len(corr):
            pos, found = _find(self.rt_keys, corr)
            call = np.take(self.rt_row, pos)
            np.copyto(t, np.take(self.rt_ts, pos), where=found)  # the runtime call's time wins over the flow start's
            call[~found] = -1
        else:
            call = np.full(len(corr), -1, np.int64)
        return t, call


@dataclass
class _Window:
    """The analyzed time ranges (absolute timestamps) and how events are placed in them."""

    intervals: Intervals
    full: bool  # the whole trace: every event is inside
    # CPU-side ranges (no GPU-side copy of the annotation): a GPU event belongs to the
    # range in which it was *launched*, since it runs later than the host code around it.
    by_launch: bool
    note: str | None = None
    lo: np.ndarray = field(init=False)  # range starts
    hi: np.ndarray = field(init=False)  # range ends

    def __post_init__(self) -> None:
        self.lo = np.array([a for a, _ in self.intervals], dtype=np.float64)
        self.hi = np.array([b for _, b in self.intervals], dtype=np.float64)

    def group_of(self, ts: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Index of the window range each event falls in (inclusive overlap, as AMD Magpie); -1 outside."""
        if self.full:
            return np.zeros(len(ts), np.int64)
        if not self.intervals:
            return np.full(len(ts), -1, np.int64)
        i = np.searchsorted(self.lo, end, side="right") - 1
        j = np.maximum(i, 0)
        return np.where((i >= 0) & (ts <= self.hi[j]) & (end >= self.lo[j]), i, -1)

    def members(self, group: Columns, launches: _Launches) -> np.ndarray:
        """The window range of each event of ``group`` (by launch time for CPU-side ranges); -1 outside."""
        ts = group["ts"]
        if self.by_launch:
            t, _ = launches.of(group["corr"])
            t = np.where(np.isnan(t), ts, t)
            return self.group_of(t, t)
        return self.group_of(ts, ts + group["dur"])


def _annotation_window(table: EventTable, pattern: str) -> _Window:
    """The ranges of the annotations (or record_function cpu_ops) named ``pattern``: GPU-side copies when the
    trace has them, else the CPU-side ranges."""
    names = table.names
    ann, cpu = table["ann"], table["cpu"]

    def hit(name: str) -> bool:
        return name == pattern or ("*" in pattern and fnmatch.fnmatchcase(name, pattern))

    ids = np.unique(np.concatenate([ann["name"], cpu["name"]]))
    hits = ids[np.array([hit(names[i]) for i in ids.tolist()], dtype=bool)] if len(ids) else ids

    def chosen_rows(group: Columns, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask & np.isin(group["name"], hits))

    is_gpu = ann["cat"] == {c: i for i, c in enumerate(table.cats)}.get("gpu_user_annotation", -1)
    gpu_side = chosen_rows(ann, is_gpu)
    src, rows = (ann, gpu_side) if len(gpu_side) else (ann, chosen_rows(ann, ~is_gpu))
    if not len(rows):
        # record_function ranges may also be exported as cpu_op events
        src, rows = cpu, chosen_rows(cpu, np.ones(len(cpu["name"]), bool))
    if not len(rows):
        return _Window([], full=False, by_launch=False, note=f"annotation {pattern!r} not found in this trace")
    a_ts = src["ts"][rows]
    intervals = _merge_simple(list(zip(a_ts.tolist(), (a_ts + src["dur"][rows]).tolist(), strict=True)))
    side = "GPU" if len(gpu_side) else "CPU"
    note = f"{len(rows)} {side}-side range(s) named {pattern!r}"
    return _Window(intervals, full=False, by_launch=side == "CPU", note=note)


def _window(table: EventTable, win: WindowSpec) -> _Window:
    """The window of ``win`` in this trace: annotation ranges, else microseconds, else percentages."""
    t_min, t_max = table.t_min, table.t_max
    if win.annotation:
        return _annotation_window(table, win.annotation)
    if win.start_us is not None or win.end_us is not None:
        a = t_min + (win.start_us or 0.0)
        b = t_min + win.end_us if win.end_us is not None else t_max
        intervals = [(a, min(b, t_max))] if b > a else []
    else:
        span = t_max - t_min
        intervals = [(t_min + span * win.start_pct / 100.0, t_min + span * win.end_pct / 100.0)]
    return _Window(intervals, full=intervals == [(t_min, t_max)], by_launch=False)


def _kernel_stats(
    table: EventTable, options: AnalysisOptions, window: _Window, launches: _Launches
) -> tuple[dict[str, KernelStat], dict[str, int]]:
    """Statistics per kernel name of the selected events in the window (in order of first appearance), and
    the row of each name's first event."""
    sel = table["sel"]
    keep = sel["dur"] >= options.min_duration_us
    if not window.full:
        keep &= window.members(sel, launches) >= 0
    stats: dict[str, KernelStat] = {}
    first_row: dict[str, int] = {}
    if not keep.any():
        return stats, first_row
    # every event kept (the usual case): the columns themselves, no gathered copies
    rows = None if keep.all() else np.flatnonzero(keep)
    d = sel["dur"] if rows is None else sel["dur"][rows]
    uniq, inv = _distinct_ids(sel["name"] if rows is None else sel["name"][rows], len(table.names))
    calls = np.bincount(inv, minlength=len(uniq))
    total = np.bincount(inv, weights=d, minlength=len(uniq))  # accumulates in event order, as a loop would
    sumsq = np.bincount(inv, weights=d * d, minlength=len(uniq))
    lo = np.full(len(uniq), math.inf)
    np.minimum.at(lo, inv, d)
    hi = np.zeros(len(uniq))
    np.maximum.at(hi, inv, d)
    first = np.full(len(uniq), len(d), np.int64)
    np.minimum.at(first, inv, np.arange(len(d)))
    slot_stats: list[KernelStat] = [None] * len(uniq)  # type: ignore[list-item]
    for k in np.argsort(first, kind="stable").tolist():
        name = table.names[int(uniq[k])]
        ks = KernelStat(name, int(calls[k]), float(total[k]), float(sumsq[k]), float(lo[k]), float(hi[k]))
        stats[name] = ks
        slot_stats[k] = ks
        first_row[name] = int(first[k]) if rows is None else int(rows[first[k]])
    _add_shapes(table, sel["ext"] if rows is None else sel["ext"][rows], inv, slot_stats)
    return stats, first_row


def _add_shapes(table: EventTable, ext: np.ndarray, inv: np.ndarray, slot_stats: list[KernelStat]) -> None:
    """Input shapes of each kernel: the Input Dims of the CPU ops with the kernel's External id, in CPU-op order,
    the first MAX_SHAPES distinct ones."""
    cpu = table["cpu"]
    has = ext != NONE
    if not has.any() or not len(cpu["ext"]):
        return
    slots, c_rows = _ops_with_dims(cpu, ext[has], inv[has])
    if not len(c_rows):
        return
    dims = cpu["dims"][c_rows]
    # only the first CPU op of each (kernel, Input Dims) pair can add a shape: keep those, in CPU-op order
    order = np.argsort(c_rows, kind="stable")
    slots, dims = slots[order], dims[order]
    _, first = np.unique(slots.astype(np.int64) * len(table.dims) + dims, return_index=True)
    first.sort()
    formatted: dict[int, str] = {}  # the same Input Dims text repeats: format it once
    for k, di in zip(slots[first].tolist(), dims[first].tolist(), strict=True):
        shape = formatted.get(di)
        if shape is None:
            shape = formatted[di] = _format_dims(table.dims[di])
        shapes = slot_stats[k].shapes
        if shape and len(shapes) < MAX_SHAPES and shape not in shapes:
            shapes.append(shape)


def _ops_with_dims(cpu: Columns, ext: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (kernel slot, CPU-op row) pair where the op has Input Dims and the kernel's event's External id (an
    id may name several ops, and several events an op): a join on the id, by sorting the ops' ids."""
    c_rows = np.flatnonzero((cpu["dims"] >= 0) & (cpu["ext"] != NONE))
    ids = cpu["ext"][c_rows]
    if len(ids) and bool(np.all(ids[1:] > ids[:-1])):
        # ids in order and distinct (the usual export: one op per id): at most one op per event, one search
        pos = np.searchsorted(ids, ext)
        np.minimum(pos, len(ids) - 1, out=pos)
        event = np.flatnonzero(ids[pos] == ext)
        return slots[event], c_rows[pos[event]]
    by_id = np.argsort(ids, kind="stable")
    ids = ids[by_id]
    lo, hi = np.searchsorted(ids, ext, "left"), np.searchsorted(ids, ext, "right")
    n = hi - lo
    event = np.repeat(np.arange(len(ext)), n)
    nth = np.arange(len(event)) - np.repeat(np.cumsum(n) - n, n)  # 0, 1, ... within each event's matches
    return slots[event], c_rows[by_id[np.repeat(lo, n) + nth]]


class _HostRanges:
    """CPU ops and user annotations, relative to the trace start: what the host was doing at a moment."""

    def __init__(self, table: EventTable) -> None:
        cpu, ann = table["cpu"], table["ann"]
        self.cpu = _Ranges(cpu["ts"], cpu["dur"], table.t_min, cpu["name"], table.names)
        self.ann = _Ranges(ann["ts"], ann["dur"], table.t_min, ann["name"], table.names)
        self.ann_cat = ann["cat"]
        self.user_ann = {c: i for i, c in enumerate(table.cats)}.get("user_annotation", -1)

    def cpu_op_at(self, t: float) -> str | None:
        return self.cpu.innermost(t)

    def annotation_at(self, t: float) -> str | None:
        return self.ann.innermost(t, self.ann_cat, self.user_ann)


def _launch_contexts(
    table: EventTable, first_row: dict[str, int], launches: _Launches, host: _HostRanges
) -> dict[str, dict[str, Any]]:
    """What launched each kernel's first event (runtime call; for names that do not say what they are, the CPU
    op and Python frames at that moment): context for the kernel-name parsers."""
    cpu, py, rt, sel = table["cpu"], table["py"], table["rt"], table["sel"]
    if not (len(py["ts"]) or len(cpu["ts"])):
        return {name: {"platform": table.platform} for name in first_row}
    names, t_min = table.names, table.t_min
    frames = _Ranges(py["ts"], py["dur"], t_min, py["name"], names)
    contexts: dict[str, dict[str, Any]] = {}
    firsts = np.fromiter(first_row.values(), np.int64, len(first_row))
    f_launch, f_call = launches.of(sel["corr"][firsts])
    for name, t_abs, call in zip(first_row, f_launch.tolist(), f_call.tolist(), strict=True):
        ctx: dict[str, Any] = {"platform": table.platform}
        if call >= 0:
            ctx["launch_api"] = names[int(rt["name"][call])]
        if not math.isnan(t_abs) and _looks_bare(name):
            ts_launch = t_abs - t_min
            ctx["cpu_op"] = host.cpu_op_at(ts_launch)
            # the frames of the launching thread (all threads' when no runtime call is known)
            tid = (py["tid"], int(rt["tid"][call])) if call >= 0 else (None, 0)
            ctx["python_frames"] = frames.frames_at(ts_launch, *tid)
        contexts[name] = ctx
    return contexts


@dataclass
class _Activity:
    """One device's GPU activity in the window, relative to the trace start, merged into busy runs."""

    rows: np.ndarray | None  # rows of the ``act`` columns; None: all of them (one device, all in the window)
    groups: np.ndarray  # window range of each
    starts: np.ndarray
    durs: np.ndarray
    starts_c: np.ndarray  # clipped to the window range (not with by-launch windows)
    ends_c: np.ndarray
    launch_ts: np.ndarray  # nan: no launch record
    calls: np.ndarray  # row of the launching runtime call, -1: none
    merged_s: np.ndarray  # the union of the activity intervals
    merged_e: np.ndarray
    opener: np.ndarray  # activity that opens each merged run
    gap_len: np.ndarray  # hole before each merged run after the first (0: not a gap)

    def pick(self, column: np.ndarray) -> np.ndarray:
        """This device's values of an ``act`` column (the column itself when it has all rows: never write to it)."""
        return column if self.rows is None else column[self.rows]

    def row(self, i: int) -> int:
        """The ``act`` row of this device's ``i``-th activity."""
        return i if self.rows is None else int(self.rows[i])


def _device_activity(
    table: EventTable,
    rows: np.ndarray | None,
    groups: np.ndarray,
    launch: tuple[np.ndarray, np.ndarray],
    window: _Window,
) -> _Activity:
    act, t_min = table["act"], table.t_min
    # rows None (every row): the columns as they are, no gathered copies
    starts = (act["ts"] if rows is None else act["ts"][rows]) - t_min
    durs = act["dur"] if rows is None else act["dur"][rows]
    ends = starts + durs
    if window.by_launch:
        starts_c, ends_c = starts, ends
    else:
        rel_lo = np.array([a - t_min for a, _ in window.intervals])
        rel_hi = np.array([b - t_min for _, b in window.intervals])
        if len(window.intervals) == 1:  # one range (the usual window): clip to its bounds, no per-event copies
            rel_lo, rel_hi = rel_lo[0], rel_hi[0]
        else:
            rel_lo, rel_hi = rel_lo[groups], rel_hi[groups]
        if np.ndim(rel_lo) == 0:
            # each clipped only when some of it sticks out (the whole trace: at most ends, by float rounding)
            inside = starts.min() >= rel_lo and starts.max() <= rel_hi
            starts_c = starts if inside else np.clip(starts, rel_lo, rel_hi)
            inside = ends.min() >= rel_lo and ends.max() <= rel_hi
            ends_c = ends if inside else np.clip(ends, rel_lo, rel_hi, out=ends)  # ends: a copy of our own
        else:
            starts_c, ends_c = np.clip(starts, rel_lo, rel_hi), np.clip(ends, rel_lo, rel_hi)
    ms, me, opener = _merge_intervals(starts_c, ends_c)
    gap_len = ms[1:] - me[:-1]
    if len(gap_len) and len(window.intervals) > 1:
        # a hole between two window ranges is not a gap
        gap_len = np.where(groups[opener[1:]] == groups[opener[:-1]], gap_len, 0.0)
    launch_ts = (launch[0] if rows is None else launch[0][rows]) - t_min
    calls = launch[1] if rows is None else launch[1][rows]
    return _Activity(rows, groups, starts, durs, starts_c, ends_c, launch_ts, calls, ms, me, opener, gap_len)


def _device_stats(table: EventTable, device: str, a: _Activity, wall: float) -> DeviceStats:
    """Busy, idle and host-bound time of one device, and its launch-record medians."""
    rt_dur = table["rt"]["dur"]
    busy = float(np.sum(a.merged_e - a.merged_s))
    in_groups = np.flatnonzero(np.bincount(a.groups))  # window ranges with activity (groups are >= 0 here)
    if len(in_groups) == 1:  # one range: no per-range masks
        span = float(a.ends_c.max() - a.starts_c.min())
    else:
        span = sum(float(a.ends_c[a.groups == g].max() - a.starts_c[a.groups == g].min()) for g in in_groups)
    if len(rt_dur):
        launch_dur = np.take(rt_dur, a.calls, mode="clip")  # -1 (no call) reads row 0, set to nan below
        launch_dur[a.calls < 0] = np.nan
    else:
        launch_dur = np.full(len(a.starts), np.nan)
    has = ~np.isnan(a.launch_ts)
    all_have = bool(has.all())
    # host-bound gaps: the activity after the gap was launched after the gap began
    host_bound = a.launch_ts[a.opener[1:]] >= a.merged_e[:-1]
    host_idle = float(np.sum(np.where(host_bound & (a.gap_len > 0), a.gap_len, 0.0)))
    kinds = a.pick(table["act"]["kernel"])
    all_kernels = bool(kinds.all())
    kl = has & kinds & ~np.isnan(launch_dur)
    # each median's input is a fresh array (partitioned in place) except the durations of an all-kernel device
    to_start = a.starts - a.launch_ts if all_have else a.starts[has] - a.launch_ts[has]
    kernel_durs = a.durs if all_kernels else a.durs[kinds]
    return DeviceStats(
        device=device,
        activities=len(a.starts),
        busy_us=busy,
        active_span_us=span,
        idle_us=max(0.0, span - busy),
        wall_us=wall,
        num_gaps=int(np.count_nonzero(a.gap_len > 0)),
        host_bound_idle_us=host_idle,
        launch_records=int(np.count_nonzero(has)),
        median_launch_to_start_us=_median(to_start, overwrite=True) if len(to_start) else None,
        median_launch_call_us=_median(launch_dur[kl], overwrite=True) if kl.any() else None,
        median_kernel_us=_median(kernel_durs, overwrite=not all_kernels) if len(kernel_durs) else None,
        kernels_shorter_than_launch_pct=(
            # nan launch durations are outside kl, and a comparison with nan is False anyway
            100.0 * float(np.count_nonzero((a.durs < launch_dur) & kl)) / int(np.count_nonzero(kl))
            if kl.any()
            else None
        ),
    )


def _largest_gaps(table: EventTable, device: str, a: _Activity, host: _HostRanges, top_gaps: int) -> list[Gap]:
    """The ``top_gaps`` longest gaps of one device, longest first, with what ran around them."""
    if not len(a.gap_len) or top_gaps <= 0:
        return []
    act, rt, names = table["act"], table["rt"], table.names
    after_idx = a.opener[1:]
    gaps: list[Gap] = []
    for gi in _top_indices(a.gap_len, top_gaps).tolist():
        if a.gap_len[gi] <= 0:
            break
        g0 = float(a.merged_e[gi])
        # the activity before the gap: the one whose end closes the busy run (the run's end is one of its
        # activities' ends and every later activity ends after it); the last such in event order
        ending = np.flatnonzero(a.ends_c == g0)
        before = names[int(act["name"][a.row(int(ending[-1]))])] if len(ending) else ""
        after = int(after_idx[gi])
        call = int(a.calls[after])
        lt = a.launch_ts[after]
        gaps.append(
            Gap(
                device=device,
                start_us=g0,
                duration_us=float(a.gap_len[gi]),
                before=before,
                after=names[int(act["name"][a.row(after)])],
                host_bound=None if math.isnan(lt) else bool(lt >= g0),
                cpu_op=host.cpu_op_at(g0),
                annotation=host.annotation_at(g0),
                launch_call=names[int(rt["name"][call])] if call >= 0 else None,
            )
        )
    return gaps


def busy_timeline(starts: np.ndarray, ends: np.ndarray, bins: int = 240) -> dict[str, Any]:
    """The busy share (percent) of ``bins`` equal time bins from the first start to the last end of sorted,
    disjoint busy intervals: a compact busy/idle timeline for reports."""
    if not len(starts):
        return {}
    t0, t1 = float(starts[0]), float(ends[-1])
    width = (t1 - t0) / bins if t1 > t0 else 1.0
    edges = t0 + width * np.arange(bins + 1)
    before = np.empty(len(starts) + 1)  # busy time before each interval
    before[0] = 0.0
    np.cumsum(ends - starts, out=before[1:])

    def busy_until(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(starts, t, side="right") - 1
        inside = np.clip(t - starts[np.maximum(i, 0)], 0.0, (ends - starts)[np.maximum(i, 0)])
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)

    share = np.diff(busy_until(edges)) / width * 100.0
    return {"start_us": t0, "bin_us": width, "busy_pct": np.round(np.clip(share, 0, 100), 1).tolist()}


def _devices(
    table: EventTable, options: AnalysisOptions, window: _Window, launches: _Launches, host: _HostRanges
) -> list[DeviceStats]:
    """GPU busy / idle time and largest gaps per device, devices by name."""
    act = table["act"]
    if not len(act["ts"]):
        return []
    wall = sum(b - a for a, b in window.intervals)
    groups_all = window.members(act, launches)
    launch_all = launches.of(act["corr"])
    out = []
    dev_ids = np.flatnonzero(np.bincount(act["dev"])).tolist()
    # one device with every event in the window (the usual trace): its rows are all rows, taken without copies
    every_row = len(dev_ids) == 1 and (window.full or bool(np.all(groups_all >= 0)))
    for dev_id in sorted(dev_ids, key=lambda i: table.devs[i]):
        dev = table.devs[dev_id]
        if every_row:
            activity = _device_activity(table, None, groups_all, launch_all, window)
        else:
            rows = np.flatnonzero((act["dev"] == dev_id) & (groups_all >= 0))
            if not len(rows):
                continue
            activity = _device_activity(table, rows, groups_all[rows], launch_all, window)
        stats = _device_stats(table, dev, activity, wall)
        stats.gaps = _largest_gaps(table, dev, activity, host, options.top_gaps)
        stats.timeline = busy_timeline(activity.merged_s, activity.merged_e)
        out.append(stats)
    return out


# -- entry points ----------------------------------------------------------------------------------------------------


def analyze_table(table: EventTable, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """The per-rank analysis over the columns of one trace (see the module docstring for definitions)."""
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
    result.skipped = dict(table.skipped)
    if table.t_min is math.inf or not any(len(cols["ts"]) for g, cols in table.groups.items() if g != "flow"):
        result.error = _unusable(table)
        return result
    result.trace_start_ts = table.t_min
    result.trace_span_us = table.t_max - table.t_min
    window = _window(table, options.window)
    result.window_note = window.note
    if window.intervals:
        result.window_us = (window.intervals[0][0] - table.t_min, window.intervals[-1][1] - table.t_min)
    launches = _Launches(table["rt"], table["flow"])
    result.kernels, first_row = _kernel_stats(table, options, window, launches)
    result.total_duration_us = sum(k.total_us for k in result.kernels.values())
    host = _HostRanges(table)
    result.contexts = _launch_contexts(table, first_row, launches, host)
    result.devices = _devices(table, options, window, launches, host)
    return result


def _unusable(table: EventTable) -> str:
    """Why a trace gave nothing to analyze: an error, never an empty success."""
    why = "; ".join(skipped_messages(table.skipped)) or "no complete (ph X) events of a category gap analysis reads"
    return f"{table.path}: no usable events ({table.num_events:,} read): {why}"


def analyze_file(path: str, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """Load and analyze one rank; a broken file gives a result with ``error`` set, never an exception.

    The file is decoded chunk by chunk into compact columns (:mod:`magpie_trace.columns`),
    so memory stays well below the file's size.
    """
    from magpie_trace.loader import TraceLoadError

    try:
        with collector_paused():
            table = load_table(Path(path), category_matcher(options.categories, options.ignore_categories))
            return analyze_table(table, rank, label, options)
    except TraceLoadError as exc:
        return RankAnalysis(rank=rank, label=label, path=path, error=str(exc))
    except MemoryError:
        return RankAnalysis(rank=rank, label=label, path=path, error=f"{path}: out of memory while loading")


def analyze_parts(
    path: str, rank: int, label: str, options: AnalysisOptions, parts: list[EventTable | None]
) -> RankAnalysis:
    """The analysis of one file from its parts (:func:`magpie_trace.columns.table_part`); any missing part
    means the whole file is analyzed again by :func:`analyze_file`, which also reports what is wrong with it."""
    if not parts or any(p is None for p in parts):
        return analyze_file(path, rank, label, options)
    return analyze_table(merge_tables(parts), rank, label, options)  # type: ignore[arg-type]
