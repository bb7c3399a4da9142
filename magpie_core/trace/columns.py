"""Columnar event tables: the compact, analysis-ready form of one trace file.

:func:`stream_table` decodes a trace chunk by chunk: the ``traceEvents`` array is
cut at event boundaries into pieces of about ``chunk_bytes``, each piece is
decoded with msgspec into :class:`~magpie_core.trace.loader.Event` structs,
reduced at once to numpy columns and dropped. Peak memory is therefore the
columns plus one chunk, never the whole file buffer or one Python object per
event. Names, categories, thread ids, devices and ``Input Dims`` texts are
interned to small integer ids.

Only the groups of events the per-rank analysis reads are kept (CPU ops, Python
functions, runtime launch calls, GPU activity, annotations, flow starts and
the events selected for kernel statistics), each in file order, so results are
the same as a pass over the decoded event list.

Whenever the fast path meets something it does not expect (a piece that does
not decode, no ``traceEvents`` key, a broken gzip stream), it gives up and the
caller decodes the whole file with :func:`~magpie_core.trace.loader.load_trace`,
whose errors name the file and position.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from magpie_core.trace.loader import (
    _LIST_DECODER,
    _OBJECT_DECODER,
    Event,
    LoadedTrace,
    _header_platform,
    _TraceObject,
)

#: ``None`` in an integer id column (correlation, External id)
NONE = np.iinfo(np.int64).min

GPU_ACTIVITY_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "gpu_kernel"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "runtime", "driver"})
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})
PLATFORM_SCAN_EVENTS = 200_000  # as loader._platform: the first events that may name the runtime

_CPU, _PY, _RT, _ACT, _ANN = 1, 2, 3, 4, 5
_GROUP_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {
    "cpu": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("ext", np.int64), ("dims", np.int32)),
    "py": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("tid", np.int32)),
    "rt": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("tid", np.int32), ("corr", np.int64)),
    "act": (
        ("ts", np.float64),
        ("dur", np.float64),
        ("name", np.int32),
        ("dev", np.int32),
        ("kernel", np.bool_),
        ("corr", np.int64),
    ),
    "ann": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("cat", np.int32)),
    "sel": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("ext", np.int64), ("corr", np.int64)),
    "flow": (("id", np.int64), ("ts", np.float64)),
}


class _Interner(dict):  # type: ignore[type-arg]
    """value -> dense id; ``values[id]`` gives the value back. Lookups of known values stay in C."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[Any] = []

    def __missing__(self, key: Any) -> int:
        i = len(self.values)
        self[key] = i
        self.values.append(key)
        return i


