"""Pieces read in place from a read-only mapping of the file (``pieces._MappedPieces``, ``native.guarded_map``) and
split parts exported straight into the merged columns (``EventTable.pending_rows``).

The tables themselves are compared bit for bit, mapped and copied into a buffer both, by every differential test of
tests/test_trace_native.py and tests/test_trace_native_build.py (``assert_same`` runs the reader's path both ways).
Here: the compiled reader's ``bare`` pieces (no brackets) agree with bracketed ones on the edge cases; a file that
shrinks or grows while it is mapped and read gives a FallBack or a right table, never a crash (SIGBUS: run in a child
process, so a crash fails the test instead of killing pytest); the merge of pending parts with a part whose rows were
exported already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from magpie_trace import columns, native
from magpie_trace.columns import TableBuilder, category_matcher, merge_tables, stream_table
from test_trace_native import assert_same_table, needs_native
from test_trace_native_build import _filler, _trace

pytestmark = needs_native


def _build(piece: bytes, bare: bool) -> Any:
    builder = TableBuilder(category_matcher([], []))
    read = native.scanner(builder)
    assert read is not None
    got = read(piece, bare) if bare else read(b"[" + piece + b"]")
    return got, builder


@pytest.mark.parametrize(
    "items",
    [
        b"",
        b"  \n ",
        b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2}',
        b' \n{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 1, "ts": 1, "dur": 2} , {}\n ',
        b'{"ph": "X"},',  # a trailing comma: not JSON either way
        b'{"ph": "X"}]',  # a stray bracket
        b'{"ph": "X"}] , [{"ph": "X"}',
        b"{",
        b"]",
    ],
)
def test_bare_piece_same_as_bracketed(items: bytes) -> None:
    bare, b1 = _build(items, True)
    bracketed, b2 = _build(items, False)
    assert bare == bracketed
    if bare is not None:
        t1 = b1.finish(Path("x"), platform="p", rank=None, world_size=None, device_names=[], size_bytes=0)
        t2 = b2.finish(Path("x"), platform="p", rank=None, world_size=None, device_names=[], size_bytes=0)
        assert_same_table(t1, t2)


def _big_trace(tmp_path: Path, n: int = 6000) -> Path:
    return _trace(tmp_path, [e for i in range(n) for e in _filler(i)])


def test_mapped_and_buffered_reads_agree_on_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_trace(tmp_path)
    sel = category_matcher(["cpu_op", "kernel"], [])
    monkeypatch.setattr(columns, "MAP_PLAIN_FILES", False)
    buffered = [stream_table(path, sel, part=(i, 3), chunk_bytes=1 << 14) for i in range(3)]
    monkeypatch.setattr(columns, "MAP_PLAIN_FILES", True)
    mapped = [stream_table(path, sel, part=(i, 3), chunk_bytes=1 << 14, defer_rows=True) for i in range(3)]
    assert all(t.pending_rows is not None for t in mapped)
    whole = stream_table(path, sel)
    assert_same_table(merge_tables(buffered), whole)
    # pending parts with an exported one in the middle (a part with a piece msgspec read exports at once)
    mapped[1] = stream_table(path, sel, part=(1, 3), chunk_bytes=1 << 14)
    assert mapped[1].pending_rows is None
    assert_same_table(merge_tables(mapped), whole)
    one = stream_table(path, sel, defer_rows=True)
    assert one.pending_rows is not None and not one.groups
    assert_same_table(merge_tables([one]), whole)


#: run in a child: the file shrinks (or grows) after the first piece is read; prints what stream_table did
_CHANGE = r"""
import os, sys
from pathlib import Path
from magpie_trace import columns, native
from magpie_trace.columns import FallBack, category_matcher, stream_table

path, how, parts = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
size = path.stat().st_size
real = native.scanner
done = []

def scanner(builder):
    read = real(builder)

    def changed(buf, bare=False):
        if not done:
            done.append(1)
            with open(path, "r+b") as f:
                if how == "shrink":
                    f.truncate(size // 3)
                else:
                    f.seek(0, 2)
                    f.write(b" " * (1 << 20))
        return read(buf, bare)

    return changed

native.scanner = scanner
try:
    t = stream_table(path, category_matcher([], []), part=(parts - 1, parts), chunk_bytes=1 << 14)
    print("table", t.num_events)
except FallBack as exc:
    print("fallback", exc)
"""


@pytest.mark.parametrize("parts", [1, 2])
def test_file_shrinking_while_mapped_falls_back(tmp_path: Path, parts: int) -> None:
    path = _big_trace(tmp_path)
    got = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", _CHANGE, str(path), "shrink", str(parts)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr  # not killed by SIGBUS
    assert got.stdout.startswith("fallback"), got.stdout


def test_file_growing_while_mapped_reads_what_was_there(tmp_path: Path) -> None:
    path = _big_trace(tmp_path)
    events = len(json.loads(path.read_text())["traceEvents"])
    got = subprocess.run(
        [sys.executable, "-c", _CHANGE, str(path), "grow", "1"], capture_output=True, text=True, timeout=120
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() in (["table", str(events)], ["fallback", *got.stdout.split()[1:]]), got.stdout


#: the growth of this process's peak resident memory (VmHWM, KiB: ru_maxrss would start at the parent's) over a read
_PEAK_PROBE = """
import re, sys
from pathlib import Path
from magpie_trace import columns
from magpie_trace.columns import category_matcher, stream_table
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
columns.MAP_PLAIN_FILES = sys.argv[2] == "mapped"
before = peak()
table = stream_table(Path(sys.argv[1]), category_matcher(["kernel"], []))
assert table.num_events > 0
print(peak() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_mapped_read_hands_pages_back_as_it_goes(tmp_path: Path) -> None:
    """Mapped pages count in resident memory: a file read in place must not keep its pages mapped (MADV_DONTNEED
    behind the pieces), so the mapped read's peak grows no more than the buffered read's plus a few pieces, not by the
    file's size (64 MB here; it grew by ~all of it before)."""
    event = '{"ph": "X", "cat": "python_function", "name": "%s", "pid": 1, "tid": 1, "ts": %d.5, "dur": 1.25}'
    body = ", ".join(event % ("f" * 200, i) for i in range(260_000))
    path = tmp_path / "big.json"
    path.write_text('{"traceEvents": [' + body + "]}")
    assert path.stat().st_size > 60_000_000

    def growth(mode: str) -> int:
        done = subprocess.run(
            [sys.executable, "-c", _PEAK_PROBE, str(path), mode], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout)  # KiB

    assert growth("mapped") < growth("buffered") + 24 * 1024
