"""Columnar event tables: the compact, analysis-ready form of one trace file.

:func:`stream_table` decodes a trace chunk by chunk: the ``traceEvents`` array is
cut at event boundaries into pieces of about ``chunk_bytes``, each piece is
decoded with msgspec into :class:`~magpie_trace.loader.Event` structs,
reduced at once to numpy columns and dropped. Peak memory is therefore the
columns plus one chunk, never the whole file buffer or one Python object per
event. Names, categories, thread ids, devices and ``Input Dims`` texts are
interned to small integer ids. With the compiled reader (:mod:`magpie_trace.native`)
a piece is read and reduced in C instead, by the same rules, into rows that are
exported to numpy columns at the end (``_kineto_scan.build``); a piece it does
not read is decoded by msgspec and reduced by :class:`TableBuilder` as above.

Only the groups of events the per-rank analysis reads are kept (CPU ops, Python
functions, runtime launch calls, GPU activity, annotations, flow starts and
the events selected for kernel statistics), each in file order, so results are
the same as a pass over the decoded event list.

Whenever the fast path meets something it does not expect (a piece that does
not decode, no ``traceEvents`` key, a broken gzip stream), it gives up and the
caller decodes the whole file with :func:`~magpie_trace.loader.load_trace`,
whose errors name the file and position.
"""

from __future__ import annotations

import gc
import math
import mmap
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from magpie_trace.fastpath import GROUP_COLUMNS, ROW_DTYPES, FallBack
from magpie_trace.loader import (
    LIST_DECODER,
    OBJECT_DECODER,
    Event,
    LoadedTrace,
    TraceObject,
    platform_from_header,
)
from magpie_trace.validity import SkipCounts, count_skipped, reasons, valid_durations, valid_times

__all__ = [
    "ANNOTATION_CATS",
    "BLOCK_BYTES",
    "GPU_ACTIVITY_CATS",
    "NONE",
    "PLATFORM_SCAN_EVENTS",
    "RUNTIME_CATS",
    "SPLIT_MIN_BYTES",
    "EventTable",
    "FallBack",
    "Interner",
    "PieceSkipper",
    "StreamedFile",
    "TableBuilder",
    "category_matcher",
    "collector_paused",
    "json_string",
    "load_table",
    "merge_tables",
    "part_count",
    "split_table",
    "splittable",
    "stream_events",
    "stream_table",
    "table_from_loaded",
    "table_part",
]

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


# -- streaming ----------------------------------------------------------------


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_WS = b" \t\r\n"
_NON_WS = re.compile(rb"[^ \t\r\n]")
#: how many bytes :func:`stream_events` reads (or decompresses) at a time
BLOCK_BYTES = 4 << 20
#: whether :func:`stream_table`'s compiled reader reads the pieces of a plain file in place from a read-only mapping of
#: it (:class:`_MappedPieces`) rather than from a buffer they are copied into (``readinto``: ~0.1 s CPU per 550 MB,
#: about half of it saved); the tests turn it off to compare both
MAP_PLAIN_FILES = True

#: what the last piece cut from a full buffer leaves for the next fill to move to its front (a memmove holding the GIL):
#: the bytes after the first event boundary in its last _TAIL_BYTES, rather than up to a piece (~1/3 of the file)
_TAIL_BYTES = 64 << 10


def _gunzip(f: Any, first: bytes, block: int) -> Iterator[bytes]:
    """Decompressed blocks of a gzip stream (members in sequence, NUL padding between them skipped)."""
    dec = zlib.decompressobj(zlib.MAX_WBITS | 16)
    data = first
    while True:
        if not data:
            data = f.read(block)
            if not data:
                if not dec.eof:
                    raise FallBack("truncated gzip")
                return
        if dec.eof:
            data = data.lstrip(b"\x00")
            if not data:
                continue
            dec = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            out = dec.decompress(data, block)
            while out:
                yield out
                out = dec.decompress(dec.unconsumed_tail, block) if dec.unconsumed_tail else b""
        except zlib.error as exc:
            raise FallBack(f"gzip: {exc}") from None
        data = dec.unused_data if dec.eof else b""


