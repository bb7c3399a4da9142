"""magpie's trace library: read PyTorch profiler (Kineto / Chrome trace) files fast, in little memory.

A public API: magpie's own analyzers (``gap``, ``inference``) read traces with it, and so can a
third-party trace analyzer (a plugin implementing ``magpie_register_trace_analyzers``; see
``docs/trace-library.md``). The pieces:

* :mod:`~magpie_trace.loader`: a whole file in one decode. :func:`load_trace` gives a
  :class:`LoadedTrace` (a list of :class:`Event` structs holding the fields magpie reads, plus the
  platform, rank and device names from the header); broken input is a :class:`TraceLoadError` that
  names the file and the line and column. :func:`read_trace_bytes` gives the decompressed bytes
  (``.json`` or ``.json.gz``), with the same errors.
* :mod:`~magpie_trace.columns`: streaming. :func:`stream_events` decodes a file piece by piece
  (about 1 MiB each, from one reused buffer) with any msgspec decoder, so a plugin decodes exactly
  the fields it needs and keeps only the events it wants; :func:`stream_table` and :func:`load_table`
  reduce the events to numpy columns (:class:`EventTable`, names interned by :class:`Interner`),
  grouped by category (:data:`GPU_ACTIVITY_CATS`, :data:`RUNTIME_CATS`, :data:`ANNOTATION_CATS`).
  A large plain-JSON file is decoded in byte ranges: ``part=(i, n)`` of :func:`stream_events` /
  :func:`stream_table`, :func:`part_count` to choose ``n``, :func:`merge_tables` to join the parts;
  :func:`split_table` (or ``load_table(..., parts=n)``) reads them on threads of one process (the
  compiled reader runs without the GIL), :func:`table_part` is the task for worker processes
  (:func:`magpie_trace.fanout.run_tasks`), selecting events with :func:`category_matcher`.
  :class:`FallBack` says the fast path cannot handle a file: decode it whole instead.
* :mod:`~magpie_trace.fanout`: CPU-bound tasks (a file or a part each) over processes, the calling one
  included (:func:`~magpie_trace.fanout.run_tasks`); a task's failure is its result.
* :mod:`~magpie_trace.discover`: the trace files of a run and the rank of each
  (:func:`discover`, :func:`find_trace_files`, :class:`TraceFile`).
* :mod:`~magpie_trace.kernel_names` (kernel names through the installed kernel-name parsers)
  and :mod:`~magpie_trace.demangle` (C++ symbol demangling) for what a kernel name means.

Names from :mod:`~magpie_trace.columns` are imported on first use, so importing this package
does not import numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magpie_trace.discover import TraceFile, discover, find_trace_files
from magpie_trace.loader import (
    LIST_DECODER,
    NO_ID,
    OBJECT_DECODER,
    Event,
    LoadedTrace,
    TraceLoadError,
    TraceObject,
    load_trace,
    platform_from_header,
    read_trace_bytes,
)

if TYPE_CHECKING:
    from magpie_trace.columns import (
        ANNOTATION_CATS,
        GPU_ACTIVITY_CATS,
        NONE,
        RUNTIME_CATS,
        EventTable,
        FallBack,
        Interner,
        StreamedFile,
        category_matcher,
        load_table,
        merge_tables,
        part_count,
        split_table,
        splittable,
        stream_events,
        stream_table,
        table_part,
    )

_COLUMNS = frozenset(
    {
        "ANNOTATION_CATS",
        "GPU_ACTIVITY_CATS",
        "NONE",
        "RUNTIME_CATS",
        "EventTable",
        "FallBack",
        "Interner",
        "StreamedFile",
        "category_matcher",
        "load_table",
        "merge_tables",
        "part_count",
        "split_table",
        "splittable",
        "stream_events",
        "stream_table",
        "table_part",
    }
)

__all__ = [
    "ANNOTATION_CATS",
    "GPU_ACTIVITY_CATS",
    "LIST_DECODER",
    "NONE",
    "NO_ID",
    "OBJECT_DECODER",
    "RUNTIME_CATS",
    "Event",
    "EventTable",
    "FallBack",
    "Interner",
    "LoadedTrace",
    "StreamedFile",
    "TraceFile",
    "TraceLoadError",
    "TraceObject",
    "category_matcher",
    "discover",
    "find_trace_files",
    "load_table",
    "load_trace",
    "merge_tables",
    "part_count",
    "platform_from_header",
    "read_trace_bytes",
    "split_table",
    "splittable",
    "stream_events",
    "stream_table",
    "table_part",
]


def __getattr__(name: str) -> Any:
    """The :mod:`~magpie_trace.columns` names, imported on first use."""
    if name in _COLUMNS:
        from magpie_trace import columns

        return getattr(columns, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
