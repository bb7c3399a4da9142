"""Joining the tables of one file's byte-range parts into one (:func:`merge_tables`), the copies on threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from magpie_trace.fastpath import GROUP_COLUMNS, ROW_DTYPES
from magpie_trace.table import PLATFORM_SCAN_EVENTS, EventTable, Interner
from magpie_trace.validity import SkipCounts

_ID_COLUMNS = {"name": "names", "tid": "tids", "dev": "devs", "dims": "dims", "cat": "cats"}
#: the value list each row column's ids index (None: not an id column), ``ROW_NAMES`` order
_ROW_KINDS = tuple(_ID_COLUMNS.get(c) for cols in GROUP_COLUMNS.values() for c, _ in cols)


def merge_tables(parts: list[EventTable], threads: int = 2) -> EventTable:
    """One table from the parts of one file, in file order (ids re-interned; values are unchanged).

    The columns are copied into the merged ones by up to ``threads`` threads (this one included): the copies hold no
    GIL, and most of their cost is the merged table's fresh memory (page faults), which two cores take in half the
    time. A part whose rows the compiled reduction still holds (``pending_rows``) exports them straight into the merged
    columns, its ids mapped on the way: one write instead of an export and a copy."""
    if len(parts) == 1 and parts[0].pending_rows is None:
        return parts[0]
    interners = {k: Interner() for k in set(_ID_COLUMNS.values())}
    # each part's ids -> merged ids, None where they are the same (the first part's always are: its values' places
    # in the fresh interners; later parts' often are, having met the same values in the same order)
    remaps: list[dict[str, np.ndarray | None]] = []
    for p in parts:
        remap: dict[str, np.ndarray | None] = {}
        for kind, interner in interners.items():
            ids = np.array([interner[v] for v in getattr(p, kind)] + [-1], dtype=np.int32)
            remap[kind] = None if np.array_equal(ids[:-1], np.arange(len(ids) - 1)) else ids
        remaps.append(remap)
    groups: dict[str, dict[str, np.ndarray]] = {}
    outs: list[list[np.ndarray]] = [[] for _ in parts]  # each pending part's slices of the merged columns
    jobs: list[tuple[int, Callable[[], None]]] = []  # (bytes written, the copy or export)
    j = 0
    for g, cols in GROUP_COLUMNS.items():
        groups[g] = {}
        for c, _ in cols:
            kind = _ID_COLUMNS.get(c)
            sizes = [len(p.groups[g][c]) if p.pending_rows is None else p.pending_rows.counts[j] for p in parts]
            dtypes = [p.groups[g][c].dtype if p.pending_rows is None else ROW_DTYPES[j] for p in parts]
            dtype = np.result_type(*dtypes) if kind is None else np.result_type(dtypes[0], np.int32)
            out = groups[g][c] = np.empty(sum(sizes), dtype)
            copies: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
            at = 0
            for k, (p, n) in enumerate(zip(parts, sizes, strict=True)):
                if p.pending_rows is not None:
                    outs[k].append(out[at : at + n])
                else:
                    copies.append((out[at : at + n], p.groups[g][c], remaps[k][kind] if kind is not None else None))
                at += n
            if copies:
                jobs.append((sum(a.nbytes for _, a, _ in copies), partial(_copy_into, copies)))
            j += 1
    for k, p in enumerate(parts):
        if p.pending_rows is not None:
            row_remaps = [None if kind is None else remaps[k][kind] for kind in _ROW_KINDS]
            nbytes = sum(o.nbytes for o in outs[k])
            jobs.append((nbytes, partial(p.pending_rows.export, outs[k], row_remaps)))
            p.pending_rows = None  # exported once: the part's table is spent

    _on_threads(_run_jobs, jobs, threads, size=lambda job: job[0])
    last = parts[-1]
    hint, hint_at, seen = None, -1, 0
    for p in parts:
        if p.platform_hint is not None and seen + p.platform_hint_at < PLATFORM_SCAN_EVENTS:
            hint, hint_at = p.platform_hint, seen + p.platform_hint_at
            break
        seen += p.num_events
    return EventTable(
        path=last.path,
        platform=last.header_platform or hint or "unknown",
        rank=last.rank,
        world_size=last.world_size,
        device_names=last.device_names,
        size_bytes=last.size_bytes,
        num_events=sum(p.num_events for p in parts),
        t_min=min(p.t_min for p in parts),
        t_max=max(p.t_max for p in parts),
        names=interners["names"].values,
        cats=interners["cats"].values,
        tids=interners["tids"].values,
        devs=interners["devs"].values,
        dims=interners["dims"].values,
        groups=groups,
        skipped=dict(sum((SkipCounts(p.skipped) for p in parts), SkipCounts())),
        header_platform=last.header_platform,
        platform_hint=hint,
        platform_hint_at=hint_at,
    )


def _copy_into(copies: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> None:
    """Copy each part's column into its slice of the merged one; re-interned ids mapped (-1, no dims, is the remap's
    last entry: -1 again)."""
    for out, a, remap in copies:
        if remap is not None:
            np.take(remap, a, out=out, mode="wrap")
        else:
            out[...] = a


def _run_jobs(jobs: list[tuple[int, Callable[[], None]]]) -> None:
    for _, job in jobs:
        job()


def _on_threads(work: Callable[[list[Any]], None], items: list[Any], threads: int, size: Callable[[Any], int]) -> None:
    """``work`` over ``items`` split into up to ``threads`` shares of about equal ``size``, each on a thread (this one
    included); an exception in any share is raised here once all have ended."""
    shares: list[list[Any]] = [[] for _ in range(max(1, min(threads, len(items))))]
    loads = [0] * len(shares)
    for item in sorted(items, key=size, reverse=True):
        k = loads.index(min(loads))
        shares[k].append(item)
        loads[k] += size(item)
    errors: list[BaseException] = []

    def run(share: list[Any]) -> None:
        try:
            work(share)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    others = [threading.Thread(target=run, args=(share,), daemon=True) for share in shares[1:]]
    for t in others:
        t.start()
    run(shares[0])
    for t in others:
        t.join()
    if errors:
        raise errors[0]