class _Source:
    """Reads a trace's (decompressed) bytes into a caller's buffer."""

    def __init__(self, f: Any, block: int) -> None:
        self._f = self.file = f
        self.size = 0
        self._gz: Iterator[bytes] | None = None
        self._pending = memoryview(b"")
        first = f.read(2)
        self.gzipped = first == b"\x1f\x8b"
        if self.gzipped:
            self._gz = _gunzip(f, first + f.read(block), block)
        else:
            self._pending = memoryview(first)

    def seek(self, offset: int) -> None:
        """Continue from ``offset`` of a plain file (drops the bytes read ahead for the gzip check)."""
        self._f.seek(offset)
        self._pending = memoryview(b"")

    def readinto(self, out: memoryview) -> int:
        if not len(self._pending):
            if self._gz is None:
                n = self._f.readinto(out) or 0
                self.size += n
                return n
            blk = next(self._gz, None)
            if blk is None:
                return 0
            self._pending = memoryview(blk)
        k = min(len(out), len(self._pending))
        out[:k] = self._pending[:k]
        self._pending = self._pending[k:]
        self.size += k
        return k


def _read_header(f: Any, block: int) -> tuple[bytes | None, int]:
    """(bytes before the event array's ``[`` or None for a bare list, file offset just after that ``[``)."""
    f.seek(0)
    data = b""
    while True:
        blk = f.read(block)
        if not blk:
            raise FallBack("no event array")
        data += blk
        m = _NON_WS.search(data)
        if m is None:
            continue
        if data[m.start()] == 0x5B:
            return None, m.start() + 1
        if data[m.start()] != 0x7B:
            raise FallBack("not JSON")
        m = _EVENTS_KEY.search(data)
        if m is not None:
            return data[: m.end() - 1], m.end()


@dataclass
class StreamedFile:
    """What :func:`stream_events` read besides the events."""

    size_bytes: int  # decompressed size (the size on disk for a part of a plain file)
    #: the keys around the event array (distributedInfo, deviceProperties, ...); None for a bare event
    #: list and for a part that does not reach the end of the file
    header: TraceObject | None = None
    #: events in pieces skipped whole because every event in them had a ``skip_categories`` category
    skipped_events: int = 0


class PieceSkipper:
    """Tells whether a piece holds only events of one skipped category, from byte counts alone.

    Profilers write such events in long runs (a Kineto trace's Python frames and CPU instant events: over
    half of its bytes, in one run per profiling window), so a sink that drops them anyway need not have
    them decoded. A piece qualifies when its first event's ``"cat": "<skipped>"`` key occurs as often as
    ``"ph":`` keys do (one per event, however spelled: the trace format requires it); otherwise, or for a
    trace written with other spacing, it is decoded as usual."""

    def __init__(self, categories: Iterable[str]) -> None:
        cats = [json_string(c) for c in sorted(set(categories))]
        self.keys = [b'"cat": ' + c for c in cats] + [b'"cat":' + c for c in cats]
        self.skipped = 0

    def skips(self, work: bytearray, lo: int, hi: int) -> bool:
        first = work.find(b'"cat":', lo, hi)
        if first < 0:
            return False
        key = next((k for k in self.keys if work.startswith(k, first)), None)
        if key is None:  # the piece's first event is kept: decode (the cheap, common rejection)
            return False
        events = work.count(b'"ph":', lo, hi)
        if events == 0 or work.count(key, lo, hi) != events:
            return False
        self.skipped += events
        return True


