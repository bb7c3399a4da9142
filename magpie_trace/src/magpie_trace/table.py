"""The columns of one trace (:class:`EventTable`) and the reduction of decoded events to them (:class:`TableBuilder`).

A chunk of decoded :class:`~magpie_trace.loader.Event` structs is reduced at once to numpy columns and dropped, so
peak memory is the columns plus one chunk. Names, categories, thread ids, devices and ``Input Dims`` texts are
interned to small integer ids (:class:`Interner`). With the compiled reader (:mod:`magpie_trace.native`) a piece is
reduced in C instead, by the same rules, into rows that are exported to numpy columns at the end
(``_kineto_scan.build``); :class:`TableBuilder` takes both. Only the groups of events the per-rank analysis reads are
kept (CPU ops, Python functions, runtime launch calls, GPU activity, annotations, flow starts and the events selected
for kernel statistics), each in file order. Reading a file's bytes into pieces is :mod:`magpie_trace.pieces`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
from magpie_trace.fastpath import GROUP_COLUMNS, ROW_DTYPES
from magpie_trace.loader import Event, LoadedTrace
from magpie_trace.validity import SkipCounts, count_skipped, reasons, valid_durations, valid_times

#: ``None`` in an integer id column (correlation, External id)
NONE = np.iinfo(np.int64).min

#: categories of device activity (kernels, copies, memsets): the ``act`` group of an :class:`EventTable`
GPU_ACTIVITY_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "gpu_kernel"})
#: categories of host runtime and driver calls (``cudaLaunchKernel``, ``hipLaunchKernel``...): the ``rt`` group
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "runtime", "driver"})
#: categories of user annotations (``record_function`` ranges, serving engines' step markers): the ``ann`` group
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})
#: as the loader: only the first events of a file may name the runtime (``hip*`` or ``cu*`` calls)
PLATFORM_SCAN_EVENTS = 200_000

_CPU, _PY, _RT, _ACT, _ANN = 1, 2, 3, 4, 5


class Interner(dict):  # type: ignore[type-arg]
    """value -> dense id; ``values[id]`` gives the value back. Lookups of known values stay in C."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[Any] = []

    def __missing__(self, key: Any) -> int:
        i = len(self.values)
        self[key] = i
        self.values.append(key)
        return i


_CAT, _PH, _TS, _DUR, _NAME, _TID, _ARGS = (attrgetter(f) for f in ("cat", "ph", "ts", "dur", "name", "tid", "args"))
_EXT, _CORR, _DIMS = attrgetter("external_id"), attrgetter("correlation"), attrgetter("input_dims")
_DEVICE = attrgetter("device")


def _int_list(values: list[Any]) -> np.ndarray:
    """int64 column of ids; ``None`` -> NONE, ids up to 2**64 - 1 (Kineto's are uint64) wrap into int64. An id no
    64-bit producer can write (below -2**63 or from 2**64 on) is no id: NONE, so it links to nothing."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, OverflowError, ValueError):
        return np.array([_int64_id(v) for v in values], dtype=np.int64)


def _int64_id(v: int | None) -> int:
    if v is None or not -(1 << 63) <= v < (1 << 64):
        return NONE
    return v - (1 << 64) if v >= (1 << 63) else v


def _int_column(items: Sequence[Any], get: Callable[[Any], Any]) -> np.ndarray:
    """``get(item)`` of every item as int64 ids (absent ids are already NONE in the decoded structs)."""
    try:
        return np.fromiter(map(get, items), np.int64, len(items))
    except (TypeError, OverflowError, ValueError):  # an explicit null or an id >= 2**63
        return _int_list(list(map(get, items)))


def _float_column(items: Sequence[Any], get: Callable[[Any], Any], n: int) -> np.ndarray:
    try:
        return np.fromiter(map(get, items), np.float64, n)
    except TypeError:  # an explicit null
        return np.array([math.nan if v is None else v for v in map(get, items)], dtype=np.float64)


def _take(items: Sequence[Any], idx: np.ndarray) -> list[Any]:
    return list(map(items.__getitem__, idx.tolist()))


@dataclass
class EventTable:
    """The columns of one trace; ``names[i]`` etc. turn ids back into values."""

    path: Path
    platform: str
    rank: int | None
    world_size: int | None
    device_names: list[str]
    size_bytes: int
    num_events: int
    t_min: float  # math.inf when no event has a timestamp
    t_max: float
    names: list[str]
    cats: list[str]
    tids: list[Any]
    devs: list[str]
    dims: list[bytes]
    groups: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: complete events skipped for a missing or unbelievable ``ts``/``dur``: (category, reason code) -> count
    #: (:func:`magpie_trace.validity.skipped_messages` says them in words)
    skipped: dict[tuple[str, int], int] = field(default_factory=dict)
    # where ``platform`` came from, to settle it when parts of one file are merged
    header_platform: str | None = None
    platform_hint: str | None = None
    platform_hint_at: int = -1
    #: a part of a split read (:func:`split_table`) whose rows the compiled reduction still holds, ``groups`` empty:
    #: :func:`merge_tables` exports them straight into the merged columns (no copy of the part's own); None otherwise
    pending_rows: _NativeRows | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, group: str) -> dict[str, np.ndarray]:
        return self.groups[group]


class _DeviceIds(dict):  # type: ignore[type-arg]
    """``args.device`` value -> id in ``devs`` (which holds ``str`` of the value); a GPU event without a device
    is on its ``pid``."""

    def __init__(self, devs: Interner) -> None:
        super().__init__()
        self.devs = devs

    def __missing__(self, value: Any) -> int:
        i = self[value] = self.devs[str(value)]
        return i

    def of(self, evs: list[Event], args: list[Any]) -> np.ndarray:
        devices = list(map(_DEVICE, args))
        if None in devices:
            devices = [d if d is not None else e.pid for e, d in zip(evs, devices, strict=True)]
        return np.fromiter(map(self.__getitem__, devices), np.int32, len(devices))


class EventSource:
    """The fields of one chunk of events beyond category, phase, ``ts`` and ``dur``, as :class:`TableBuilder`
    reads them from decoded :class:`Event` structs (:class:`_DecodedEvents`). (Pieces the compiled reader reads are
    reduced by ``_kineto_scan.build`` in C, by the same rules, and checked against this path by the differential
    tests.) Index arrays are positions in the chunk."""

    def take(self, idx: np.ndarray) -> EventSource:
        """The events at ``idx``."""
        raise NotImplementedError

    def name(self, i: int) -> str:
        raise NotImplementedError

    def name_ids(self, names: Interner) -> np.ndarray:
        """Every event's name, interned in event order."""
        raise NotImplementedError

    def ext_corr(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``External id`` and ``correlation`` columns of all events, read only at ``idx`` (NONE elsewhere)."""
        raise NotImplementedError

    def dims_ids(self, idx: np.ndarray, dims: Interner) -> np.ndarray:
        """``Input Dims`` texts at ``idx``, interned (-1: none)."""
        raise NotImplementedError

    def tid_ids(self, idx: np.ndarray, tids: Interner) -> np.ndarray:
        raise NotImplementedError

    def device_ids(self, idx: np.ndarray, devices: _DeviceIds) -> np.ndarray:
        """Devices at ``idx`` (``args.device``, else the ``pid``), interned."""
        raise NotImplementedError

    def int_ids(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``id`` at ``idx`` as int64, and which of them are integers."""
        raise NotImplementedError


class _DecodedEvents(EventSource):
    def __init__(self, evs: Sequence[Event]) -> None:
        self.evs = evs

    def take(self, idx: np.ndarray) -> EventSource:
        return _DecodedEvents(_take(self.evs, idx))

    def name(self, i: int) -> str:
        return self.evs[i].name

    def name_ids(self, names: Interner) -> np.ndarray:
        return np.fromiter(map(names.__getitem__, map(_NAME, self.evs)), np.int32, len(self.evs))

    def ext_corr(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.evs)
        args = list(map(_ARGS, _take(self.evs, idx) if len(idx) < m else self.evs))
        ext = np.full(m, NONE, np.int64)
        corr = np.full(m, NONE, np.int64)
        ext[idx] = _int_column(args, _EXT)
        corr[idx] = _int_column(args, _CORR)
        return ext, corr

    def dims_ids(self, idx: np.ndarray, dims: Interner) -> np.ndarray:
        get = dims.__getitem__
        raw = map(_DIMS, map(_ARGS, _take(self.evs, idx)))
        return np.array([get(bytes(r)) if r else -1 for r in raw], np.int32)

    def tid_ids(self, idx: np.ndarray, tids: Interner) -> np.ndarray:
        return np.fromiter(map(tids.__getitem__, map(_TID, _take(self.evs, idx))), np.int32, len(idx))

    def device_ids(self, idx: np.ndarray, devices: _DeviceIds) -> np.ndarray:
        evs = _take(self.evs, idx)
        return devices.of(evs, list(map(_ARGS, evs)))

    def int_ids(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids = [e.id for e in _take(self.evs, idx)]
        is_int = np.array([type(v) is int for v in ids], np.bool_)
        return _int_list([v if type(v) is int else 0 for v in ids]), is_int


def _category_code(cat: str) -> int:
    """The group of a category's complete events (0: none)."""
    if cat == "cpu_op":
        return _CPU
    if cat == "python_function":
        return _PY
    if cat in RUNTIME_CATS:
        return _RT
    if cat in GPU_ACTIVITY_CATS:
        return _ACT
    return _ANN if cat in ANNOTATION_CATS else 0


def _joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    """One column from its pieces' (one piece: itself, no copy)."""
    if not arrays:
        return np.zeros(0, dtype)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


#: what ``_kineto_scan.build`` gives for one piece it read and reduced: (events, t_min, t_max, platform hint (0 none,
#: 1 rocm, 2 cuda), index of the event that gave it, skipped events' category ids (int32 bytes) or None, their
#: :data:`~magpie_trace.validity.REASONS` codes (int8 bytes) or None)
NativePiece = tuple[int, float, float, int, int, bytes | None, bytes | None]
#: categories whose calls' names tell the platform (``hip*``: rocm, ``cu*``: cuda)
_PLATFORM_CATS = ("cuda_runtime", "cuda_driver")


class _NativeRows:
    """The rows of one file or part that the compiled reduction holds (``_kineto_scan.build``), not yet exported."""

    def __init__(self, mod: Any, state: list[Any]) -> None:
        self._mod, self._state = mod, state
        #: rows per row column (``ROW_NAMES`` order)
        self.counts: tuple[int, ...] = tuple(mod.row_counts(state))

    def export(self, outs: list[np.ndarray], remaps: list[np.ndarray | None] | None = None) -> None:
        """Write the rows into ``outs`` (one array per row column, of ``counts`` items; views of larger columns will
        do) with the builder's ids, mapped through ``remaps`` where one is given (int32: builder id -> another id);
        the rows are gone from the reduction's buffers after."""
        self._mod.export_rows(self._state, outs, remaps)


class TableBuilder:
    """Reduces decoded events, one chunk at a time, to the columns of an :class:`EventTable`."""

    def __init__(self, selected: Mapping[str, bool] | Callable[[str], bool]) -> None:
        self._selected = selected.__getitem__ if isinstance(selected, Mapping) else selected
        self.names = Interner()
        self.cats = Interner()
        self.phs = Interner()
        self.tids = Interner()
        self.devs = Interner()
        self.dims = Interner()
        # args.device value -> device id (``str`` of it), so known devices are found without a str() per event
        self._dev_ids = _DeviceIds(self.devs)
        self.num_events = 0
        self.skipped: SkipCounts = SkipCounts()
        self.t_min = math.inf
        self.t_max = -math.inf
        self.platform_hint: str | None = None
        self.platform_hint_at = -1  # index of the event that gave the hint
        self._scan_left = PLATFORM_SCAN_EVENTS
        self._cat_code = np.zeros(0, np.int8)
        self._cat_sel = np.zeros(0, np.bool_)
        self._parts: dict[str, list[dict[str, np.ndarray]]] = {g: [] for g in GROUP_COLUMNS}
        self._x = self.phs["X"]
        self._s = self.phs["s"]
        # the compiled reduction's module and state (:func:`magpie_trace.native.scanner` sets them): its rows
        # are exported to ``_parts`` before a decoded piece's and at the end
        self.native: tuple[Any, list[Any]] | None = None
        self.native_ctx = (self._native_cat, self.names, self.tids, self.dims, self._dev_ids)

    def _refresh_cats(self) -> None:
        """Group code and selection of the categories interned since the last call (both readers share this)."""
        new = self.cats.values[len(self._cat_code) :]
        codes = [_category_code(cat) for cat in new]
        sel = [bool(self._selected(cat)) for cat in new]
        self._cat_code = np.concatenate((self._cat_code, np.array(codes, dtype=np.int8)))
        self._cat_sel = np.concatenate((self._cat_sel, np.array(sel, dtype=np.bool_)))

    def _native_cat(self, cat: str) -> tuple[int, int]:
        """For the compiled reduction (``_kineto_scan.build``), a category met for the first time: its id (interned
        now, in the order the events have them) and flags (the C side's ``CF_*``: group code, selected, kernel, flow
        starts, runtime calls naming the platform)."""
        cid = self.cats[cat]
        if len(self.cats.values) != len(self._cat_code):
            self._refresh_cats()
        flags = int(self._cat_code[cid]) | (8 if self._cat_sel[cid] else 0)
        flags |= (16 if cat == "kernel" else 0) | (32 if cat == "ac2g" else 0)
        return cid, flags | (64 if cat in _PLATFORM_CATS else 0)

    def _ids(self, interner: Interner, values: Iterable[Any], n: int) -> np.ndarray:
        return np.fromiter(map(interner.__getitem__, values), np.int32, n)

    def add(self, evs: Sequence[Event]) -> None:
        """Reduce one chunk of decoded events. Each field is read in one C-level pass (``map``/``attrgetter``
        into ``np.fromiter``) over only the events that need it; groups are then numpy selections."""
        n = len(evs)
        if n == 0:
            return
        self._export_native()  # the compiled reduction's rows of earlier pieces come first
        cid = self._ids(self.cats, map(_CAT, evs), n)
        ph = self._ids(self.phs, map(_PH, evs), n)
        ts, dur = _float_column(evs, _TS, n), np.fromiter(map(_DUR, evs), np.float64, n)
        self._reduce(_DecodedEvents(evs), cid, ph, ts, dur)

    def add_any(self, events: Sequence[Event] | NativePiece) -> None:
        """Reduce one chunk: decoded events, or take the totals of a piece the compiled reduction read."""
        if type(events) is tuple:
            self.add_native(events)
        else:
            self.add(events)  # type: ignore[arg-type]

    def add_native(self, piece: NativePiece) -> None:
        """The totals of a piece whose rows ``_kineto_scan.build`` appended to its own buffers (and whose new values
        it interned): what :meth:`_reduce` adds to the builder's counters for decoded events."""
        n, lo, hi, hint, hint_at, skipped_cats, skipped_codes = piece
        self.num_events += n
        if self._scan_left > 0:
            if hint and self.platform_hint is None:
                self.platform_hint = "rocm" if hint == 1 else "cuda"
                self.platform_hint_at = self.num_events - n + hint_at
            self._scan_left -= min(n, self._scan_left)
        if skipped_cats is not None:
            cats = np.frombuffer(skipped_cats, np.int32)
            count_skipped(self.skipped, self.cats.values, cats, np.frombuffer(skipped_codes, np.int8))
        self.t_min = min(self.t_min, lo)
        self.t_max = max(self.t_max, hi)

    def native_scan_left(self) -> int:
        """How many more events may name the platform (0 once one did): the compiled reduction's ``scan_left``."""
        return self._scan_left if self.platform_hint is None else 0

    def _export_native(self) -> None:
        """Move the compiled reduction's rows (with the builder's ids) into ``_parts``."""
        if self.native is None:
            return
        mod, state = self.native
        if not state:
            return
        counts = mod.row_counts(state)
        if not any(counts):
            return
        arrays = [np.empty(k, dtype) for k, dtype in zip(counts, ROW_DTYPES, strict=True)]
        mod.export_rows(state, arrays)
        it = iter(arrays)
        for g, cols in GROUP_COLUMNS.items():
            self._parts[g].append({c: next(it) for c, _ in cols})

    def _reduce(self, src: EventSource, cid: np.ndarray, ph: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> None:
        """The columns of one chunk of events whose categories, phases, ``ts`` and ``dur`` are read; ``src``
        gives the other fields of the events that need them."""
        n = len(cid)
        self.num_events += n
        if len(self.cats.values) != len(self._cat_code):
            self._refresh_cats()
        timed = valid_times(ts)  # absent (NaN), negative or absurd timestamps place nothing
        if self._scan_left > 0:
            self._scan_platform(src, cid, self.num_events - n)
        x = ph == self._x
        measured = timed & valid_durations(dur)
        unmeasured = x & ~measured  # complete events without a believable ts and dur (almost never any)
        if unmeasured.any():
            self._skip(unmeasured & ((self._cat_code[cid] != 0) | self._cat_sel[cid]), cid, ts, dur)
        if not timed.any():
            return
        end = ts + np.where(measured, dur, 0.0)  # instant and metadata events have no dur
        # + 0.0: -0.0 and 0.0 are one time, and which of them a chunk's min gives depends on where the file is cut
        lo = float(ts.min(where=timed, initial=math.inf)) + 0.0
        hi = float(end.max(where=timed, initial=-math.inf)) + 0.0
        self.t_min = min(self.t_min, lo)
        self.t_max = max(self.t_max, hi)
        x &= measured
        code = np.where(x, self._cat_code[cid], 0)
        sel = x & self._cat_sel[cid]
        self._add_flows(src, ph, cid, ts, timed)
        keep = np.flatnonzero((code != 0) | sel)
        if len(keep):
            self._add_kept(src.take(keep), code[keep], sel[keep], cid[keep], ts[keep], dur[keep])

    def _skip(self, bad: np.ndarray, cid: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> None:
        """Count the events of mask ``bad`` by category and reason (:mod:`magpie_trace.validity`)."""
        if bad.any():
            count_skipped(self.skipped, self.cats.values, cid[bad], reasons(ts[bad], dur[bad]))

    def _add_kept(
        self, src: EventSource, code: np.ndarray, sel: np.ndarray, cid: np.ndarray, ts: np.ndarray, dur: np.ndarray
    ) -> None:
        """Append a chunk's kept events (complete, timed, of a group or selected) to their groups' columns:
        names for all of them, ids only where some group reads them."""
        name = src.name_ids(self.names)
        with_ids = np.flatnonzero(sel | (code == _CPU) | (code == _RT) | (code == _ACT))
        ext, corr = src.ext_corr(with_ids)

        def group(g: int) -> np.ndarray:
            return np.flatnonzero(code == g)

        i = group(_CPU)
        if len(i):
            self._append("cpu", ts=ts[i], dur=dur[i], name=name[i], ext=ext[i], dims=src.dims_ids(i, self.dims))
        i = group(_PY)
        if len(i):
            self._append("py", ts=ts[i], dur=dur[i], name=name[i], tid=src.tid_ids(i, self.tids))
        i = group(_RT)
        i = i[corr[i] != NONE]  # only calls with a correlation id launch anything
        if len(i):
            self._append("rt", ts=ts[i], dur=dur[i], name=name[i], tid=src.tid_ids(i, self.tids), corr=corr[i])
        i = group(_ACT)
        if len(i):
            kernel = self.cats.get("kernel", -1)
            self._append(
                "act",
                ts=ts[i],
                dur=dur[i],
                name=name[i],
                dev=src.device_ids(i, self._dev_ids),
                kernel=cid[i] == kernel,
                corr=corr[i],
            )
        i = group(_ANN)
        if len(i):
            self._append("ann", ts=ts[i], dur=dur[i], name=name[i], cat=cid[i])
        i = np.flatnonzero(sel)
        if len(i):
            self._append("sel", ts=ts[i], dur=dur[i], name=name[i], ext=ext[i], corr=corr[i])

    def _append(self, group: str, **columns: np.ndarray) -> None:
        self._parts[group].append(columns)

    def _add_flows(self, src: EventSource, ph: np.ndarray, cid: np.ndarray, ts: np.ndarray, timed: np.ndarray) -> None:
        flow_cat = self.cats.get("ac2g")
        if flow_cat is None:
            return
        fl = np.flatnonzero((ph == self._s) & (cid == flow_cat) & timed)
        if not len(fl):
            return
        # flow starts are looked up by (integer) correlation: other ids can never match
        ids, is_int = src.int_ids(fl)
        if is_int.any():
            self._parts["flow"].append({"id": ids[is_int], "ts": ts[fl][is_int]})

    def _scan_platform(self, src: EventSource, cid: np.ndarray, offset: int) -> None:
        limit = min(len(cid), self._scan_left)
        self._scan_left -= limit
        if self.platform_hint is not None:
            return
        rt_ids = [self.cats[c] for c in _PLATFORM_CATS if c in self.cats]
        if not rt_ids:
            return
        for i in np.flatnonzero(np.isin(cid[:limit], rt_ids)).tolist():
            name = src.name(i)
            if name.startswith(("hip", "cu")):
                self.platform_hint = "rocm" if name.startswith("hip") else "cuda"
                self.platform_hint_at = offset + i
                return

    def finish(
        self,
        path: Path,
        *,
        platform: str,
        rank: int | None,
        world_size: int | None,
        device_names: list[str],
        size_bytes: int,
        header_platform: str | None = None,
        defer_rows: bool = False,
    ) -> EventTable:
        """The table. ``defer_rows`` (a part of a split read): when every row is still in the compiled reduction's
        buffers, leave them there (``pending_rows``, for :func:`merge_tables`)."""
        pending = None
        if defer_rows and self.native is not None and self.native[1] and not any(self._parts.values()):
            pending = _NativeRows(*self.native)
        else:
            self._export_native()
        groups: dict[str, dict[str, np.ndarray]] = {}
        for g, cols in GROUP_COLUMNS.items():
            parts = self._parts[g]
            if pending is None:
                groups[g] = {c: _joined([p[c] for p in parts], dtype) for c, dtype in cols}
            parts.clear()
        return EventTable(
            pending_rows=pending,
            path=path,
            platform=platform,
            rank=rank,
            world_size=world_size,
            device_names=device_names,
            size_bytes=size_bytes,
            num_events=self.num_events,
            t_min=self.t_min,
            t_max=self.t_max,
            names=self.names.values,
            cats=self.cats.values,
            tids=self.tids.values,
            devs=self.devs.values,
            dims=self.dims.values,
            groups=groups,
            skipped=dict(self.skipped),
            header_platform=header_platform,
            platform_hint=self.platform_hint,
            platform_hint_at=self.platform_hint_at,
        )


def table_from_loaded(trace: LoadedTrace, selected: Mapping[str, bool] | Callable[[str], bool]) -> EventTable:
    """The columns of an already decoded trace."""
    b = TableBuilder(selected)
    step = 65536
    for i in range(0, len(trace.events), step):
        b.add(trace.events[i : i + step])
    return b.finish(
        trace.path,
        platform=trace.platform,
        rank=trace.rank,
        world_size=trace.world_size,
        device_names=trace.device_names,
        size_bytes=trace.size_bytes,
    )
