"""Lean, parallel decoding of the trace fields and events this analyzer needs.

The core loader (:func:`magpie_trace.loader.load_trace`) decodes only what
gap analysis reads; the roofline also needs ``Input type``, ``Concrete Inputs``
and the kernel name a runtime launch call carries (``args.kernel``, how graph
captures name their nodes). So the file is streamed piece by piece through the
core's :func:`~magpie_trace.columns.stream_events` (same gzip handling; in
byte ranges over several processes for a large plain-JSON file), decoded with
msgspec into a struct holding exactly these fields, and only the events the
analyses read are kept. Broken files are decoded whole by the core's
:func:`~magpie_trace.loader.read_trace_bytes` path, whose errors say where.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from magpie_trace.columns import RUNTIME_CATS
from magpie_trace.loader import TraceLoadError, decode_error, read_trace_bytes
from magpie_trace.validity import (
    NOT_A_TRACE_NESTED,
    SkipCounts,
    reasons,
    sanitize_events_json,
    valid_durations,
    valid_times,
)
from msgspec import Struct, field

from magpie_inference_analysis.kept_reader import ARG_INT, ARG_RAW, ARG_STR, KeptPiece, kept_reader

#: an absent ``Input Dims`` / ``Input type`` / ``Concrete Inputs`` as decoded: an empty list, as valid JSON
EMPTY = msgspec.Raw(b"[]")
#: ... and as kept: the kept events hold these fields as ``bytes`` (hashable, and they outlive the buffer the
#: ``Raw`` views were decoded from)
NO_LIST = b"[]"


# Only the fields the analyses read: every other key (pid, device, stream, External id...) is skipped by
# the decoder without creating an object for it.
class Args(Struct, gc=False, omit_defaults=True):  # absent fields stay out of the transfer
    correlation: int | None = None
    kernel: str | None = None
    input_dims: msgspec.Raw = field(default=EMPTY, name="Input Dims")
    input_type: msgspec.Raw = field(default=EMPTY, name="Input type")
    concrete: msgspec.Raw = field(default=EMPTY, name="Concrete Inputs")
    strides: msgspec.Raw = field(default=EMPTY, name="Input Strides")


class Ev(Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    tid: int | str = 0
    ts: float | None = None
    dur: float = math.nan  # absent: not a measurement (counted and skipped, see magpie_trace.validity)
    args: Args | None = None


class _KeptArgs(Args, gc=False):
    """:class:`Args` as kept (the JSON texts as bytes), for the transfer between processes."""

    input_dims: bytes = field(default=NO_LIST, name="Input Dims")  # type: ignore[assignment]
    input_type: bytes = field(default=NO_LIST, name="Input type")  # type: ignore[assignment]
    concrete: bytes = field(default=NO_LIST, name="Concrete Inputs")  # type: ignore[assignment]
    strides: bytes = field(default=NO_LIST, name="Input Strides")  # type: ignore[assignment]


class _KeptEv(Ev, gc=False):
    args: _KeptArgs | None = None  # type: ignore[assignment]


class _Obj(Struct):
    traceEvents: list[Ev]  # required: a JSON object without it is not a trace
    deviceProperties: list[dict[str, Any]] | None = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None


_OBJ = msgspec.json.Decoder(_Obj)
_LIST = msgspec.json.Decoder(list[Ev])


GPU_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_kernel"})
#: categories no analysis reads that profilers write in long runs: pieces made only of them are not decoded
#: (:func:`magpie_trace.columns.stream_events`); on the 555 MB benchmark trace that is 53 % of the bytes
SKIPPED_CATS = ("python_function", "cpu_instant_event")
_ENCODE = msgspec.msgpack.Encoder().encode
_BUCKETS = msgspec.msgpack.Decoder(tuple[list[_KeptEv], list[_KeptEv], list[_KeptEv], list[_KeptEv]])
#: a worker's part costs more than the caller's (the msgpack round trip of its events), so parts are
#: smaller here than for gap analysis and the caller, free sooner, takes more of them
PARTS_PER_WORKER = 3
#: pieces this small let :data:`SKIPPED_CATS` runs be skipped undecoded where they alternate with kept events every
#: few hundred events (vLLM/SGLang decode, H100 traces: no 1 MiB piece is made of them alone). Decode CPU per 150 MB
#: (benchmarks/trace_shapes.py traces), 1 MiB -> 64 KiB pieces: vLLM 0.38 -> 0.28 s, SGLang 0.33 -> 0.26 s,
#: H100 0.46 -> 0.35 s, MI300 0.35 -> 0.30 s
CHUNK_BYTES = 64 << 10
#: ... and with the compiled reader, which skips those pieces by the same rule in C and whose per-piece cost is
#: mostly fixed (the Python around each call): 555 MB MI300 trace, decode CPU s, 64 KiB 0.78, 128 KiB 0.64-0.66,
#: 256 KiB 0.60-0.62, 1 MiB 0.64-0.67; 150 MB vLLM trace 0.22-0.26 for all four
NATIVE_CHUNK_BYTES = 256 << 10
#: kept events measured together (:meth:`_Keep.flush`): per 64 KiB piece the numpy calls' fixed cost outweighed
#: their work, and much larger batches leave the cache before they are measured. Load CPU on the 555 MB MI300
#: trace, one worker, best of 3 (stream + sort only): per piece 1.140 s, 512: 1.118, 2048: 1.102, 8192: 1.131
FLUSH_EVENTS = 2048


OpColumns = tuple[np.ndarray, np.ndarray, np.ndarray]  # ts, dur, tid


@dataclass
class Trace:
    """The events the analyses read, sorted into kinds as they were decoded (each in file order).

    Python-function frames, instant events, flow events and runtime calls without a correlation id (over
    half of a typical trace) are dropped right after each piece is decoded, so they are never kept,
    merged or passed between processes."""

    path: Path
    cpu_ops: list[Ev]  # ``cpu_op``
    gpu: list[Ev]  # kernels, memcpy, memset
    runtime: list[Ev]  # runtime/driver calls with a correlation id (launches)
    annotations: list[Ev]  # ``user_annotation``
    t0: float  # the earliest ``ts`` of the kept events; inf when none
    device_properties: list[dict[str, Any]]
    rocm: bool
    size_bytes: int
    num_events: int = 0  # all events in the file, kept or not
    #: complete events of the kinds above skipped for a missing or unbelievable ts/dur: (category, reason) -> count
    skipped: dict[tuple[str, int], int] = dataclass_field(default_factory=dict)
    #: ``ts``, ``dur`` and (integer) ``tid`` of ``cpu_ops`` as columns, built every :data:`FLUSH_EVENTS` kept events,
    #: while their objects are fresh in the cache; None where a thread id is not an integer
    cpu_columns: OpColumns | None = None
    cpu_op_names: set[str] = dataclass_field(default_factory=set)  # the distinct CPU op names

    @property
    def events(self) -> list[Ev]:
        return [*self.cpu_ops, *self.gpu, *self.runtime, *self.annotations]


class _Keep:
    """A sink for :func:`magpie_trace.columns.stream_events`: sorts each piece's events into the kinds
    the analyses read (:class:`Trace`) and drops the rest.

    The pieces are decoded in place from a reused buffer, so the ``Raw`` fields of a kept CPU op (views of
    that buffer) are copied out here, as ``bytes`` (:data:`NO_LIST` when absent). Copying only these bytes
    instead of every piece touched 10 % fewer pages and peaked 45 MB lower on the 555 MB benchmark trace,
    at the same speed."""

    def __init__(self) -> None:
        self.buckets: tuple[list[Ev], list[Ev], list[Ev], list[Ev]] = ([], [], [], [])
        self.t0 = math.inf
        self.seen = 0
        self.cpu_columns: list[OpColumns] | None = []  # per piece; None once a tid is not an integer
        self.cpu_names: set[str] = set()
        self.skipped: SkipCounts = SkipCounts()
        self._measured_to = [0, 0, 0, 0]  # per bucket: how many of its events :meth:`flush` has measured
        self._pending = 0  # events kept since then
        self._native: list[KeptPiece] = []  # pieces of the compiled reader kept since then (their columns)

    def __call__(self, events: list[Ev] | KeptPiece) -> None:
        if isinstance(events, KeptPiece):
            self._add_piece(events)
            return
        if self._native:  # measure the compiled reader's events from its columns before mixing in decoded ones
            self.flush()
        self.seen += len(events)
        cpu, gpu, runtime, anns = self.buckets
        before = len(cpu) + len(gpu) + len(runtime) + len(anns)
        empty = EMPTY
        for e in events:  # one pass: events that are not complete ("X") are dropped here; the kept ones
            if e.ph != "X":  # without a believable ts/dur are counted and dropped by _measured
                continue
            cat = e.cat
            if cat == "cpu_op":
                a = e.args
                if a is not None:
                    a.input_dims = NO_LIST if a.input_dims is empty else bytes(a.input_dims)
                    a.input_type = NO_LIST if a.input_type is empty else bytes(a.input_type)
                    a.concrete = NO_LIST if a.concrete is empty else bytes(a.concrete)
                    a.strides = NO_LIST if a.strides is empty else bytes(a.strides)
                cpu.append(e)
            elif cat in GPU_CATS:
                gpu.append(e)
            elif cat in RUNTIME_CATS:
                if e.args is not None and e.args.correlation is not None:
                    runtime.append(e)
            elif cat == "user_annotation":
                anns.append(e)
        self._pending += len(cpu) + len(gpu) + len(runtime) + len(anns) - before
        if self._pending >= FLUSH_EVENTS:
            self.flush()

    def _add_piece(self, piece: KeptPiece) -> None:
        """A piece read by the compiled reader (:func:`_native_reader`): its events are already sorted into the
        buckets, with their ts/dur/tid as columns."""
        self.seen += piece.seen
        kept = sum(map(len, piece.events))
        if not kept:
            return
        if self._pending and not self._native:  # events decoded by msgspec are measured from their objects first
            self.flush()
        for bucket, new in zip(self.buckets, piece.events, strict=True):
            bucket += new
        self._native.append(piece)
        self._pending += kept
        if self._pending >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        """Measure the events kept since the last flush (:meth:`_measured`) and add the new CPU ops' names and
        columns; called every :data:`FLUSH_EVENTS` kept events and once at the end of the stream."""
        sizes = self._measured_to
        native, self._native = self._native, []
        if native:  # the compiled reader's columns of exactly these events
            cols = [
                (np.concatenate([p.ts[b] for p in native]), np.concatenate([p.dur[b] for p in native]))
                for b in range(len(self.buckets))
            ]
            times = [self._measured(b, s, c) for b, s, c in zip(self.buckets, sizes, cols, strict=True)]
        else:
            times = [self._measured(bucket, size) for bucket, size in zip(self.buckets, sizes, strict=True)]
        cpu = self.buckets[0]
        self._measured_to = [len(b) for b in self.buckets]
        self._pending = 0
        if len(cpu) > sizes[0]:
            new = cpu[sizes[0] :]
            self.cpu_names.update(map(_NAME, new))
            if self.cpu_columns is not None:
                tid = None
                if native and not any(p.tid_is_str[0] for p in native):
                    tid = np.concatenate([p.tid[0] for p in native])
                    if len(tid) != len(new):  # some were dropped (no believable ts/dur): read the kept ones'
                        tid = None
                if tid is None:
                    try:
                        tid = np.fromiter(map(_TID, new), np.int64, len(new))
                    except (TypeError, ValueError, OverflowError):
                        self.cpu_columns = None
                if self.cpu_columns is not None:
                    self.cpu_columns.append((*times[0], tid))

    def _measured(
        self, bucket: list[Ev], size: int, cols: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``ts`` and ``dur`` of the events this piece added to ``bucket`` (from ``size`` on), once the ones
        without a believable ``ts``/``dur`` are dropped from it and counted by category and reason; ``cols``:
        their ``ts``/``dur`` as read by the compiled reader (NaN for a None ``ts``), else read from the objects."""
        new = bucket[size:]
        n = len(new)
        if not n:
            return np.zeros(0), np.zeros(0)
        if cols is not None:
            ts, dur = cols
        else:
            try:
                ts = np.fromiter(map(_TS, new), np.float64, n)
            except TypeError:  # an event without ts (None)
                ts = np.array([math.nan if t is None else t for t in map(_TS, new)], np.float64)
            dur = np.fromiter(map(_DUR, new), np.float64, n)
        ok = valid_times(ts) & valid_durations(dur)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            for i, code in zip(bad.tolist(), reasons(ts[bad], dur[bad]).tolist(), strict=True):
                self.skipped[(new[i].cat, int(code))] += 1
            del bucket[size:]
            bucket.extend(new[i] for i in np.flatnonzero(ok).tolist())
            ts, dur = ts[ok], dur[ok]
        if len(ts):
            # + 0.0: a -0.0 and a 0.0 timestamp compare equal, and min() would keep whichever piece came first
            self.t0 = min(self.t0, float(ts.min()) + 0.0)
        return ts, dur

    def columns(self) -> OpColumns | None:
        if self.cpu_columns is None:
            return None
        if not self.cpu_columns:
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
        return tuple(np.concatenate(c) for c in zip(*self.cpu_columns, strict=True))  # type: ignore[return-value]


_TS, _DUR, _TID, _NAME = attrgetter("ts"), attrgetter("dur"), attrgetter("tid"), attrgetter("name")

#: the buckets of :class:`Trace` (cpu_ops, gpu, runtime, annotations) as the compiled reader keeps them
_BUCKET_CATS = (("cpu_op",), tuple(sorted(GPU_CATS)), tuple(sorted(RUNTIME_CATS)), ("user_annotation",))
#: :class:`_KeptArgs`'s fields in order: (JSON key, kind)
_ARG_FIELDS = (
    ("correlation", ARG_INT),
    ("kernel", ARG_STR),
    ("Input Dims", ARG_RAW),
    ("Input type", ARG_RAW),
    ("Concrete Inputs", ARG_RAW),
    ("Input Strides", ARG_RAW),
)


def _native_reader() -> Callable[[Any], KeptPiece | None] | None:
    """The compiled reader of the kept events (:mod:`magpie_inference_analysis.kept_reader`): the events of
    :class:`Trace` as :class:`Ev` / :class:`_KeptArgs` objects, exactly as msgspec decodes them and :class:`_Keep`
    sorts them (a runtime call needs a correlation id); None when it is off or not built (msgspec decodes)."""
    return kept_reader(
        Ev, _KeptArgs, _BUCKET_CATS, _ARG_FIELDS, NO_LIST, need_arg=[None, None, 0, None], skip_categories=SKIPPED_CATS
    )


