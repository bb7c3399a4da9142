"""The optional compiled reader of plain-JSON Kineto traces, from the distribution ``magpie-trace-native``.

:func:`scanner` gives a function that reads one JSON array of events and reduces it into a
:class:`~magpie_trace.columns.TableBuilder` (its rows kept in C, no Python object per event, the GIL released
for the pass and the reduction both), or gives None for anything it is not sure to read exactly as the msgspec decoder
does; the caller then decodes those bytes with msgspec, so results and error messages are the same with and without
it. It is None when ``magpie-trace-native`` is not installed, when it was installed without a C compiler (its
``setup.py`` marks the extensions optional), or when the environment sets ``MAGPIE_TRACE_NATIVE=0``.

The lookup: the compiled modules are ``magpie_trace_native._kineto_scan`` and ``magpie_trace_native._kineto_kept``
(:data:`PACKAGE`), imported on first use; :func:`compiled` gives either (or another extension of that package) to an
analyzer with a compiled reader of its own, as the inference analyzer's kept-events reader.
"""

from __future__ import annotations

import importlib
import importlib.util
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec
from magpie_trace.fastpath import ROW_NAMES, FallBack

if TYPE_CHECKING:
    from magpie_trace.table import NativePiece, TableBuilder

__all__ = ["ENV", "PACKAGE", "available", "compiled", "guarded_map", "reader_status", "scanner", "switched_off"]

#: ``0`` turns the compiled reader off (the pure-Python path runs; tests run both)
ENV = "MAGPIE_TRACE_NATIVE"
#: the package of the compiled modules (distribution ``magpie-trace-native``)
PACKAGE = "magpie_trace_native"
#: the distribution that builds them
DIST = "magpie-trace-native"

#: a JSON string literal (with escapes) -> str, exactly as msgspec decodes it
_UNESCAPE = msgspec.json.Decoder(str).decode


def compiled(name: str) -> Any:
    """The optional compiled module ``magpie_trace_native.<name>``, or None where it is not installed or not built."""
    try:
        return importlib.import_module(f"{PACKAGE}.{name}")
    except ImportError:
        return None


def _package_dir() -> Path | None:
    """Where ``magpie_trace_native`` is installed, or None where it is not."""
    spec = importlib.util.find_spec(PACKAGE)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


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
    """One line for people (``magpie plugins`` prints it through the trace analyzers): which reader reads plain-JSON
    traces and, when it is not the compiled one, why and what that costs. An install without a C compiler silently has
    no compiled reader (``setup.py`` of magpie-trace-native marks it optional), so this is where a user finds out."""
    where = _package_dir()
    if where is None:
        return (
            f"trace reader: msgspec only: the compiled readers ({DIST}) are not installed; {_SLOWER}; "
            f"install {DIST} where gcc is present"
        )
    mod, kept = _module(), compiled("_kineto_kept")
    if mod is None or kept is None:
        missing = " and ".join(n for n, m in (("_kineto_scan", mod), ("_kineto_kept", kept)) if m is None)
        return (
            f"trace reader: msgspec only: the compiled readers ({missing}) are not built in {where} "
            f"(no C compiler when {DIST} was installed?); {_SLOWER}; reinstall {DIST} where gcc "
            "is present"
        )
    if mod.row_columns() != ROW_NAMES:
        return f"trace reader: msgspec only: the compiled reader was built for another magpie-trace; reinstall {DIST}"
    if switched_off():
        return f"trace reader: msgspec only ({ENV}=0 in the environment; the compiled readers are built)"
    return f"trace reader: compiled ({PACKAGE}._kineto_scan, _kineto_kept)"


def scanner(builder: TableBuilder) -> Callable[..., NativePiece | None] | None:
    """The compiled reader of the JSON arrays of events of one file (or part), reducing each into ``builder``: what it
    returns goes to ``builder.add_any``; None when it is off or not built. ``read(buf, bare=False)``: with ``bare``,
    buf holds the array's items without the brackets (a piece of a read-only mapping, :func:`guarded_map`)."""
    if switched_off():
        return None
    mod = _module()
    if mod is None:
        return None
    if mod.row_columns() != ROW_NAMES:  # an extension built from another version of the source
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
    :class:`~magpie_trace.fastpath.FallBack` when the body is done, so what was read is dropped and the file is
    read whole (say, by :func:`~magpie_trace.loader.load_trace`, which reports what is wrong with it then)."""
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
        raise FallBack("the file changed size while it was read")
