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

import bisect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from magpie_core.trace.loader import Event, LoadedTrace, load_trace

GPU_ACTIVITY_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "gpu_kernel"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "runtime", "driver"})
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})
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


def _format_dims(raw: msgspec.Raw) -> str:
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


def _innermost(starts: np.ndarray, ends: np.ndarray, names: list[str], t: float) -> str | None:
    if len(starts) == 0:
        return None
    mask = (starts <= t) & (ends >= t)
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return None
    best = idx[np.argmin(ends[idx] - starts[idx])]
    return names[int(best)]


def _frames_at(starts: np.ndarray, ends: np.ndarray, names: list[str], t: float, n: int = 4) -> list[str]:
    if len(starts) == 0:
        return []
    idx = np.flatnonzero((starts <= t) & (ends >= t))
    if len(idx) == 0:
        return []
    idx = idx[np.argsort(ends[idx] - starts[idx])][:n]
    return [names[int(i)] for i in idx]


def _looks_bare(name: str) -> bool:
    return not (" " in name or "<" in name or "(" in name or name.startswith("_Z"))


def analyze_loaded(trace: LoadedTrace, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    events: list[Event] = trace.events
    result = RankAnalysis(
        rank=rank,
        label=label,
        path=str(trace.path),
        platform=trace.platform,
        size_bytes=trace.size_bytes,
        num_events=len(events),
        dist_rank=trace.rank,
        world_size=trace.world_size,
    )
    selected = _cat_matcher(options.categories, options.ignore_categories)
    win = options.window
    ann_pattern = win.annotation

    # -- one pass: split events into the few groups the analyses need --------
    t_min = math.inf
    t_max = -math.inf
    sel: list[Event] = []  # events selected for kernel statistics
    act: list[Event] = []  # GPU activity for busy/idle
    cpu_ops: list[Event] = []
    launches: dict[int, Event] = {}  # correlation -> runtime call
    flow_starts: dict[int | str, float] = {}
    annotations: list[Event] = []
    python_fns: list[Event] = []
    for e in events:
        ts = e.ts
        if ts is None:
            continue
        end = ts + e.dur
        if ts < t_min:
            t_min = ts
        if end > t_max:
            t_max = end
        ph = e.ph
        if ph == "X":
            cat = e.cat
            if cat == "cpu_op":
                cpu_ops.append(e)
            elif cat == "python_function":
                python_fns.append(e)
            elif cat in RUNTIME_CATS:
                if e.args is not None and e.args.correlation is not None:
                    launches[e.args.correlation] = e
            else:
                if cat in GPU_ACTIVITY_CATS:
                    act.append(e)
                elif cat in ANNOTATION_CATS:
                    annotations.append(e)
            if selected[cat]:
                sel.append(e)
        elif ph == "s" and e.cat == "ac2g" and e.id is not None:
            flow_starts[e.id] = ts
    if t_min is math.inf:
        result.error = None
        result.window_note = "no timed events"
        return result
    result.trace_start_ts = t_min
    result.trace_span_us = t_max - t_min

    # -- window -----------------------------------------------------------------
    intervals: list[tuple[float, float]]
    if ann_pattern:
        import fnmatch

        def hit(name: str) -> bool:
            return name == ann_pattern or ("*" in ann_pattern and fnmatch.fnmatchcase(name, ann_pattern))

        gpu_side = [a for a in annotations if a.cat == "gpu_user_annotation" and hit(a.name)]
        cpu_side = [a for a in annotations if a.cat != "gpu_user_annotation" and hit(a.name)]
        chosen = gpu_side or cpu_side
        if not chosen:
            # record_function ranges may also be exported as cpu_op events
            chosen = [c for c in cpu_ops if hit(c.name)]
        if not chosen:
            result.window_note = f"annotation {ann_pattern!r} not found in this trace"
            intervals = []
        else:
            intervals = _merge_simple([(a.ts, a.ts + a.dur) for a in chosen])  # type: ignore[operator]
            side = "GPU" if gpu_side else "CPU"
            result.window_note = f"{len(chosen)} {side}-side range(s) named {ann_pattern!r}"
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
    iv_starts = [a for a, _ in intervals]

    def group_of(ts: float, end: float) -> int:
        """Index of the window range an event falls in (inclusive overlap, as AMD Magpie); -1 outside."""
        if full:
            return 0
        i = bisect.bisect_right(iv_starts, end) - 1
        return i if i >= 0 and ts <= intervals[i][1] and end >= intervals[i][0] else -1

    def in_window(ts: float, end: float) -> bool:
        return group_of(ts, end) >= 0

    def member_group(e: Event) -> int:
        if by_launch:
            a = e.args
            call = launches.get(a.correlation) if a is not None and a.correlation is not None else None
            t = call.ts if call is not None else (flow_starts.get(a.correlation) if a is not None else None)
            if t is None:
                t = e.ts
            return group_of(t, t)  # type: ignore[arg-type]
        return group_of(e.ts, e.ts + e.dur)  # type: ignore[operator]

    # -- kernel statistics ----------------------------------------------------------
    need_shape: dict[int, list[KernelStat]] = {}
    stats: dict[str, KernelStat] = {}
    min_dur = options.min_duration_us
    first_seen: dict[str, Event] = {}
    for e in sel:
        d = e.dur
        if d < min_dur or (not full and member_group(e) < 0):
            continue
        name = e.name
        ks = stats.get(name)
        if ks is None:
            ks = stats[name] = KernelStat(name)
            first_seen[name] = e
        ks.calls += 1
        ks.total_us += d
        ks.sumsq += d * d
        if d < ks.min_us:
            ks.min_us = d
        if d > ks.max_us:
            ks.max_us = d
        if e.args is not None and e.args.external_id is not None and len(ks.shapes) < MAX_SHAPES:
            need_shape.setdefault(e.args.external_id, []).append(ks)
    if need_shape:
        formatted: dict[bytes, str] = {}  # the same Input Dims text repeats: format it once
        for c in cpu_ops:
            a = c.args
            if a is None or a.external_id is None or not a.input_dims:
                continue
            wanted = need_shape.get(a.external_id)
            if wanted is None or all(len(ks.shapes) >= MAX_SHAPES for ks in wanted):
                continue
            key = bytes(a.input_dims)
            shape = formatted.get(key)
            if shape is None:
                shape = formatted[key] = _format_dims(a.input_dims)
            if shape:
                for ks in wanted:
                    if shape not in ks.shapes and len(ks.shapes) < MAX_SHAPES:
                        ks.shapes.append(shape)
    result.kernels = stats
    result.total_duration_us = sum(k.total_us for k in stats.values())

    # -- CPU side arrays (for gap context and launch context) ------------------------
    cpu_s = np.fromiter((c.ts - t_min for c in cpu_ops), float, len(cpu_ops))  # type: ignore[operator]
    cpu_e = cpu_s + np.fromiter((c.dur for c in cpu_ops), float, len(cpu_ops))
    cpu_names = [c.name for c in cpu_ops]
    ann_cpu = [a for a in annotations if a.cat == "user_annotation"]
    ann_s = np.fromiter((a.ts - t_min for a in ann_cpu), float, len(ann_cpu))  # type: ignore[operator]
    ann_e = ann_s + np.fromiter((a.dur for a in ann_cpu), float, len(ann_cpu))
    ann_names = [a.name for a in ann_cpu]

    def launch_of(e: Event) -> tuple[float | None, Event | None]:
        a = e.args
        if a is None or a.correlation is None:
            return None, None
        call = launches.get(a.correlation)
        if call is not None:
            return call.ts - t_min, call  # type: ignore[operator]
        flow = flow_starts.get(a.correlation)
        return (flow - t_min if flow is not None else None), None

    # -- launch context for names that do not say what they are -------------------
    if python_fns or cpu_ops:
        py_by_tid: dict[Any, tuple[np.ndarray, np.ndarray, list[str]]] = {}
        for name, e in first_seen.items():
            ts_launch, call = launch_of(e)
            ctx: dict[str, Any] = {"platform": trace.platform}
            if call is not None:
                ctx["launch_api"] = call.name
            if ts_launch is not None and _looks_bare(name):
                ctx["cpu_op"] = _innermost(cpu_s, cpu_e, cpu_names, ts_launch)
                tid = call.tid if call is not None else None
                if tid not in py_by_tid:
                    group = [p for p in python_fns if tid is None or p.tid == tid]
                    ps = np.fromiter((p.ts - t_min for p in group), float, len(group))  # type: ignore[operator]
                    py_by_tid[tid] = (
                        ps,
                        ps + np.fromiter((p.dur for p in group), float, len(group)),
                        [p.name for p in group],
                    )
                ps, pe, pn = py_by_tid[tid]
                ctx["python_frames"] = _frames_at(ps, pe, pn, ts_launch)
            result.contexts[name] = ctx
    else:
        result.contexts = {name: {"platform": trace.platform} for name in first_seen}

    # -- GPU busy / idle per device ------------------------------------------------
    by_dev: dict[str, list[Event]] = {}
    for e in act:
        a = e.args
        dev = a.device if a is not None and a.device is not None else e.pid
        by_dev.setdefault(str(dev), []).append(e)
    wall = sum(b - a for a, b in intervals)
    for dev, evs in sorted(by_dev.items()):
        groups_all = [member_group(e) for e in evs]
        evs = [e for e, g in zip(evs, groups_all, strict=True) if g >= 0]
        if not evs:
            continue
        grp = np.array([g for g in groups_all if g >= 0], dtype=np.int64)
        starts = np.fromiter((e.ts - t_min for e in evs), float, len(evs))  # type: ignore[operator]
        durs = np.fromiter((e.dur for e in evs), float, len(evs))
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
        launch_ts = np.full(len(evs), np.nan)
        launch_dur = np.full(len(evs), np.nan)
        for i, e in enumerate(evs):
            t, call = launch_of(e)
            if t is not None:
                launch_ts[i] = t
                if call is not None:
                    launch_dur[i] = call.dur
        has = ~np.isnan(launch_ts)
        # host-bound gaps: the activity after the gap was launched after the gap began
        after_idx = opener[1:]
        gap_start = me[:-1]
        after_launch = launch_ts[after_idx]
        host_bound = after_launch >= gap_start
        host_idle = float(np.sum(np.where(host_bound & (gap_len > 0), gap_len, 0.0)))
        kinds = np.array([e.cat == "kernel" for e in evs], dtype=bool)
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
                before = evs[int(order_by_end[j])].name if j >= 0 else ""
                after_e = evs[int(after_idx[gi])]
                _, call = launch_of(after_e)
                lt = after_launch[gi]
                result_dev.gaps.append(
                    Gap(
                        device=dev,
                        start_us=g0,
                        duration_us=float(gap_len[gi]),
                        before=before,
                        after=after_e.name,
                        host_bound=None if math.isnan(lt) else bool(lt >= g0),
                        cpu_op=_innermost(cpu_s, cpu_e, cpu_names, g0),
                        annotation=_innermost(ann_s, ann_e, ann_names, g0),
                        launch_call=call.name if call is not None else None,
                    )
                )
        result.devices.append(result_dev)
    return result


def analyze_file(path: str, rank: int, label: str, options: AnalysisOptions) -> RankAnalysis:
    """Load and analyze one rank; a broken file gives a result with ``error`` set, never an exception."""
    import gc

    from magpie_core.trace.loader import TraceLoadError

    gc_was = gc.isenabled()
    gc.disable()  # millions of new objects, none cyclic: skip the collector's repeated scans
    try:
        trace = load_trace(Path(path))
        return analyze_loaded(trace, rank, label, options)
    except TraceLoadError as exc:
        return RankAnalysis(rank=rank, label=label, path=path, error=str(exc))
    except MemoryError:
        return RankAnalysis(rank=rank, label=label, path=path, error=f"{path}: out of memory while loading")
    finally:
        if gc_was:
            gc.enable()
