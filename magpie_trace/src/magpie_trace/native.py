"""The optional compiled reader of plain-JSON Kineto traces (``_kineto_scan.c``).

:func:`scanner` gives a function that reads one JSON array of events and reduces it into a
:class:`~magpie_core.trace.columns.TableBuilder` (its rows kept in C, no Python object per event, the GIL released
for the pass and the reduction both), or gives None for anything it is not sure to read exactly as the msgspec decoder
does; the caller then decodes those bytes with msgspec, so results and error messages are the same with and without
it. It is None when the extension was not built (an install without a C compiler:
``setup.py`` marks it optional) or when the environment sets ``MAGPIE_TRACE_NATIVE=0``.
"""

from __future__ import annotations

import importlib
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

if TYPE_CHECKING:
    from magpie_core.trace.columns import NativePiece, TableBuilder

__all__ = ["ENV", "available", "guarded_map", "reader_status", "scanner", "switched_off"]

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


def switched_off() -> bool:
    """Whether the environment turns the compiled readers off (``MAGPIE_TRACE_NATIVE=0``)."""
    return os.environ.get(ENV, "1").strip() == "0"


#: what an install without the compiled readers costs (docs/benchmarks/trace_speed.md, session 8's round: the whole
#: ``magpie -w 1 gap`` command on the 150 and 550 MB benchmark traces)
_SLOWER = "`magpie gap` took 1.6-4.6x longer without them on the benchmark traces"


def reader_status() -> str:
    """One line for people (``magpie plugins``): which reader reads plain-JSON traces and, when it is not the compiled
    one, why and what that costs. An install without a C compiler silently has no compiled reader (``setup.py``
    marks it optional), so this is where a user finds out."""
    from magpie_core.trace.columns import _ROW_NAMES

    mod, kept = _module(), compiled("_kineto_kept")
    if mod is None or kept is None:
        missing = " and ".join(n for n, m in (("_kineto_scan", mod), ("_kineto_kept", kept)) if m is None)
        # where the package was imported from: a source tree run with ``python -m`` is never built, an install is
        return (
            f"trace reader: msgspec only: the compiled readers ({missing}) are not built in {Path(__file__).parent} "
            f"(no C compiler when magpie-core was installed, or a source tree never built?); {_SLOWER}; reinstall "
            "magpie-core where gcc is present"
        )
    if mod.row_columns() != _ROW_NAMES:
        return "trace reader: msgspec only: the compiled reader was built from another magpie-core; reinstall it"
    if switched_off():
        return f"trace reader: msgspec only ({ENV}=0 in the environment; the compiled readers are built)"
    return "trace reader: compiled (magpie_core.trace._kineto_scan, _kineto_kept)"


def scanner(builder: TableBuilder) -> Callable[..., NativePiece | None] | None:
    """The compiled reader of the JSON arrays of events of one file (or part), reducing each into ``builder``: what it
    returns goes to ``builder.add_any``; None when it is off or not built. ``read(buf, bare=False)``: with ``bare``,
    buf holds the array's items without the brackets (a piece of a read-only mapping, :func:`guarded_map`)."""
    if switched_off():
        return None
    mod = _module()
    if mod is None:
        return None
    from magpie_core.trace.columns import _ROW_NAMES

    if mod.row_columns() != _ROW_NAMES:  # an extension built from another version of the source
        return None
    build = mod.build
    # one state per file: the extension keeps its intern tables, column buffers and the builder's rows in it from piece
    # to piece (each distinct name becomes one Python object per file)
    state: list[Any] = []
    builder.native = (mod, state)
    ctx = builder.native_ctx

    def read(buf: Any, bare: bool = False) -> NativePiece | None:
        got: NativePiece | None = build(buf, _UNESCAPE, state, ctx, builder.native_scan_left(), bare)
        return got

    return read


@contextmanager
def guarded_map(f: BinaryIO, size: int) -> Iterator[mmap.mmap | None]:
    """A read-only mapping of the first ``size`` bytes of the open plain file ``f``, for pieces read in place (no copy
    into a buffer), or None where there is none (no compiled reader, an empty or unmappable file, no guard slot).

    A mapped file that shrinks while it is read (its profiler rewrites it) would raise SIGBUS and kill the process: the
    extension's guard makes such a fault read zeros instead, and this raises
    :class:`~magpie_core.trace.columns.FallBack` when the body is done, so what was read is dropped and the file is
    read whole (say, by :func:`~magpie_core.trace.loader.load_trace`, which reports what is wrong with it then)."""
    mod = _module()
    if mod is None or size <= 0:
        yield None
        return
    try:
        mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # not mappable (a pipe, a file shorter than size by now)
        yield None
        return
    slot = mod.guard(mm)
    if slot < 0:
        mm.close()
        yield None
        return
    try:
        yield mm
    finally:
        shrank = mod.unguard(slot)
        try:
            mm.close()
        except BufferError:  # a piece's view outlives the read (an exception's traceback): the mapping goes with it
            pass
    if shrank:
        from magpie_core.trace.columns import FallBack

        raise FallBack("the file changed size while it was read")