def _stream(path: Path, keep: _Keep, part: tuple[int, int] = (0, 1)) -> Any:
    """Stream the file's events (or a byte range of it) into ``keep``: through the compiled reader when it is
    built (it also skips the pieces of :data:`SKIPPED_CATS` alone, by the same rule), else decoded by msgspec."""
    from magpie_trace.columns import stream_events

    reader = _native_reader()
    return stream_events(
        path,
        keep,
        decoder=_LIST,
        part=part,
        skip_categories=() if reader is not None else SKIPPED_CATS,
        chunk_bytes=CHUNK_BYTES if reader is None else NATIVE_CHUNK_BYTES,
        scanner=reader,
    )


def load_part(path: str, index: int, count: int, caller: int) -> tuple[Any, ...]:
    """One byte range of a plain-JSON trace: the kept events (by kind), the CPU op columns and names, their
    ``t0``, the number of events seen, and the file's header.

    In a worker process (not ``caller``) the events come back encoded as msgpack: msgspec encodes and decodes
    that several times faster than pickle handles the structs."""
    keep = _Keep()
    got = _stream(Path(path), keep, (index, count))
    keep.seen += got.skipped_events
    keep.flush()
    buckets = keep.buckets if os.getpid() == caller else _ENCODE(keep.buckets)
    return buckets, keep.columns(), keep.cpu_names, keep.t0, keep.seen, dict(keep.skipped), got.header