class _PieceBuffer:
    """The one reused buffer :func:`stream_events` decodes pieces from, and where it stands in the file.

    Data lies in ``work[wpos:end]``; ``work[1]`` is file offset ``base``; ``work[0]`` is room for the first
    piece's ``[``. Each step below runs once per block or piece read, never per event."""

    def __init__(
        self,
        src: _Source,
        chunk_bytes: int,
        block_bytes: int,
        decoder: msgspec.json.Decoder[Any],
        sink: Callable[[Any], None],
        skipper: PieceSkipper | None,
        scanner: Callable[..., Any] | None = None,
        work: Any = None,
    ) -> None:
        self.src = src
        self.scanner = scanner
        self.chunk_bytes = chunk_bytes
        self.block_bytes = block_bytes
        self.decoder = decoder
        self.sink = sink
        self.skipper = skipper
        self.work = bytearray(1 + chunk_bytes + block_bytes) if work is None else work
        self.wpos = 1
        self.end = 1
        self.base = 0

    def fill(self) -> bool:
        """Move the unread data to the front, grow the buffer if one event outgrew it, read one block."""
        work, wpos, end = self.work, self.wpos, self.end
        r = end - wpos
        if wpos > 1:
            work[1 : 1 + r] = work[wpos:end]
            self.base += wpos - 1
            wpos, end = 1, 1 + r
        if len(work) - end < self.block_bytes // 2:  # one event larger than a chunk: grow
            grown = bytearray(end + self.block_bytes)
            grown[:end] = work[:end]
            work = self.work = grown
        n = self.src.readinto(memoryview(work)[end:])
        self.wpos, self.end = wpos, end + n
        return n > 0

    def find_event_array(self) -> bytes | None:
        """Move to the first event of the file's event array; the bytes before its ``[`` (None: a bare list)."""
        while True:
            if not self.fill():
                raise FallBack("no event array")
            work = self.work
            m = _NON_WS.search(work, 1, self.end)
            if m is None:
                continue
            c = work[m.start()]
            if c == 0x5B:  # "[": a bare event list
                self.wpos = m.start() + 1
                return None
            if c != 0x7B:  # "{"
                raise FallBack("not JSON")
            m = _EVENTS_KEY.search(work, 1, self.end)
            if m is not None:
                self.wpos = m.end()
                return bytes(work[1 : m.end() - 1])

    def find_first_event(self, f: Any, start_at: int) -> bytes | None:
        """For a later part: move to the first event boundary at or after file offset ``start_at``;
        the bytes before the event array (read separately, from the start of the file)."""
        header, array_at = _read_header(f, 1 << 20)  # the header is near the start: small reads
        if start_at <= array_at:
            raise FallBack("part starts before the event array")
        self.src.seek(start_at)
        self.base = start_at
        while True:
            if not self.fill():
                raise FallBack("no event boundary in this part")
            m = _BOUNDARY.search(self.work, 1, self.end)
            if m is not None:
                self.wpos = m.end() - 1
                return header
            self.wpos = max(1, self.end - 64)  # keep a possible boundary's beginning

    def decode(self, lo: int, hi: int) -> None:
        """Decode the events in work[lo:hi] (the bytes at lo - 1 and hi are separators) and hand them on."""
        work = self.work
        if self.skipper is not None and self.skipper.skips(work, lo, hi):
            return
        work[lo - 1] = 0x5B
        work[hi] = 0x5D
        piece = memoryview(work)[lo - 1 : hi + 1]
        events = self.scanner(piece) if self.scanner is not None else None
        if events is None:
            try:
                events = self.decoder.decode(piece)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
                raise FallBack(str(exc)) from None
        self.sink(events)

    def decode_pieces(self, stop_at: int | None) -> bool:
        """Decode whole pieces of about ``chunk_bytes``. True when the part that ends at the first event
        boundary at or after file offset ``stop_at`` is done; False at the end of the file, where the
        last piece and what follows the array are left in the buffer (:meth:`rest`)."""
        chunk_bytes = self.chunk_bytes
        eof = False
        stop = -1  # index in ``work`` of the byte after this part's last event, once known
        while True:
            if stop_at is not None and stop < 0 and self.base + self.end - 1 > stop_at:
                m = _BOUNDARY.search(self.work, max(self.wpos, stop_at - self.base + 1), self.end)
                if m is not None:
                    stop = m.start() + 1
            end = self.end
            limit = stop if stop >= 0 else (end if stop_at is None else min(end, stop_at - self.base + 1))
            while limit - self.wpos > chunk_bytes:
                m = _BOUNDARY.search(self.work, self.wpos + chunk_bytes, limit)
                if m is None:
                    break
                if limit - m.end() < chunk_bytes:  # less than a piece would be left: take it, but the last few KiB
                    m = _BOUNDARY.search(self.work, max(m.end(), limit - _TAIL_BYTES), limit) or m
                self.decode(self.wpos, m.start() + 1)
                self.wpos = m.end() - 1
            if stop >= 0:
                self.decode(self.wpos, stop)
                return True
            if eof:
                if stop_at is not None:
                    raise FallBack("no event boundary after the end of this part")
                return False
            eof = not self.fill()

    def rest(self) -> bytes:
        """The unread bytes (a copy), the buffer released."""
        rest = bytes(self.work[self.wpos : self.end])
        self.work = bytearray()
        return rest


