"""Typed, lean decoding of PyTorch profiler (Kineto / Chrome trace) files.

Only the fields the analyses need are decoded (msgspec skips the rest without
building Python objects), events are untracked by the garbage collector, and
``Input Dims`` stays raw JSON until a kernel actually needs its shapes.

Accepted inputs: ``.json`` and ``.json.gz``; a bare event list or an object
with ``traceEvents``; CUDA (``cuda*`` runtime, CUPTI) and ROCm (``hip*``
runtime, roctracer, hex stream ids) flavours.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from magpie_trace.validity import NOT_A_TRACE_NESTED, not_a_trace, sanitize_events_json
from msgspec import Struct, field

__all__ = [
    "LIST_DECODER",
    "NO_ARGS",
    "NO_ID",
    "OBJECT_DECODER",
    "Args",
    "DistributedInfo",
    "Event",
    "LoadedTrace",
    "TraceLoadError",
    "TraceObject",
    "decode_error",
    "load_trace",
    "platform_from_header",
    "read_trace_bytes",
]


#: an absent integer id (``External id``, ``correlation``); a plain int, so id columns fill without a None check
NO_ID = -(1 << 63)


class Args(Struct, gc=False, frozen=True):
    """The ``args`` fields magpie reads; every other key is skipped while decoding.

    Absent ids are :data:`NO_ID` (an explicit JSON ``null`` stays ``None``)."""

    external_id: int | None = field(default=NO_ID, name="External id")
    correlation: int | None = NO_ID
    device: int | str | None = None
    stream: int | str | None = None
    input_dims: msgspec.Raw = field(default_factory=msgspec.Raw, name="Input Dims")


#: the ``args`` of an event that has none
NO_ARGS = Args()


class Event(Struct, gc=False):
    """One trace event (``ph`` X, s, f, i, M ...); ``ts`` and ``dur`` are NaN when the event has none
    (:mod:`magpie_trace.validity` says which complete events hold a measurement)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = math.nan
    dur: float = math.nan
    id: int | str | None = None
    args: Args = NO_ARGS


class DistributedInfo(Struct):
    """The ``distributedInfo`` key of a trace written by one rank of a distributed run."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


class TraceObject(Struct):
    """A trace file written as a JSON object: the event array and the keys around it that magpie reads.

    ``traceEvents`` is required: a JSON object without it is not a trace (not an empty one)."""

    traceEvents: list[Event]
    distributedInfo: DistributedInfo | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None
    cuda_runtime_version: Any = None
    cupti_version: Any = None


#: decodes a whole trace written as a JSON object (:class:`TraceObject`)
OBJECT_DECODER = msgspec.json.Decoder(TraceObject)
#: decodes a JSON list of events (a trace written as a bare event list, or one piece of an event array)
LIST_DECODER = msgspec.json.Decoder(list[Event])


class TraceLoadError(ValueError):
    """A trace file could not be read; the message names the file and where it broke."""

    def __init__(self, path: Path | str, message: str, *, offset: int | None = None) -> None:
        self.path = str(path)
        self.offset = offset
        super().__init__(f"{path}: {message}")


@dataclass
class LoadedTrace:
    """One trace file decoded whole: its events and what its header says."""

    path: Path
    events: list[Event]
    platform: str  # "cuda" | "rocm" | "unknown"
    rank: int | None  # from distributedInfo, when present
    world_size: int | None
    device_names: list[str]
    size_bytes: int


def read_trace_bytes(path: Path) -> bytes:
    """The decompressed bytes of a trace; a truncated or corrupt gzip is a TraceLoadError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceLoadError(path, f"cannot read: {exc.strerror or exc}") from exc
    if raw[:2] != b"\x1f\x8b":
        return raw
    # Decompress member by member so a truncated stream reports how far it got.
    out: list[bytes] = []
    produced = 0
    data = raw
    while data:
        dec = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            chunk = dec.decompress(data)
        except zlib.error as exc:
            raise TraceLoadError(
                path, f"corrupt gzip data after {produced} decompressed bytes ({exc})", offset=produced
            ) from exc
        out.append(chunk)
        produced += len(chunk)
        if not dec.eof:
            raise TraceLoadError(
                path,
                f"truncated gzip: the compressed stream ends after {produced} decompressed bytes "
                f"(file is {len(raw)} bytes; was it copied while still being written?)",
                offset=produced,
            )
        data = dec.unused_data.lstrip(b"\x00")
    return b"".join(out) if len(out) > 1 else out[0]


def _line_col(buf: bytes, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(buf)))
    line = buf.count(b"\n", 0, offset) + 1
    col = offset - (buf.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


#: msgspec's whole message for input that ends inside the JSON (it gives no byte: the end of the data is the place)
_CUT_SHORT = "Input data was truncated"


def decode_error(path: Path, buf: bytes, exc: Exception) -> TraceLoadError:
    """The error for a failed msgspec decode of the whole trace ``buf`` read from ``path``: where the JSON is broken
    (byte, line, column), where it ends when it was cut short, or why it is not a trace (a type error's JSON path)."""
    text = str(exc)
    if text == _CUT_SHORT:  # a profiler killed while writing, a copy still in progress: say so, and where it ends
        line, _ = _line_col(buf, len(buf))
        return TraceLoadError(
            path,
            f"truncated JSON: the data ends at byte {len(buf)}, line {line}, before the trace is complete "
            "(was the file still being written?)",
            offset=len(buf),
        )
    # msgspec reports "... (byte N)" for syntax errors and "... - at `$.path`" for type errors
    marker = "(byte "
    if text.startswith("Invalid UTF-8") and marker not in text:  # msgspec gives no position: find the first bad byte
        try:
            bytes(buf).decode("utf-8")
        except UnicodeDecodeError as bad:
            text = f"{text} (byte {bad.start})"
    if marker in text:
        try:
            offset = int(text.rsplit(marker, 1)[1].split(")", 1)[0])
        except ValueError:
            offset = None
        if offset is not None:
            line, col = _line_col(buf, offset)
            where = "end of data (the JSON is truncated)" if offset >= len(buf) else f"line {line}, column {col}"
            return TraceLoadError(path, f"broken JSON at byte {offset}, {where}: {text}", offset=offset)
    return TraceLoadError(path, not_a_trace(text))


def platform_from_header(obj: TraceObject | None) -> str | None:
    """``rocm`` or ``cuda`` when the header names that runtime's tracer or version, else None."""
    if obj is not None:
        if obj.roctracer_version is not None or obj.hip_runtime_version is not None:
            return "rocm"
        if obj.cuda_runtime_version is not None or obj.cupti_version is not None:
            return "cuda"
    return None


def _platform(obj: TraceObject | None, events: list[Event]) -> str:
    from_header = platform_from_header(obj)
    if from_header is not None:
        return from_header
    for e in events[:200000]:
        if e.cat in ("cuda_runtime", "cuda_driver"):
            if e.name.startswith("hip"):
                return "rocm"
            if e.name.startswith("cu"):
                return "cuda"
    return "unknown"


def _decode(buf: bytes, start: int) -> tuple[TraceObject | None, list[Event]]:
    if buf[start : start + 1] == b"[":
        return None, LIST_DECODER.decode(buf)
    obj = OBJECT_DECODER.decode(buf)
    return obj, obj.traceEvents


def load_trace(path: Path | str) -> LoadedTrace:
    """Decode one trace file, or raise :class:`TraceLoadError` naming the file and position."""
    path = Path(path)
    buf = read_trace_bytes(path)
    start = 0
    while start < len(buf) and buf[start] in b" \t\r\n":
        start += 1
    if start >= len(buf):
        raise TraceLoadError(path, "empty file")
    if buf[start : start + 1] not in (b"[", b"{"):
        raise TraceLoadError(path, f"not a JSON trace (starts with {buf[start : start + 16]!r})", offset=start)
    try:
        obj, events = _decode(buf, start)
    except msgspec.ValidationError as exc:
        # a string or null where ``ts``/``dur`` belong: those events are counted and skipped, not fatal
        clean = sanitize_events_json(buf)
        if clean is None:
            raise decode_error(path, buf, exc) from None
        try:
            obj, events = _decode(clean, 0)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise decode_error(path, buf, exc) from None
    except msgspec.DecodeError as exc:
        raise decode_error(path, buf, exc) from None
    except RecursionError:
        raise TraceLoadError(path, NOT_A_TRACE_NESTED) from None
    dist = obj.distributedInfo if obj is not None else None
    devices = [str(d.get("name", "")) for d in (obj.deviceProperties or [])] if obj is not None else []
    return LoadedTrace(
        path=path,
        events=events,
        platform=_platform(obj, events),
        rank=dist.rank if dist is not None else None,
        world_size=dist.world_size if dist is not None else None,
        device_names=devices,
        size_bytes=len(buf),
    )