def load(path: Path | str, workers: int = 1) -> Trace:
    """Decode one trace, keeping the events the analyses read; a broken file raises :class:`TraceLoadError`
    naming the file. Without the compiled reader, a large plain-JSON file is decoded in ``workers`` byte ranges in
    parallel (:mod:`magpie_trace.fanout`); anything the streaming decoder cannot handle is decoded whole instead."""
    import gc

    from magpie_trace.columns import FallBack, part_count
    from magpie_trace.fanout import run_tasks

    path = Path(path)
    gc_was = gc.isenabled()
    gc.disable()  # millions of short-lived, acyclic objects
    try:
        # with the compiled reader one process reads the file for less CPU than two: its pass is cheaper than
        # the msgpack round trip of a worker's kept events (555 MB MI300 trace, CPU s of all processes, load ~9:
        # 1 process 0.80-1.00, 2 processes 1.36-1.40, and no faster in wall time on this 2-core machine)
        count = part_count(path, workers, PARTS_PER_WORKER) if _native_reader() is None else 1
        if count > 1:
            tasks = [(load_part, (str(path), i, count, os.getpid())) for i in range(count)]
            parts = run_tasks(tasks, workers)
            if not any(isinstance(p, BaseException) for p in parts):
                keep = _Keep()
                for buckets, columns, names, t0, seen, skipped, _ in parts:
                    for mine, theirs in zip(
                        keep.buckets, _BUCKETS.decode(buckets) if isinstance(buckets, bytes) else buckets, strict=True
                    ):
                        mine += theirs
                    if keep.cpu_columns is not None:
                        keep.cpu_columns = None if columns is None else [*keep.cpu_columns, columns]
                    keep.cpu_names |= names
                    keep.t0 = min(keep.t0, t0)
                    keep.seen += seen
                    keep.skipped.update(skipped)
                return _trace(path, keep, parts[-1][-1], path.stat().st_size)
        keep = _Keep()
        try:
            got = _stream(path, keep)
            keep.seen += got.skipped_events
            keep.flush()
        except FallBack:
            return _load_whole(path)
        except OSError as exc:
            raise TraceLoadError(path, f"cannot read: {exc.strerror or exc}") from exc
        return _trace(path, keep, got.header, got.size_bytes)
    finally:
        if gc_was:
            gc.enable()


