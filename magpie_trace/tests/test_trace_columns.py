"""Streaming columnar decoding: byte-range parts meet at event boundaries, skipped categories are counted.

That analyses over the columns equal those over the decoded event list is checked with the gap analysis,
in plugins/gap_analysis/tests/test_gap_columns.py."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from magpie_trace.columns import (
    EventTable,
    category_matcher,
    merge_tables,
    part_count,
    stream_table,
    table_part,
)

from tests.conftest import DATA

TRACES = DATA / "traces"
ALL = sorted(TRACES.rglob("*.json.gz"))


def test_every_cut_count_yields_each_event_once(tmp_path: Path) -> None:
    """Parts meet exactly at event boundaries whatever the cut points (a regression: later parts were
    offset by the two bytes read ahead for the gzip check, which lost an event when a boundary lay
    within two bytes of a cut)."""
    from magpie_trace.columns import stream_events

    plain = tmp_path / "sglang.json"
    with gzip.open(TRACES / "inference" / "sglang_decode" / "sglang_Qwen3-8B_decode.json.gz", "rb") as f:
        plain.write_bytes(f.read())
    whole: list[object] = []
    stream_events(plain, whole.extend)
    for n in range(2, 41):
        parts: list[object] = []
        for i in range(n):
            stream_events(plain, parts.extend, part=(i, n))
        assert parts == whole, n


def _kineto_event(cat: str, i: int, compact: bool = False) -> str:
    ev = {"ph": "X", "cat": cat, "name": f"{cat}_{i}", "pid": 1, "tid": 1, "ts": float(i), "dur": 1.0}
    if compact:
        return json.dumps(ev, separators=(",", ":"))
    return "{\n    " + json.dumps(ev)[1:-1] + "\n  }"


def test_pieces_made_only_of_skipped_categories_are_counted_not_decoded(tmp_path: Path) -> None:
    """``skip_categories``: a piece whose every event has a skipped category is counted, not decoded; any
    other event (a kept category, one spelled compactly inside a run, one without a category) still reaches
    the sink, whole or in parts."""
    from magpie_trace.columns import stream_events

    events = [_kineto_event("python_function", i) for i in range(3000)]
    events[1500] = _kineto_event("cpu_op", 1500, compact=True)  # another spelling inside the run
    events[2200] = '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "x"}}'  # no category
    events += [_kineto_event("cpu_op", i) for i in range(3000, 3400)]
    events += [_kineto_event("cpu_instant_event", i) for i in range(3400, 6000)]
    path = tmp_path / "runs.json"
    path.write_text('{"traceEvents": [\n  ' + ",\n  ".join(events) + '\n], "deviceProperties": []}')
    kept_cats = {"cpu_op", ""}
    for parts in (1, 3):
        seen: list[object] = []
        skipped = 0
        for i in range(parts):
            got = stream_events(
                path,
                seen.extend,
                part=(i, parts),
                chunk_bytes=4096,
                skip_categories=("python_function", "cpu_instant_event"),
            )
            skipped += got.skipped_events
        assert skipped > 5000 and len(seen) + skipped == len(events)
        kept = [e for e in seen if e.cat in kept_cats]  # type: ignore[attr-defined]
        assert [e.name for e in kept] == ["cpu_op_1500", "thread_name"] + [f"cpu_op_{i}" for i in range(3000, 3400)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_skipping_runs_keeps_every_other_event_of_real_traces(path: Path) -> None:
    from magpie_trace.columns import stream_events

    skip = ("python_function", "cpu_instant_event")
    whole: list[object] = []
    stream_events(path, whole.extend, chunk_bytes=1 << 14)
    some: list[object] = []
    got = stream_events(path, some.extend, chunk_bytes=1 << 14, skip_categories=skip)
    assert len(some) + got.skipped_events == len(whole)

    def key(events: list[object]) -> list[tuple[object, ...]]:  # Raw fields are views of a reused buffer
        return [(e.ph, e.cat, e.name, e.tid, e.ts, e.dur) for e in events if e.cat not in skip]  # type: ignore[attr-defined]

    assert key(some) == key(whole)


def _named_rows(table: EventTable, group: str) -> list[tuple[str, float, float]]:
    cols = table[group]
    return [(table.names[n], ts, dur) for n, ts, dur in zip(cols["name"], cols["ts"], cols["dur"], strict=True)]


def test_table_parts_merge_into_the_whole_table(tmp_path: Path) -> None:
    """``table_part`` (one byte range, in a worker) and ``merge_tables`` give the columns of one whole-file decode."""
    plain = tmp_path / "rank-0.json"
    plain.write_bytes(gzip.decompress((TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").read_bytes()))
    cats, ignore = ["kernel", "gpu"], ["user_annotation"]
    selected = category_matcher(cats, ignore)
    assert selected["Kernel"] and selected["gpu_memcpy"] and not selected["gpu_user_annotation"]
    assert not selected["cpu_op"] and part_count(plain, 4) == 1  # below SPLIT_MIN_BYTES: read whole
    whole = stream_table(plain, selected)
    parts = [table_part(str(plain), i, 3, cats, ignore) for i in range(3)]
    assert all(p is not None for p in parts)
    merged = merge_tables(parts)  # type: ignore[arg-type]
    assert merged.num_events == whole.num_events and (merged.t_min, merged.t_max) == (whole.t_min, whole.t_max)
    for group, cols in whole.groups.items():
        if "name" in cols and "dur" in cols:
            assert _named_rows(merged, group) == _named_rows(whole, group), group
    assert table_part(str(tmp_path / "missing.json"), 0, 2, cats, ignore) is None


def test_gpu_activity_devices_are_the_text_of_args_device_else_pid(tmp_path: Path) -> None:
    """Devices are interned by their ``args.device`` value: an int and the same number as a string are one
    device, and an event without ``args.device`` is on its ``pid`` (int or string), in every chunk."""
    devices = [0, "0", 1, None, "gpu:1", None, 7]
    pids = [5, 5, 5, 3, 5, "proc 9", 5]
    events = []
    for i, (device, pid) in enumerate(zip(devices * 30, pids * 30, strict=True)):
        args = {"correlation": i} if device is None else {"device": device, "correlation": i}
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": pid, "tid": 1, "ts": float(i), "dur": 0.5,
                       "args": args})  # fmt: skip
    path = tmp_path / "devices.json"
    path.write_text(json.dumps({"traceEvents": events}))
    expected = [str(d if d is not None else p) for d, p in zip(devices * 30, pids * 30, strict=True)]
    for chunk_bytes in (1 << 20, 600):  # one piece, and many (a device seen again in a later piece)
        table = stream_table(path, category_matcher(["kernel"], []), chunk_bytes=chunk_bytes)
        assert [table.devs[d] for d in table["act"]["dev"].tolist()] == expected


def test_ids_beyond_64_bits_link_to_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``args.correlation``/``External id`` no 64-bit producer can write is no id (NONE), on the compiled reader
    and on msgspec alike: the event still counts, and the rest of the trace is read (it raised OverflowError)."""
    ids = [2**70, 2**64, -(2**63) - 1, 2**64 - 1, 12]
    events = [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 100.0 + 10 * i, "dur": 5.0,
         "args": {"correlation": v, "External id": v, "device": 0}}
        for i, v in enumerate(ids)
    ]  # fmt: skip
    path = tmp_path / "ids.json"
    path.write_text(json.dumps({"traceEvents": events}))
    none = int(np.iinfo(np.int64).min)
    for native in ("1", "0"):
        monkeypatch.setenv("MAGPIE_TRACE_NATIVE", native)
        table = stream_table(path, category_matcher(["kernel"], []))
        assert table["act"]["corr"].tolist() == [none, none, none, -1, 12], native
        assert table["sel"]["ext"].tolist() == [none, none, none, -1, 12], native