class _MappedPieces(_PieceBuffer):
    """The pieces of a plain file cut from a read-only mapping of it (:func:`~magpie_trace.native.guarded_map`):
    nothing is copied into a buffer. ``work`` is the mapping, so an index is a file offset (``base`` 1, see
    :class:`_PieceBuffer`), and a piece's items go to the compiled reader without brackets (``bare``): a mapped byte
    cannot be turned into ``[``. A piece the reader does not handle is copied, bracketed, for msgspec."""

    def __init__(
        self,
        mapping: Any,
        src: _Source,
        chunk_bytes: int,
        decoder: msgspec.json.Decoder[Any],
        sink: Callable[[Any], None],
        scanner: Callable[..., Any],
    ) -> None:
        super().__init__(src, chunk_bytes, 0, decoder, sink, None, scanner, work=mapping)
        self.view = memoryview(mapping)
        self.wpos, self.end, self.base = 0, len(mapping), 1
        self.released = 0  # the mapping's pages below this offset were handed back (release_read)

    def fill(self) -> bool:
        return False  # the whole file is there

    def find_event_array(self) -> bytes | None:
        header, self.wpos = _read_header(self.src.file, 1 << 20)
        return header

    def find_first_event(self, f: Any, start_at: int) -> bytes | None:
        header, array_at = _read_header(f, 1 << 20)
        if start_at <= array_at:
            raise FallBack("part starts before the event array")
        m = _BOUNDARY.search(self.work, start_at)
        if m is None:
            raise FallBack("no event boundary in this part")
        self.wpos = m.end() - 1
        return header

    def decode(self, lo: int, hi: int) -> None:
        piece = self.view[lo:hi]
        events = self.scanner(piece, True)  # type: ignore[misc]
        if events is None:
            try:
                events = self.decoder.decode(b"".join((b"[", piece, b"]")))
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
                raise FallBack(str(exc)) from None
        piece.release()
        self.release_read(hi)
        self.sink(events)

    def release_read(self, upto: int) -> None:
        """Hand back the mapping's pages read so far (whole pages below ``upto``). Mapped pages count in the process's
        resident memory, so without this a 550 MB trace read in place would show ~550 MB more of it than read through a
        buffer; the page cache keeps them, and a byte read again (a part's end) is simply mapped again."""
        upto -= upto % mmap.PAGESIZE
        if upto > self.released:
            with suppress(OSError, ValueError, AttributeError):  # a hint: without MADV_DONTNEED the pages just stay
                self.work.madvise(mmap.MADV_DONTNEED, self.released, upto - self.released)
            self.released = upto

    def rest(self) -> bytes:
        rest = bytes(self.view[self.wpos : self.end])
        self.view.release()
        return rest


def _decode_last_piece(
    rest: bytes,
    header: bytes | None,
    decoder: msgspec.json.Decoder[Any],
    sink: Callable[[Any], None],
    scanner: Callable[[Any], Any] | None = None,
) -> TraceObject | None:
    """Decode the last piece of the event array and the keys after it, from ``rest`` (the file from the
    last piece on). The array's closing ``]`` is one of the last ``]`` in ``rest``: the first of them after
    which the rest of the file decodes. The header object, or None for a bare event list."""
    obj: TraceObject | None = None
    k = len(rest)
    for _ in range(8):
        k = rest.rfind(b"]", 0, k)
        if k < 0:
            break
        tail = rest[k + 1 :]
        try:
            if header is None:
                if tail.strip(_WS):
                    raise FallBack("trailing data")
            else:
                obj = OBJECT_DECODER.decode(header + b"[]" + tail)
                if obj.traceEvents:
                    raise FallBack("second event array")
            piece = b"".join((b"[", rest[:k], b"]"))
            events = scanner(piece) if scanner is not None else None
            if events is None:
                events = decoder.decode(piece)
        except (msgspec.DecodeError, msgspec.ValidationError, FallBack, RecursionError):
            obj = None
            continue
        sink(events)
        del events
        break
    else:
        raise FallBack("end of the event array not found")
    if k < 0:
        raise FallBack("end of the event array not found")
    return obj


