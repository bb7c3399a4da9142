"""Decoding one large trace in parts: category selection, whether and how to split a file by bytes.

A plain-JSON trace (not gzip) can be cut into byte ranges that worker processes decode at the same time
(:func:`magpie_core.trace.columns.stream_table` with ``part=(index, count)``); the parts' columns are then
merged (:func:`magpie_core.trace.columns.merge_tables`). Analyzers decide here how many parts a file gets
and decode each one in a worker with :func:`table_part`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from magpie_core.trace.columns import EventTable, FallBack, stream_table

__all__ = ["SPLIT_MIN_BYTES", "category_matcher", "part_count", "splittable", "table_part"]

#: plain-JSON traces at least this large are split across idle workers (smaller ones are not worth a process)
SPLIT_MIN_BYTES = 64 << 20


def category_matcher(categories: Sequence[str], ignore: Sequence[str]) -> dict[str, bool]:
    """A cached ``cat -> selected`` mapping: ``cat`` contains one of ``categories`` and none of ``ignore``
    (case-insensitive substrings; no ``categories``: every category not ignored)."""
    cats = [c.lower() for c in categories]
    ign = [c.lower() for c in ignore]

    class _Cache(dict[str, bool]):
        def __missing__(self, cat: str) -> bool:
            low = cat.lower()
            ok = not (ign and any(i in low for i in ign)) and (not cats or any(c in low for c in cats))
            self[cat] = ok
            return ok

    return _Cache()


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

    Workers take parts as they become free (:mod:`magpie_core.fanout`), so with more parts per worker they
    finish closer together, but each part costs a little (its buffer, its transfer, the merge): on the
    555 MB benchmark trace gap analysis was fastest with one part per worker (1.56-1.72 s vs 1.70-1.90 s
    with two)."""
    if workers <= 1 or not splittable(path):
        return 1
    size = Path(path).stat().st_size
    return max(2, min(workers * per_worker, size // max(SPLIT_MIN_BYTES // 2, 1)))


def table_part(
    path: str, index: int, count: int, categories: Sequence[str], ignore_categories: Sequence[str]
) -> EventTable | None:
    """Part ``index`` of ``count`` of a plain-JSON trace as columns (runs in a worker process), with the
    events selected by :func:`category_matcher`; None when the file has to be read whole (see
    :func:`magpie_core.trace.columns.stream_table`)."""
    import gc

    gc_was = gc.isenabled()
    gc.disable()  # millions of short-lived objects, none cyclic: skip the collector's repeated scans
    try:
        return stream_table(Path(path), category_matcher(categories, ignore_categories), part=(index, count))
    except (FallBack, OSError, MemoryError):
        return None
    finally:
        if gc_was:
            gc.enable()
