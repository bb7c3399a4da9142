"""The compiled reduction (``_kineto_scan.build``: the table builder's per-piece work in C) against the numpy builder,
on traces made to hit each of its rules where a piece boundary or a byte-range part could change the outcome:
categories first seen in a later piece, selection by substring and ignore list, every reason to skip an event,
-0.0 times, flow starts with ids that are not integers, the platform hint in a later piece (escaped too), pieces
handed back to msgspec in the middle of a file, and split reads on 2-4 threads. Each is compared bit for bit with
``MAGPIE_TRACE_NATIVE=0`` (one pass, msgspec) and with the reader's own one pass (:func:`assert_same`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from magpie_trace import fastpath, native, validity
from magpie_trace.columns import category_matcher, stream_table
from test_trace_native import _outcome, assert_same, needs_native

CHUNKS = [256, 700, 4096, 1 << 20]


def _ev(ph: str, cat: str, name: str, ts: Any, dur: Any = None, **more: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": ph, "cat": cat, "name": name, "pid": more.pop("pid", 1), "tid": more.pop("tid", 7)}
    if ts is not _ABSENT:
        e["ts"] = ts
    if dur is not None and dur is not _ABSENT:
        e["dur"] = dur
    e.update(more)
    return e


_ABSENT = object()


def _trace(tmp_path: Path, events: list[dict[str, Any]], raw: dict[int, str] | None = None) -> Path:
    """A trace file of ``events``; ``raw[i]``: event i written as this text instead (spellings json.dumps avoids)."""
    texts = [raw[i] if raw and i in raw else json.dumps(e) for i, e in enumerate(events)]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(texts) + '\n], "deviceProperties": [{"name": "G"}]}')
    return path


def _filler(i: int) -> list[dict[str, Any]]:
    """Events of the common groups, so every piece has something to keep."""
    t = 1000.0 + 10 * i
    return [
        _ev("X", "cpu_op", f"aten::op{i % 5}", t, 3.0, args={"External id": i, "Input Dims": [[i % 3, 2]]}),
        _ev("X", "python_function", f"py{i % 4}", t + 1, 2.0, tid=f"th{i % 3}"),
        _ev("X", "cuda_runtime", "cudaLaunchKernel", t + 2, 1.0, tid=i % 2, args={"correlation": i}),
        _ev("X", "kernel", f"k{i % 6}", t + 3, 4.0, pid=i % 2, args={"correlation": i, "device": i % 2}),
        _ev("s", "ac2g", "flow", t + 2, id=i),
    ]


def _all_ways(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> None:
    for chunk in CHUNKS:
        stats = assert_same(path, monkeypatch, chunk=chunk, **kw)
        assert stats["native"] > 0, stats
        assert_same(path, monkeypatch, chunk=chunk, native_plain=True, **kw)  # the reader's one pass
        for parts in (2, 3, 4):
            assert_same(path, monkeypatch, chunk=chunk, parts=parts, **kw)


@needs_native
def test_extension_agrees_with_python_constants() -> None:
    from magpie_trace_native import _kineto_scan  # type: ignore[attr-defined]

    assert _kineto_scan.MAX_TS_US == validity.MAX_TS_US and _kineto_scan.MAX_DUR_US == validity.MAX_DUR_US
    assert _kineto_scan.row_columns() == fastpath.ROW_NAMES


@needs_native
def test_categories_first_seen_in_later_pieces(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """New categories (of every group, selected or not, one spelled with an escape) appear piece after piece: they are
    interned in order of first appearance and reduced from the first event on."""
    events: list[dict[str, Any]] = []
    late = ["gpu_memcpy", "user_annotation", "cuda_driver", "my_kernel_x", "gpu_user_annotation", "Kernel", "other"]
    for i in range(120):
        events += _filler(i)[:3] if i < 40 else _filler(i)
        if i % 15 == 14:
            cat = late[(i // 15) % len(late)]
            events.append(_ev("X", cat, f"late {cat}", 1000.0 + 10 * i + 5, 1.0, args={"correlation": i}))
    raw = {len(events) // 2: '{"ph": "X", "cat": "\\u006b\\u0065rnel", "name": "esc", "ts": 1.5, "dur": 1, "pid": 3}'}
    events.insert(len(events) // 2, {})
    path = _trace(tmp_path, events, raw)
    _all_ways(path, monkeypatch)


@needs_native
@pytest.mark.parametrize(
    "selected",
    [(["kernel", "gpu_memcpy"], ["python"]), (["KERN", "mem"], ["memset", "x"]), ([], []), ([], ["cpu", "kernel"])],
    ids=["default", "substring-case", "all", "ignore-only"],
)
def test_selection_edge_cases(selected: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Selection by case-insensitive substring, with an ignore list, of categories in and out of the groups."""
    events: list[dict[str, Any]] = []
    cats = ["kernel", "Kernel", "python_kernel", "gpu_memcpy", "gpu_memset", "xmem", "cpu_op", "cuda_runtime", ""]
    for i in range(80):
        events += _filler(i)
        c = cats[i % len(cats)]
        events.append(_ev("X", c, f"sel {c}", 1000.0 + 10 * i + 6, 0.5, args={"External id": i, "correlation": -i}))
    path = _trace(tmp_path, events)
    _all_ways(path, monkeypatch, selected=selected)


