"""Lean decoding of the trace fields this analyzer needs.

The core loader (:func:`magpie_core.trace.loader.load_trace`) decodes only what
gap analysis reads; the roofline also needs ``Input type``, ``Concrete Inputs``
and the kernel name a runtime launch call carries (``args.kernel``, how graph
captures name their nodes). So the bytes come from the core's public
:func:`~magpie_core.trace.loader.read_trace_bytes` (same gzip handling and
errors) and are decoded here with msgspec into a struct holding exactly these
fields; everything else in the file is skipped without building objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Struct, field

from magpie_core.trace.loader import TraceLoadError, read_trace_bytes


class Args(Struct, gc=False):
    external_id: int | None = field(default=None, name="External id")
    correlation: int | None = None
    device: int | str | None = None
    stream: int | str | None = None
    kernel: str | None = None
    input_dims: msgspec.Raw = field(default_factory=msgspec.Raw, name="Input Dims")
    input_type: msgspec.Raw = field(default_factory=msgspec.Raw, name="Input type")
    concrete: msgspec.Raw = field(default_factory=msgspec.Raw, name="Concrete Inputs")


class Ev(Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float = 0.0
    args: Args | None = None


class _Obj(Struct):
    traceEvents: list[Ev] = []
    deviceProperties: list[dict[str, Any]] | None = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None


_OBJ = msgspec.json.Decoder(_Obj)
_LIST = msgspec.json.Decoder(list[Ev])


@dataclass
class Trace:
    path: Path
    events: list[Ev]
    device_properties: list[dict[str, Any]]
    rocm: bool
    size_bytes: int


def load(path: Path | str) -> Trace:
    """Decode one trace; a broken file raises :class:`TraceLoadError` naming the file."""
    path = Path(path)
    buf = read_trace_bytes(path)
    head = buf[:64].lstrip()
    try:
        if head[:1] == b"[":
            events, props, rocm = _LIST.decode(buf), [], False
        elif head[:1] == b"{":
            obj = _OBJ.decode(buf)
            events, props = obj.traceEvents, obj.deviceProperties or []
            rocm = obj.roctracer_version is not None or obj.hip_runtime_version is not None
        else:
            raise TraceLoadError(path, f"not a JSON trace (starts with {head[:16]!r})")
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceLoadError(path, f"broken trace JSON: {exc}") from None
    return Trace(path, events, props, rocm, len(buf))


def decode_list(raw: msgspec.Raw) -> list[Any]:
    """``Input Dims`` / ``Input type`` / ``Concrete Inputs`` as a Python list (empty when absent)."""
    if not raw:
        return []
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []
