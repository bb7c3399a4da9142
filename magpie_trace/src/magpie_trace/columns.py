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

This module's own job is reading a trace file into a table: whole (:func:`stream_table`,
:func:`load_table`) or in byte-range parts (:func:`split_table` on threads, :func:`table_part` in
worker processes). It is also the public face of the pieces, which it re-exports:

* :mod:`magpie_trace.table`: :class:`EventTable` and :class:`TableBuilder`, the reduction of
  decoded events to columns;
* :mod:`magpie_trace.pieces`: :func:`stream_events`, the cutting and decoding of a file's bytes
  piece by piece;
* :mod:`magpie_trace.merge`: :func:`merge_tables`, the joining of one file's parts.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from magpie_trace.fastpath import FallBack
from magpie_trace.loader import platform_from_header
from magpie_trace.merge import merge_tables
from magpie_trace.pieces import (
    BLOCK_BYTES,
    PieceSkipper,
    StreamedFile,
    json_string,
    stream_events,
)
from magpie_trace.table import (
    ANNOTATION_CATS,
    GPU_ACTIVITY_CATS,
    NONE,
    PLATFORM_SCAN_EVENTS,
    RUNTIME_CATS,
    EventTable,
    Interner,
    TableBuilder,
    table_from_loaded,
)
from magpie_trace.table import EventSource as EventSource
from magpie_trace.table import NativePiece as NativePiece

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

#: whether :func:`stream_table`'s compiled reader reads the pieces of a plain file in place from a read-only mapping of
#: it (:class:`~magpie_trace.pieces._MappedPieces`) rather than from a buffer they are copied into (``readinto``:
#: ~0.1 s CPU per 550 MB, about half of it saved); the tests turn it off to compare both
MAP_PLAIN_FILES = True

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