def _int_column(values: list[Any]) -> np.ndarray:
    """int64 column of ids; ``None`` -> NONE, ids up to 2**64 - 1 (msgspec's range) wrap into int64."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, OverflowError, ValueError):
        return np.array(
            [NONE if v is None else (v - (1 << 64) if v >= (1 << 63) else v) for v in values], dtype=np.int64
        )


def _take(items: Sequence[Any], idx: np.ndarray) -> list[Any]:
    return list(map(items.__getitem__, idx.tolist()))


def _args_field(args: list[Any], name: str) -> list[Any]:
    get = attrgetter(name)
    try:
        return list(map(get, args))
    except AttributeError:  # some events without ``args``
        return [None if a is None else get(a) for a in args]


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

    def __getitem__(self, group: str) -> dict[str, np.ndarray]:
        return self.groups[group]


class TableBuilder:
    """Reduces decoded events, one chunk at a time, to the columns of an :class:`EventTable`."""

    def __init__(self, selected: Mapping[str, bool] | Callable[[str], bool]) -> None:
        self._selected = selected.__getitem__ if isinstance(selected, Mapping) else selected
        self.names = _Interner()
        self.cats = _Interner()
        self.phs = _Interner()
        self.tids = _Interner()
        self.devs = _Interner()
        self.dims = _Interner()
        self.num_events = 0
        self.t_min = math.inf
        self.t_max = -math.inf
        self.platform_hint: str | None = None
        self._scan_left = PLATFORM_SCAN_EVENTS
        self._cat_code = np.zeros(0, np.int8)
        self._cat_sel = np.zeros(0, np.bool_)
        self._parts: dict[str, list[dict[str, np.ndarray]]] = {g: [] for g in _GROUP_COLUMNS}
        self._x = self.phs["X"]
        self._s = self.phs["s"]

    def _refresh_cats(self) -> None:
        codes = []
        for cat in self.cats.values:
            if cat == "cpu_op":
                codes.append(_CPU)
            elif cat == "python_function":
                codes.append(_PY)
            elif cat in RUNTIME_CATS:
                codes.append(_RT)
            elif cat in GPU_ACTIVITY_CATS:
                codes.append(_ACT)
            elif cat in ANNOTATION_CATS:
                codes.append(_ANN)
            else:
                codes.append(0)
        self._cat_code = np.array(codes, dtype=np.int8)
        self._cat_sel = np.array([bool(self._selected(c)) for c in self.cats.values], dtype=np.bool_)

    def _ids(self, interner: _Interner, values: list[Any]) -> np.ndarray:
        return np.fromiter(map(interner.__getitem__, values), np.int32, len(values))

    def add(self, evs: Sequence[Event]) -> None:
        n = len(evs)
        if n == 0:
            return
        self.num_events += n
        cid = self._ids(self.cats, [e.cat for e in evs])
        if len(self.cats.values) != len(self._cat_code):
            self._refresh_cats()
        ph = self._ids(self.phs, [e.ph for e in evs])
        ts = np.array([e.ts for e in evs], dtype=np.float64)  # None -> nan
        dur = np.fromiter(map(attrgetter("dur"), evs), np.float64, n)
        timed = ~np.isnan(ts)
        if self._scan_left > 0:
            self._scan_platform(evs, cid)
        if not timed.any():
            return
        all_timed = bool(timed.all())
        if all_timed:
            lo, hi = float(ts.min()), float((ts + dur).max())
        else:
            lo, hi = float(ts[timed].min()), float((ts[timed] + dur[timed]).max())
        self.t_min = min(self.t_min, lo)
        self.t_max = max(self.t_max, hi)
        x = ph == self._x
        if not all_timed:
            x &= timed
        code = np.where(x, self._cat_code[cid], -1)
        for g, fn in ((_CPU, self._cpu), (_PY, self._py), (_RT, self._rt), (_ACT, self._act), (_ANN, self._ann)):
            idx = np.flatnonzero(code == g)
            if len(idx):
                fn(_take(evs, idx), ts[idx], dur[idx], cid[idx])
        sel = np.flatnonzero(x & self._cat_sel[cid])
        if len(sel):
            sub = _take(evs, sel)
            args = [e.args for e in sub]
            self._parts["sel"].append(
                {
                    "ts": ts[sel],
                    "dur": dur[sel],
                    "name": self._ids(self.names, [e.name for e in sub]),
                    "ext": _int_column(_args_field(args, "external_id")),
                    "corr": _int_column(_args_field(args, "correlation")),
                }
            )
        flow_cat = self.cats.get("ac2g")
        if flow_cat is not None:
            fl = np.flatnonzero((ph == self._s) & (cid == flow_cat) & timed)
            if len(fl):
                ids, fts = [], []
                for e, t in zip(_take(evs, fl), ts[fl].tolist(), strict=True):
                    # flow starts are looked up by (integer) correlation: other ids can never match
                    if type(e.id) is int:
                        ids.append(e.id)
                        fts.append(t)
                if ids:
                    self._parts["flow"].append({"id": _int_column(ids), "ts": np.array(fts, dtype=np.float64)})

    def _scan_platform(self, evs: Sequence[Event], cid: np.ndarray) -> None:
        limit = min(len(evs), self._scan_left)
        self._scan_left -= limit
        if self.platform_hint is not None:
            return
        rt_ids = [self.cats[c] for c in ("cuda_runtime", "cuda_driver") if c in self.cats]
        if not rt_ids:
            return
        for i in np.flatnonzero(np.isin(cid[:limit], rt_ids)).tolist():
            name = evs[i].name
            if name.startswith("hip"):
                self.platform_hint = "rocm"
                return
            if name.startswith("cu"):
                self.platform_hint = "cuda"
                return

    def _cpu(self, sub: list[Event], ts: np.ndarray, dur: np.ndarray, cid: np.ndarray) -> None:
        args = [e.args for e in sub]
        dims = _args_field(args, "input_dims")
        get = self.dims.__getitem__
        self._parts["cpu"].append(
            {
                "ts": ts,
                "dur": dur,
                "name": self._ids(self.names, [e.name for e in sub]),
                "ext": _int_column(_args_field(args, "external_id")),
                "dims": np.array([get(bytes(r)) if r else -1 for r in dims], dtype=np.int32),
            }
        )

    def _py(self, sub: list[Event], ts: np.ndarray, dur: np.ndarray, cid: np.ndarray) -> None:
        self._parts["py"].append(
            {
                "ts": ts,
                "dur": dur,
                "name": self._ids(self.names, [e.name for e in sub]),
                "tid": self._ids(self.tids, [e.tid for e in sub]),
            }
        )

    def _rt(self, sub: list[Event], ts: np.ndarray, dur: np.ndarray, cid: np.ndarray) -> None:
        corr = _int_column(_args_field([e.args for e in sub], "correlation"))
        keep = corr != NONE  # only calls with a correlation id launch anything
        if not keep.all():
            idx = np.flatnonzero(keep)
            sub, ts, dur, corr = _take(sub, idx), ts[idx], dur[idx], corr[idx]
            if not sub:
                return
        self._parts["rt"].append(
            {
                "ts": ts,
                "dur": dur,
                "name": self._ids(self.names, [e.name for e in sub]),
                "tid": self._ids(self.tids, [e.tid for e in sub]),
                "corr": corr,
            }
        )

    def _act(self, sub: list[Event], ts: np.ndarray, dur: np.ndarray, cid: np.ndarray) -> None:
        devs = [str(e.args.device if e.args is not None and e.args.device is not None else e.pid) for e in sub]
        kernel = self.cats.get("kernel", -1)
        self._parts["act"].append(
            {
                "ts": ts,
                "dur": dur,
                "name": self._ids(self.names, [e.name for e in sub]),
                "dev": self._ids(self.devs, devs),
                "kernel": cid == kernel,
                "corr": _int_column(_args_field([e.args for e in sub], "correlation")),
            }
        )

    def _ann(self, sub: list[Event], ts: np.ndarray, dur: np.ndarray, cid: np.ndarray) -> None:
        self._parts["ann"].append(
            {"ts": ts, "dur": dur, "name": self._ids(self.names, [e.name for e in sub]), "cat": cid}
        )

    def finish(
        self,
        path: Path,
        *,
        platform: str,
        rank: int | None,
        world_size: int | None,
        device_names: list[str],
        size_bytes: int,
    ) -> EventTable:
        groups: dict[str, dict[str, np.ndarray]] = {}
        for g, cols in _GROUP_COLUMNS.items():
            parts = self._parts[g]
            groups[g] = {
                c: (np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, dtype)) for c, dtype in cols
            }
            parts.clear()
        return EventTable(
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


class FallBack(Exception):
    """The streaming decoder met something it does not handle; decode the whole file instead."""


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_WS = b" \t\r\n"
BLOCK_BYTES = 32 << 20


def _blocks(path: Path, block: int) -> Iterator[bytes]:
    """The decompressed bytes of a file, a block at a time (gzip members in sequence)."""
    with path.open("rb") as f:
        first = f.read(block)
        if first[:2] != b"\x1f\x8b":
            data = first
            while data:
                yield data
                data = f.read(block)
            return
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


def _decode_piece(piece: bytes | memoryview) -> list[Event]:
    try:
        return _LIST_DECODER.decode(b"".join((b"[", piece, b"]")))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FallBack(str(exc)) from None


def stream_table(
    path: Path,
    selected: Mapping[str, bool] | Callable[[str], bool],
    *,
    chunk_bytes: int = 4 << 20,
    block_bytes: int = BLOCK_BYTES,
) -> EventTable:
    """Decode ``path`` piece by piece into an :class:`EventTable`; raises :class:`FallBack` when it cannot."""
    builder = TableBuilder(selected)
    src = _blocks(path, block_bytes)
    size = 0
    buf = b""
    eof = False

    def more() -> bool:
        nonlocal buf, size
        blk = next(src, None)
        if blk is None:
            return False
        size += len(blk)
        buf += blk
        return True

    # -- find the event array ---------------------------------------------------
    header: bytes | None = None
    pos = -1
    while pos < 0:
        if not more():
            raise FallBack("no event array")
        start = len(buf) - len(buf.lstrip(_WS))
        if start >= len(buf):
            continue
        if buf[start : start + 1] == b"[":
            pos = start + 1
        elif buf[start : start + 1] == b"{":
            m = _EVENTS_KEY.search(buf)
            if m is not None:
                header = buf[: m.end() - 1]
                pos = m.end()
        else:
            raise FallBack("not JSON")

    # -- whole pieces ---------------------------------------------------------------
    while True:
        while len(buf) - pos > chunk_bytes:
            m = _BOUNDARY.search(buf, pos + chunk_bytes)
            if m is None:
                break
            builder.add(_decode_piece(memoryview(buf)[pos : m.start() + 1]))
            pos = m.end() - 1
        if eof:
            break
        blk = next(src, None)
        if blk is None:
            eof = True
            continue
        size += len(blk)
        buf = b"".join((memoryview(buf)[pos:], blk))
        pos = 0

    # -- the last piece and what follows the array ---------------------------------------
    rest = buf[pos:]
    del buf
    obj: _TraceObject | None = None
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
                obj = _OBJECT_DECODER.decode(header + b"[]" + tail)
                if obj.traceEvents:
                    raise FallBack("second event array")
            events = _LIST_DECODER.decode(b"".join((b"[", rest[:k], b"]")))
        except (msgspec.DecodeError, msgspec.ValidationError, FallBack):
            obj = None
            continue
        builder.add(events)
        del events
        break
    else:
        raise FallBack("end of the event array not found")
    if k < 0:
        raise FallBack("end of the event array not found")

    dist = obj.distributedInfo if obj is not None else None
    platform = _header_platform(obj) or builder.platform_hint or "unknown"
    return builder.finish(
        path,
        platform=platform,
        rank=dist.rank if dist is not None else None,
        world_size=dist.world_size if dist is not None else None,
        device_names=[str(d.get("name", "")) for d in (obj.deviceProperties or [])] if obj is not None else [],
        size_bytes=size,
    )


def load_table(path: Path | str, selected: Mapping[str, bool] | Callable[[str], bool]) -> EventTable:
    """The columns of one trace file: streamed when possible, else from :func:`load_trace` (which raises
    :class:`~magpie_core.trace.loader.TraceLoadError` naming the file and position for broken input)."""
    from magpie_core.trace.loader import load_trace

    path = Path(path)
    try:
        return stream_table(path, selected)
    except FallBack:
        pass
    trace = load_trace(path)
    table = table_from_loaded(trace, selected)
    del trace
    return table