def _trace(
    path: Path, keep: _Keep, header: Any, size: int, props: list[Any] | None = None, rocm: bool | None = None
) -> Trace:
    if props is None:
        props = (header.deviceProperties or []) if header is not None else []
    if rocm is None:
        rocm = header is not None and (header.roctracer_version is not None or header.hip_runtime_version is not None)
    return Trace(
        path, *keep.buckets, keep.t0, props, rocm, size, keep.seen, dict(keep.skipped), keep.columns(), keep.cpu_names
    )


def _load_whole(path: Path) -> Trace:
    """The whole file in one decode: slower, but its errors say where the file is broken."""
    buf = read_trace_bytes(path)
    head = buf[:64].lstrip()
    if not head:
        raise TraceLoadError(path, "empty file")
    if head[:1] not in (b"[", b"{"):
        raise TraceLoadError(path, f"not a JSON trace (starts with {head[:16]!r})")
    try:
        try:
            events, props, rocm = _decode_whole(buf)
        except msgspec.ValidationError as exc:  # a string or null where ts/dur belong: counted and skipped
            clean = sanitize_events_json(buf)
            if clean is None:
                raise decode_error(path, buf, exc) from None
            try:
                events, props, rocm = _decode_whole(clean)
            except (msgspec.DecodeError, msgspec.ValidationError):  # the first error is the one about the file
                raise decode_error(path, buf, exc) from None
    except msgspec.DecodeError as exc:
        raise decode_error(path, buf, exc) from None
    except RecursionError:
        raise TraceLoadError(path, NOT_A_TRACE_NESTED) from None
    keep = _Keep()
    keep(events)
    keep.flush()
    return _trace(path, keep, None, len(buf), props, rocm)


def _decode_whole(buf: bytes) -> tuple[list[Ev], list[dict[str, Any]], bool]:
    if buf.lstrip()[:1] == b"[":
        return _LIST.decode(buf), [], False
    obj = _OBJ.decode(buf)
    rocm = obj.roctracer_version is not None or obj.hip_runtime_version is not None
    return obj.traceEvents, obj.deviceProperties or [], rocm


def decode_list(raw: bytes) -> list[Any]:
    """``Input Dims`` / ``Input type`` / ``Concrete Inputs`` as a Python list (empty when absent)."""
    if not raw:
        return []
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []
