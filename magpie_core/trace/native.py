"""The optional compiled reader of plain-JSON Kineto traces (``_kineto_scan.c``).

:func:`scanner` gives a function that reads one JSON array of events into :class:`~magpie_core.trace.columns.
ScannedEvents` (columns, no Python object per event), or None for anything it is not sure to read exactly as the
msgspec decoder does; the caller then decodes those bytes with msgspec, so results and error messages are the
same with and without it. It is None when the extension was not built (an install without a C compiler:
``setup.py`` marks it optional) or when the environment sets ``MAGPIE_TRACE_NATIVE=0``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from magpie_core.trace.columns import ScannedEvents

__all__ = ["ENV", "available", "scanner"]

#: ``0`` turns the compiled reader off (the pure-Python path runs; tests run both)
ENV = "MAGPIE_TRACE_NATIVE"

#: a JSON string literal (with escapes) -> str, exactly as msgspec decodes it
_UNESCAPE = msgspec.json.Decoder(str).decode


def compiled(name: str) -> Any:
    """The optional compiled module ``magpie_core.trace.<name>``, or None where it was not built."""
    try:
        return importlib.import_module(f"magpie_core.trace.{name}")
    except ImportError:
        return None


def _module() -> Any:
    return compiled("_kineto_scan")


def available() -> bool:
    """Whether the compiled reader is built (whatever ``MAGPIE_TRACE_NATIVE`` says)."""
    return _module() is not None


def scanner() -> Callable[[Any], ScannedEvents | None] | None:
    """The compiled reader of the JSON arrays of events of one file (call it again for another file), or None when
    it is off or not built."""
    if os.environ.get(ENV, "1").strip() == "0":
        return None
    mod = _module()
    if mod is None:
        return None
    from magpie_core.trace.columns import ScannedEvents, _ScanMaps

    scan = mod.scan
    # one reader per file: the extension keeps its intern tables and buffers in ``state`` from piece to piece (each
    # distinct name becomes one Python object per file), ``maps`` their ids in the table builder's interners
    state: list[Any] = []
    maps = _ScanMaps()

    def read(buf: Any) -> ScannedEvents | None:
        raw = scan(buf, _UNESCAPE, state)
        return None if raw is None else ScannedEvents.from_scan(raw, maps)

    return read