def json_string(text: str) -> bytes:
    """``text`` as a JSON string literal, as trace writers spell it (non-ASCII kept)."""
    return msgspec.json.encode(text)


def stream_events(
    path: Path,
    sink: Callable[[list[Any]], None],
    *,
    decoder: msgspec.json.Decoder[Any] = LIST_DECODER,
    part: tuple[int, int] = (0, 1),
    chunk_bytes: int = 1 << 20,  # 1-4 MiB decoded fastest here (a chunk's objects stay in cache)
    block_bytes: int = BLOCK_BYTES,
    skip_categories: Iterable[str] = (),
    scanner: Callable[..., Any] | None = None,
    map_file: bool = False,
) -> StreamedFile:
    """Decode the events of ``path`` piece by piece, handing each piece's list to ``sink``; raises
    :class:`FallBack` when it cannot.

    ``decoder`` decodes a JSON list of events (default: a list of core :class:`Event`); plugins that need
    other fields pass their own, so they share the streaming, splitting and gzip handling.
    ``msgspec.Raw`` fields are views of the bytes they were decoded from, and pieces are decoded in place
    from a reused buffer: a sink that keeps Raw values past its call must copy them.

    Pieces are decoded in place from one reused buffer: the byte before a piece's first event becomes
    ``[`` and the one after its last event ``]`` (both are separators, never needed again).

    ``part=(i, n)`` (plain JSON only) decodes the i-th of n byte ranges of the file: the events from the
    first event boundary at or after ``i * size // n`` up to the first one at or after ``(i + 1) * size // n``;
    :func:`merge_tables` joins the parts. A cut that is not at the top level of the event array makes a
    piece fail to decode, so a part either is right or raises :class:`FallBack`.

    ``skip_categories``: categories the sink would drop. A piece in which every event has one of them is
    not decoded at all (only counted, in :attr:`StreamedFile.skipped_events`); the sink may still get such
    events in pieces that also hold others.

    ``scanner`` (:func:`magpie_trace.native.scanner`): each piece is first read by it, and what it returns
    (columns) goes to the sink instead of the decoded list; a piece it does not handle (None) is decoded as usual.
    ``map_file``: the scanner also reads a piece's items without their brackets (``scanner(buf, True)``): with it (and
    no ``skip_categories``) a plain file's pieces are read in place from a read-only mapping of the file, not copied
    into a buffer; a file that shrinks meanwhile raises :class:`FallBack` once the read is done.
    """
    from magpie_trace.native import guarded_map

    index, count = part
    skipper = PieceSkipper(skip_categories) if skip_categories else None
    with path.open("rb") as f:
        size_on_disk = os.fstat(f.fileno()).st_size
        src = _Source(f, block_bytes)
        if count > 1 and src.gzipped:
            raise FallBack("a gzip stream cannot be split")
        mappable = map_file and scanner is not None and skipper is None and not src.gzipped
        with guarded_map(f, size_on_disk if mappable else 0) as mapping:
            if mapping is not None:
                buf: _PieceBuffer = _MappedPieces(mapping, src, chunk_bytes, decoder, sink, scanner)
            else:
                buf = _PieceBuffer(src, chunk_bytes, block_bytes, decoder, sink, skipper, scanner)
            stop_at = (index + 1) * size_on_disk // count if index < count - 1 else None
            start_at = index * size_on_disk // count
            header = buf.find_event_array() if index == 0 else buf.find_first_event(f, start_at)
            ended = buf.decode_pieces(stop_at)  # True: this part ended before the end of the file
            if not ended:
                rest = buf.rest()
            del buf
        if ended:
            return StreamedFile(size_bytes=size_on_disk, skipped_events=skipper.skipped if skipper else 0)
        size = src.size if index == 0 and mapping is None else size_on_disk
    obj = _decode_last_piece(rest, header, decoder, sink, scanner)
    return StreamedFile(size_bytes=size, header=obj, skipped_events=skipper.skipped if skipper else 0)


#: pieces read by the compiled reader: 2 MiB cut ~5 % of ``stream_table``'s CPU vs 1 MiB on the 150 MB benchmark shapes;
#: 4 MiB was 2-8 % better before the tokenizer got faster (gaptoken-s6), ~5 % worse after it (a first, cold run); with
#: the builder's work in C (gapselect-s7) 1, 2 and 4 MiB were within noise on the 550 MB sglang/vllm shapes
SCANNER_CHUNK_BYTES = 2 << 20


def stream_table(
    path: Path,
    selected: Mapping[str, bool] | Callable[[str], bool],
    *,
    part: tuple[int, int] = (0, 1),
    chunk_bytes: int | None = None,
    block_bytes: int = BLOCK_BYTES,
    defer_rows: bool = False,
) -> EventTable:
    """Decode ``path`` (or one part of it, see :func:`stream_events`) into an :class:`EventTable`;
    :func:`merge_tables` joins the parts of one file. ``chunk_bytes``: piece size (default: SCANNER_CHUNK_BYTES with the
    compiled reader, 1 MiB for msgspec). ``defer_rows``: see :meth:`TableBuilder.finish` (only for merge_tables)."""
    from magpie_trace.native import scanner

    builder = TableBuilder(selected)
    scan = scanner(builder)
    if chunk_bytes is None:
        chunk_bytes = SCANNER_CHUNK_BYTES if scan is not None else 1 << 20
    got = stream_events(
        path,
        builder.add_any,
        part=part,
        chunk_bytes=chunk_bytes,
        block_bytes=block_bytes,
        scanner=scan,
        map_file=MAP_PLAIN_FILES,
    )
    obj = got.header
    dist = obj.distributedInfo if obj is not None else None
    header_platform = platform_from_header(obj)
    return builder.finish(
        path,
        platform=header_platform or builder.platform_hint or "unknown",
        rank=dist.rank if dist is not None else None,
        world_size=dist.world_size if dist is not None else None,
        device_names=[str(d.get("name", "")) for d in (obj.deviceProperties or [])] if obj is not None else [],
        size_bytes=got.size_bytes,
        header_platform=header_platform,
        defer_rows=defer_rows,
    )


_ID_COLUMNS = {"name": "names", "tid": "tids", "dev": "devs", "dims": "dims", "cat": "cats"}
#: the value list each row column's ids index (None: not an id column), ``ROW_NAMES`` order
_ROW_KINDS = tuple(_ID_COLUMNS.get(c) for cols in GROUP_COLUMNS.values() for c, _ in cols)


def merge_tables(parts: list[EventTable], threads: int = 2) -> EventTable:
    """One table from the parts of one file, in file order (ids re-interned; values are unchanged).

    The columns are copied into the merged ones by up to ``threads`` threads (this one included): the copies hold no
    GIL, and most of their cost is the merged table's fresh memory (page faults), which two cores take in half the
    time. A part whose rows the compiled reduction still holds (``pending_rows``) exports them straight into the merged
    columns, its ids mapped on the way: one write instead of an export and a copy."""
    if len(parts) == 1 and parts[0].pending_rows is None:
        return parts[0]
    interners = {k: Interner() for k in set(_ID_COLUMNS.values())}
    # each part's ids -> merged ids, None where they are the same (the first part's always are: its values' places
    # in the fresh interners; later parts' often are, having met the same values in the same order)
    remaps: list[dict[str, np.ndarray | None]] = []
    for p in parts:
        remap: dict[str, np.ndarray | None] = {}
        for kind, interner in interners.items():
            ids = np.array([interner[v] for v in getattr(p, kind)] + [-1], dtype=np.int32)
            remap[kind] = None if np.array_equal(ids[:-1], np.arange(len(ids) - 1)) else ids
        remaps.append(remap)
    groups: dict[str, dict[str, np.ndarray]] = {}
    outs: list[list[np.ndarray]] = [[] for _ in parts]  # each pending part's slices of the merged columns
    jobs: list[tuple[int, Callable[[], None]]] = []  # (bytes written, the copy or export)
    j = 0
    for g, cols in GROUP_COLUMNS.items():
        groups[g] = {}
        for c, _ in cols:
            kind = _ID_COLUMNS.get(c)
            sizes = [len(p.groups[g][c]) if p.pending_rows is None else p.pending_rows.counts[j] for p in parts]
            dtypes = [p.groups[g][c].dtype if p.pending_rows is None else ROW_DTYPES[j] for p in parts]
            dtype = np.result_type(*dtypes) if kind is None else np.result_type(dtypes[0], np.int32)
            out = groups[g][c] = np.empty(sum(sizes), dtype)
            copies: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
            at = 0
            for k, (p, n) in enumerate(zip(parts, sizes, strict=True)):
                if p.pending_rows is not None:
                    outs[k].append(out[at : at + n])
                else:
                    copies.append((out[at : at + n], p.groups[g][c], remaps[k][kind] if kind is not None else None))
                at += n
            if copies:
                jobs.append((sum(a.nbytes for _, a, _ in copies), partial(_copy_into, copies)))
            j += 1
    for k, p in enumerate(parts):
        if p.pending_rows is not None:
            row_remaps = [None if kind is None else remaps[k][kind] for kind in _ROW_KINDS]
            nbytes = sum(o.nbytes for o in outs[k])
            jobs.append((nbytes, partial(p.pending_rows.export, outs[k], row_remaps)))
            p.pending_rows = None  # exported once: the part's table is spent

    _on_threads(_run_jobs, jobs, threads, size=lambda job: job[0])
    last = parts[-1]
    hint, hint_at, seen = None, -1, 0
    for p in parts:
        if p.platform_hint is not None and seen + p.platform_hint_at < PLATFORM_SCAN_EVENTS:
            hint, hint_at = p.platform_hint, seen + p.platform_hint_at
            break
        seen += p.num_events
    return EventTable(
        path=last.path,
        platform=last.header_platform or hint or "unknown",
        rank=last.rank,
        world_size=last.world_size,
        device_names=last.device_names,
        size_bytes=last.size_bytes,
        num_events=sum(p.num_events for p in parts),
        t_min=min(p.t_min for p in parts),
        t_max=max(p.t_max for p in parts),
        names=interners["names"].values,
        cats=interners["cats"].values,
        tids=interners["tids"].values,
        devs=interners["devs"].values,
        dims=interners["dims"].values,
        groups=groups,
        skipped=dict(sum((SkipCounts(p.skipped) for p in parts), SkipCounts())),
        header_platform=last.header_platform,
        platform_hint=hint,
        platform_hint_at=hint_at,
    )


def _copy_into(copies: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> None:
    """Copy each part's column into its slice of the merged one; re-interned ids mapped (-1, no dims, is the remap's
    last entry: -1 again)."""
    for out, a, remap in copies:
        if remap is not None:
            np.take(remap, a, out=out, mode="wrap")
        else:
            out[...] = a


def _run_jobs(jobs: list[tuple[int, Callable[[], None]]]) -> None:
    for _, job in jobs:
        job()


def _on_threads(work: Callable[[list[Any]], None], items: list[Any], threads: int, size: Callable[[Any], int]) -> None:
    """``work`` over ``items`` split into up to ``threads`` shares of about equal ``size``, each on a thread (this one
    included); an exception in any share is raised here once all have ended."""
    shares: list[list[Any]] = [[] for _ in range(max(1, min(threads, len(items))))]
    loads = [0] * len(shares)
    for item in sorted(items, key=size, reverse=True):
        k = loads.index(min(loads))
        shares[k].append(item)
        loads[k] += size(item)
    errors: list[BaseException] = []

    def run(share: list[Any]) -> None:
        try:
            work(share)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    others = [threading.Thread(target=run, args=(share,), daemon=True) for share in shares[1:]]
    for t in others:
        t.start()
    run(shares[0])
    for t in others:
        t.join()
    if errors:
        raise errors[0]


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

    Workers take parts as they become free (:mod:`magpie_trace.fanout`), so with more parts per worker they
    finish closer together, but each part costs a little (its buffer, its transfer, the merge): on the
    555 MB benchmark trace gap analysis was fastest with one part per worker (1.56-1.72 s vs 1.70-1.90 s
    with two)."""
    if workers <= 1 or not splittable(path):
        return 1
    size = Path(path).stat().st_size
    return max(2, min(workers * per_worker, size // max(SPLIT_MIN_BYTES // 2, 1)))


def category_matcher(categories: Sequence[str], ignore: Sequence[str]) -> dict[str, bool]:
    """A cached ``cat -> selected`` mapping for :func:`load_table` and :func:`stream_table`: ``cat`` contains one of
    ``categories`` and none of ``ignore`` (case-insensitive substrings; no ``categories``: all not ignored)."""
    cats = [c.lower() for c in categories]
    ign = [c.lower() for c in ignore]

    class _Cache(dict[str, bool]):
        def __missing__(self, cat: str) -> bool:
            low = cat.lower()
            ok = not (ign and any(i in low for i in ign)) and (not cats or any(c in low for c in cats))
            self[cat] = ok
            return ok

    return _Cache()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off meanwhile (as it was after): decoding makes millions of short-lived objects, none
    cyclic, and the collector's repeated scans of them cost time for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def table_part(
    path: str, index: int, count: int, categories: Sequence[str], ignore_categories: Sequence[str]
) -> EventTable | None:
    """Part ``index`` of ``count`` (:func:`part_count`) of a plain-JSON trace as columns, the events selected by
    :func:`category_matcher`; runs in a worker process. None when the file has to be read whole (a
    :class:`FallBack` of :func:`stream_table`, an unreadable file, no memory); merge parts with :func:`merge_tables`."""
    with collector_paused():
        return _table_or_none(Path(path), category_matcher(categories, ignore_categories), (index, count))


def _table_or_none(
    path: Path, selected: Mapping[str, bool] | Callable[[str], bool], part: tuple[int, int] = (0, 1)
) -> EventTable | None:
    """:func:`stream_table`, or None when the file has to be read whole (a :class:`FallBack`, an unreadable file,
    no memory)."""
    try:
        return stream_table(path, selected, part=part)
    except (FallBack, OSError, MemoryError):
        return None


def split_table(
    path: Path | str, selected: Mapping[str, bool] | Callable[[str], bool], parts: int
) -> EventTable | None:
    """``path`` decoded in ``parts`` byte ranges (:func:`part_count`) by as many threads of this process, this one
    included, and joined by :func:`merge_tables`; None when a part cannot be read so (read the file whole then, e.g.
    with :func:`load_table`, which also says what is wrong with it).

    Threads rather than processes: the compiled reader's pass over a piece holds no GIL, so the parts are read in
    parallel, and their tables need no pickling from a child nor a forked process. A piece it does not handle is
    decoded by msgspec holding the GIL: still right, only not in parallel. A part that fails (any exception) fails
    only itself; the others finish, since a thread cannot be stopped, and every one ends (each reads a bounded range
    of the file once)."""
    path = Path(path)
    if parts <= 1:
        return _table_or_none(path, selected)
    got: list[EventTable | Exception | None] = [None] * parts

    def read(i: int) -> None:
        try:
            got[i] = stream_table(path, selected, part=(i, parts), defer_rows=True)
        except Exception as exc:  # this part's result: the file is then read whole, which reports the error
            got[i] = exc

    threads = [threading.Thread(target=read, args=(i,), name=f"magpie-part-{i}", daemon=True) for i in range(1, parts)]
    for t in threads:
        t.start()
    try:
        read(0)
    finally:
        for t in threads:
            t.join()
    tables = [t for t in got if isinstance(t, EventTable)]
    return merge_tables(tables) if len(tables) == parts else None


def load_table(path: Path | str, selected: Mapping[str, bool] | Callable[[str], bool], parts: int = 1) -> EventTable:
    """The columns of one trace file: streamed when possible (in ``parts`` byte ranges on threads: :func:`split_table`),
    else from :func:`load_trace` (which raises :class:`~magpie_trace.loader.TraceLoadError` naming the file and
    position for broken input)."""
    from magpie_trace.loader import load_trace

    path = Path(path)
    if parts > 1 and (table := split_table(path, selected, parts)) is not None:
        return table
    try:
        return stream_table(path, selected)
    except FallBack:
        pass
    trace = load_trace(path)
    table = table_from_loaded(trace, selected)
    del trace
    return table