@needs_native
def test_unmeasured_events_of_each_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Complete events without a believable ts/dur, of kept, selected and other categories: skipped and counted by
    category and reason alike (and they still place t_min/t_max when their ts is good)."""
    bad = [
        (None, 1.0),  # ts null: 1
        (_ABSENT, 1.0),  # ts absent: 1
        (-5.0, 1.0),  # 2
        (2e17, 1.0),  # 2
        (10.0, _ABSENT),  # 3
        (10.0, -1.0),  # 4
        (10.0, 2e12),  # 5
        (-1.0, -1.0),  # 2 before 4
        (5e16, 1e12),  # measured: at the limits
    ]
    events: list[dict[str, Any]] = []
    for i in range(60):
        events += _filler(i)
        ts, dur = bad[i % len(bad)]
        cat = ["kernel", "cpu_op", "my_kernel_x", "other", "cuda_runtime"][i % 5]
        events.append(_ev("X", cat, f"bad{i}", ts, dur, args={"correlation": i}))
        events.append(_ev("i", cat, f"instant{i}", ts))  # not complete: never counted
    path = _trace(tmp_path, events)
    _all_ways(path, monkeypatch)
    monkeypatch.setenv(native.ENV, "1")
    table = stream_table(path, category_matcher(["kernel"], []), chunk_bytes=512)
    assert {code for _, code in table.skipped} == {1, 2, 3, 4, 5}
    assert ("other", 3) not in table.skipped  # neither in a group nor selected


@needs_native
def test_negative_zero_times(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """-0.0 and 0.0 are one time, whichever piece or part has which: t_min is +0.0, the columns keep the sign."""
    events: list[dict[str, Any]] = []
    for i in range(50):
        events += _filler(i)
        events.append(_ev("X", "kernel", "zero", [0.0, -0.0][i % 2], [-0.0, 0.0][i % 2], args={"device": 0}))
        events.append(_ev("i", "cpu_op", "zero instant", -0.0))
    raw = {len(events) - 1: '{"ph": "X", "cat": "kernel", "name": "int zero", "ts": -0, "dur": -0, "pid": 1}'}
    events.append({})
    path = _trace(tmp_path, events, raw)
    _all_ways(path, monkeypatch)
    monkeypatch.setenv(native.ENV, "1")
    table = stream_table(path, category_matcher([], []), chunk_bytes=300)
    assert table.t_min == 0.0 and math.copysign(1, table.t_min) == 1
    assert np.signbit(table["act"]["ts"]).any()  # the column keeps -0.0 as written


@needs_native
def test_flow_starts_with_ids_that_are_not_integers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    ids: list[Any] = ["0x1f", None, 2**63 - 1, -4, "7", 0, _ABSENT]
    for i in range(70):
        events += _filler(i)[:4]
        e = _ev("s", "ac2g", "flow", [1000.0 + i, None, -1.0, 5.0][i % 4])
        if ids[i % len(ids)] is not _ABSENT:
            e["id"] = ids[i % len(ids)]
        events.append(e)
        events.append(_ev("f", "ac2g", "flow end", 1000.0 + i, id=i))
        events.append(_ev("s", "other", "not a flow cat", 1000.0 + i, id=i))
    path = _trace(tmp_path, events)
    _all_ways(path, monkeypatch)


@needs_native
@pytest.mark.parametrize("first", ["cudaLaunchKernel", "hipLaunchKernel", "\\u0068ipMalloc", "c\\u0075Memcpy"])
def test_platform_hint_in_a_later_piece(first: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runtime calls whose names say nothing come first; the one that names the platform is in a later piece (and
    in a later part of a split read), perhaps spelled with an escape."""
    events: list[dict[str, Any]] = []
    raw: dict[int, str] = {}
    for i in range(80):
        events += [e for e in _filler(i) if e["cat"] != "cuda_runtime"]
        events.append(_ev("X", "cuda_runtime", "launch", 1000.0 + 10 * i, 1.0, args={"correlation": i}))
        if i == 50:
            raw[len(events)] = f'{{"ph": "i", "cat": "cuda_driver", "name": "{first}", "ts": 1000, "pid": 1, "tid": 1}}'
            events.append({})
    path = _trace(tmp_path, events, raw)
    _all_ways(path, monkeypatch)
    monkeypatch.setenv(native.ENV, "1")
    table = stream_table(path, category_matcher([], []), chunk_bytes=512)
    assert table.platform_hint == ("rocm" if "ip" in first else "cuda") and table.platform_hint_at > 0


@needs_native
def test_pieces_handed_to_msgspec_mid_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A few events the reader does not read (an escaped key, a duplicate key, an integer beyond int64 in args): their
    pieces are decoded by msgspec between pieces the reduction read, and the rows stay in file order."""
    events: list[dict[str, Any]] = []
    raw: dict[int, str] = {}
    odd = [
        '{"ph": "X", "c\\u0061t": "kernel", "name": "escaped key", "ts": 5, "dur": 1, "pid": 1}',
        '{"ph": "X", "cat": "kernel", "name": "dup", "name": "dup2", "ts": 6, "dur": 1, "pid": 1}',
        '{"ph": "X", "cat": "kernel", "name": "new name", "ts": 7, "dur": 1, "pid": 1, "args": {"x": 1e400}}',
        '{"ph": "X", "cat": "brand_new_kernel", "name": "newcat", "ts": 8, "dur": 1, "pid": 9, "tid": "nt", '
        '"args": {"correlation": 18446744073709551615}}',
    ]
    for i in range(100):
        events += _filler(i)
        if i % 20 == 10:
            raw[len(events)] = odd[(i // 20) % len(odd)]
            events.append({})
    path = _trace(tmp_path, events, raw)
    for chunk in CHUNKS[:3]:
        stats = assert_same(path, monkeypatch, chunk=chunk)
        assert stats["native"] > 0 and stats["msgspec"] > 0, stats
        for parts in (2, 3, 4):
            assert_same(path, monkeypatch, chunk=chunk, parts=parts)


@needs_native
def test_native_columns_are_writable_numpy_arrays(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The exported rows are numpy's own arrays, as the numpy builder's: writable, contiguous."""
    path = _trace(tmp_path, [e for i in range(30) for e in _filler(i)])
    kind, table = _outcome(path, monkeypatch, True, 512, {"native": 0, "msgspec": 0})
    assert kind == "table"
    for cols in table.groups.values():
        for a in cols.values():
            assert a.flags.writeable and a.flags.c_contiguous


def _flaky_unescape(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The reader's unescape (making the value of an escaped token, with the GIL, after a pass) fails once: the piece
    whose new values could not be made is handed to msgspec, and the values are made with a later piece."""
    real = native._UNESCAPE
    calls = [0]

    def flaky(raw: bytes) -> str:
        calls[0] += 1
        if calls[0] == 1:
            raise MemoryError("the first escaped value")
        return real(raw)

    monkeypatch.setattr(native, "_UNESCAPE", flaky)
    return calls


@needs_native
def test_values_not_made_for_a_new_phase(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The phase "X" spelled with an escape, first met in a later piece (every category known by then) whose values
    cannot be made: the pieces after it still know it is a complete event."""
    raw = {}
    events: list[dict[str, Any]] = []
    for i in range(60):
        events += _filler(i)
        if i < 30:
            continue
        raw[len(events)] = (
            f'{{"ph": "\\u0058", "cat": "kernel", "name": "escaped ph", "ts": {2000 + i}, "dur": 1, "pid": 1}}'
        )
        events.append({})
    path = _trace(tmp_path, events, raw)
    calls = _flaky_unescape(monkeypatch)
    stats = assert_same(path, monkeypatch, chunk=2048)
    assert calls[0] > 1 and stats["msgspec"] >= 1 and stats["native"] > 0, (calls, stats)


@needs_native
def test_values_not_made_after_the_reduction(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An escaped name new in a later piece (no new category or phase: the reduction runs with the pass) whose value
    cannot be made: the piece's rows are dropped and msgspec reads it."""
    raw = {}
    events: list[dict[str, Any]] = []
    for i in range(60):
        events += _filler(i)
        if i >= 30:
            raw[len(events)] = (
                f'{{"ph": "X", "cat": "kernel", "name": "k\\u0041{i % 3}", "ts": {2000 + i}, "dur": 1, "pid": 1}}'
            )
            events.append({})
    path = _trace(tmp_path, events, raw)
    calls = _flaky_unescape(monkeypatch)
    stats = assert_same(path, monkeypatch, chunk=2048)
    assert calls[0] > 1 and stats["msgspec"] >= 1 and stats["native"] > 0, (calls, stats)
