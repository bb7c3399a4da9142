"""The compiled trace reader (``_kineto_scan.c`` of magpie-trace-native) against the msgspec path: the same table or the
same error on every bundled trace and on randomized and hostile variants of them.

Each test runs :func:`load_table` twice in this process, once with ``MAGPIE_TRACE_NATIVE=0`` (the pure-Python path
every install has) and once with the reader on, and compares every field and column bit for bit (names and ids
included), or the error message. Small pieces (a few KiB) make most files mix pieces the reader handles with
pieces it hands back to msgspec. Skipped when the extension is not built (no C compiler at install time)."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from magpie_trace import columns, native
from magpie_trace.columns import EventTable, category_matcher
from magpie_trace.loader import TraceLoadError

from tests.conftest import DATA
from tests.helpers.corrupt import corrupted

TRACES = DATA / "traces"
ALL = sorted(TRACES.rglob("*.json.gz"))

needs_native = pytest.mark.skipif(
    not native.available(), reason="the compiled trace reader (magpie-trace-native) is not installed or not built"
)

_FIELDS = [
    "platform",
    "rank",
    "world_size",
    "device_names",
    "size_bytes",
    "num_events",
    "t_min",
    "t_max",
    "names",
    "cats",
    "tids",
    "devs",
    "dims",
    "skipped",
    "header_platform",
    "platform_hint",
    "platform_hint_at",
]


#: the selection the differential tests use unless they pass their own
SELECTED = (["kernel", "gpu_memcpy"], ["python"])


def _outcome(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    use_native: bool,
    chunk: int,
    stats: dict[str, int],
    parts: int = 1,
    selected: tuple[list[str], list[str]] = SELECTED,
    mapped: bool = True,
) -> tuple[str, Any]:
    monkeypatch.setenv(native.ENV, "1" if use_native else "0")
    monkeypatch.setattr(columns, "MAP_PLAIN_FILES", mapped)
    real = native.scanner

    def counted(builder: Any) -> Callable[[Any], Any] | None:
        scan = real(builder)
        if scan is None:
            return None

        def read(buf: Any, bare: bool = False) -> Any:
            got = scan(buf, bare)
            stats["native" if got is not None else "msgspec"] += 1
            return got

        return read

    monkeypatch.setattr(native, "scanner", counted)
    real_stream = columns.stream_table

    def small_pieces(*a: Any, **k: Any) -> EventTable:
        return real_stream(*a, **k, chunk_bytes=chunk, block_bytes=4 * chunk)

    monkeypatch.setattr(columns, "stream_table", small_pieces)
    try:
        return "table", columns.load_table(path, category_matcher(*selected), parts)
    except TraceLoadError as exc:
        return "error", str(exc)
    finally:
        monkeypatch.setattr(native, "scanner", real)
        monkeypatch.setattr(columns, "stream_table", real_stream)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(type(x) is type(y) and _same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def assert_same(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    chunk: int = 4096,
    parts: int = 1,
    native_plain: bool = False,
    selected: tuple[list[str], list[str]] = SELECTED,
) -> dict[str, int]:
    """Both paths give the same table (or error); how many pieces the reader handled and handed back. The reader's
    path reads ``parts`` byte ranges on as many threads (:func:`columns.split_table`), msgspec's the whole file in
    one pass (``native_plain``: the reader's one pass instead). ``selected``: (categories, ignored) of the matcher.
    The reader's path runs twice: its pieces read in place from a mapping of the file (the stats are that run's) and
    copied into a buffer (``columns.MAP_PLAIN_FILES`` off)."""
    stats = {"native": 0, "msgspec": 0}
    plain = _outcome(path, monkeypatch, native_plain, chunk, {"native": 0, "msgspec": 0}, selected=selected)
    fast = _outcome(path, monkeypatch, True, chunk, stats, parts, selected=selected)
    buffered = _outcome(path, monkeypatch, True, chunk, {"native": 0, "msgspec": 0}, parts, selected, mapped=False)
    for got in (fast, buffered):
        assert plain[0] == got[0], (plain, got)
        if plain[0] == "error":
            assert plain[1] == got[1]
        else:
            assert_same_table(plain[1], got[1])
    return stats


def assert_same_table(a: EventTable, b: EventTable) -> None:
    """Every field and column of two tables, bit for bit (names and ids included)."""
    for f in _FIELDS:
        assert _same_value(getattr(a, f), getattr(b, f)), f
    assert a.groups.keys() == b.groups.keys()
    for g, cols in a.groups.items():
        assert list(cols) == list(b.groups[g]), g
        for c, x in cols.items():
            y = b.groups[g][c]
            assert x.dtype == y.dtype and x.shape == y.shape, (g, c)
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), (g, c)  # bit for bit (-0.0, NaN)


def test_switch_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    assert native.scanner(columns.TableBuilder({})) is None


@needs_native
@pytest.mark.parametrize("trace", ALL, ids=lambda p: p.name)
def test_bundled_traces_same_table(trace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stats = assert_same(trace, monkeypatch)
    assert stats["native"] > 0 and stats["msgspec"] <= 1, stats  # the reader reads these (the last piece: maybe not)
    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress(trace.read_bytes()))
    assert_same(plain, monkeypatch, chunk=1 << 20)
    assert_same(plain, monkeypatch, chunk=8192, parts=3)  # byte ranges on threads, many pieces each


# -- randomized and hostile variants -------------------------------------------------------------------------------


def _number(rng: random.Random, v: float | int) -> str:
    """A number as some writer might spell it: repr, exponent form, an integer when integral, -0.0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(v)
    if isinstance(v, int):  # ids stay integers (an id written as 1e3 is a float: a type error, tested apart)
        return str(v)
    k = rng.random()
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15 and k < 0.2:
        return str(int(v))
    if k < 0.3:
        return f"{float(v):e}"
    if k < 0.35:
        return f"{float(v):E}".replace("E+", "E")
    if v == 0 and k < 0.45:
        return "-0.0" if rng.random() < 0.5 else "-0"
    return repr(v)


def _write(rng: random.Random, v: Any, out: list[str], pretty: bool, depth: int = 0) -> None:
    """JSON text with random spacing, key order and string escaping."""
    sep = (lambda: rng.choice(["", " ", "\n", "\t", "\r\n  "])) if pretty else (lambda: "")
    if isinstance(v, dict):
        items = list(v.items())
        if rng.random() < 0.5:
            rng.shuffle(items)
        out.append("{" + sep())
        for i, (k, x) in enumerate(items):
            if i:
                out.append("," + sep())
            out.append(json.dumps(k) + sep() + ":" + sep())
            _write(rng, x, out, pretty, depth + 1)
        out.append(sep() + "}")
    elif isinstance(v, list):
        out.append("[" + sep())
        for i, x in enumerate(v):
            if i:
                out.append("," + sep())
            _write(rng, x, out, pretty, depth + 1)
        out.append(sep() + "]")
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=rng.random() < 0.5))
    elif v is None or isinstance(v, bool):
        out.append(json.dumps(v))
    elif isinstance(v, _Raw):
        out.append(v.text)
    else:
        out.append(_number(rng, v))


class _Raw:
    """A value written as this exact text (invalid numbers, NaN, duplicate keys)."""

    def __init__(self, text: str) -> None:
        self.text = text


_NAMES = ['say "hi"', "back\\slash", "tab\there", "ünïcödé", "😀 emoji", "a/b", "ctl\u0001x", "é\u2028"]


def _hostile(rng: random.Random, e: dict[str, Any]) -> None:
    """One random change to an event: types, absent fields, odd names and numbers, misleading args text."""
    keys = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"]
    k = rng.random()
    if k < 0.15:
        e.pop(rng.choice(keys), None)
    elif k < 0.3:
        e["name"] = rng.choice(_NAMES) + str(e.get("name", ""))
    elif k < 0.4:
        e.setdefault("args", {})["note"] = '{"cat":"kernel","ph":"X","ts":1,"dur":2}'
        e["args"]["nested"] = [{"cat": "kernel"}, {"a": [1, 2.5e-3, None, True]}]
    elif k < 0.5:
        e[rng.choice(["ts", "dur"])] = rng.choice([0, -0.0, 1e3, -5, 2**53 + 1, 12345678901234567, 1e-320, 0.1])
    elif k < 0.6:
        e[rng.choice(keys)] = rng.choice([None, True, "7", [1], {"x": 1}, 1.5, -3])
    elif k < 0.7:
        args = e.setdefault("args", {})
        args[rng.choice(["External id", "correlation", "device", "stream", "Input Dims"])] = rng.choice(
            [None, 2**63 + 5, -1, "3", 1.0, [[1, 2], []], True, 7]
        )
    elif k < 0.75:
        e["id"] = rng.choice([2**64 - 1, "0x1f", -4, None, 5])
    elif k < 0.8:
        e["ts"] = _Raw(rng.choice(["NaN", "Infinity", "1e400", "-1e400", "01", "1.", "+1", ".5", "1e", "0x10"]))
    elif k < 0.85:
        e["tid"] = e.get("pid", 1) if rng.random() < 0.5 else f"stream {rng.randint(0, 3)}"
    elif k < 0.9:
        n = rng.choice([5, 120, 300, 3000])  # around the reader's and msgspec's depth limits
        e.setdefault("args", {})["deep"] = _Raw("[" * n + "1" + "]" * n)
    else:
        e["cat"] = rng.choice(["kernel", "gpu_memcpy", "cuda_runtime", "cpu_op", "ac2g", "", "Kernel", "kernel\u00e9"])


def _benign(rng: random.Random, e: dict[str, Any]) -> None:
    """One random change that keeps the event valid: absent fields, odd names, number spellings, null ids,
    string ids and devices, misleading args text, values the validity rules count as skipped."""
    k = rng.random()
    if k < 0.15:
        e.pop(rng.choice(["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"]), None)
    elif k < 0.3:
        e["name"] = rng.choice(_NAMES) + str(e.get("name", ""))
    elif k < 0.4:
        e.setdefault("args", {})["note"] = '{"cat":"kernel","ph":"X","ts":1,"dur":2}'
        # (a list of objects in args sends the file to the whole-file decode in both paths: its "}, {" looks like
        # an event boundary to the piece cutter; the hostile variants have those)
        e["args"]["nested"] = {"cat": "kernel", "name": '\u00e9"', "a": [1, 2.5e-3, None, True, -0.0, [[]]]}
    elif k < 0.55:
        e[rng.choice(["ts", "dur"])] = rng.choice(
            [0, -0.0, 1e3, -5, -1.5, 2**53 + 1, 12345678901234567, 1e-320, 0.1, 1e300, 1e17, 1e12 + 1, 5e-324]
        )
    elif k < 0.6:
        e["ts"] = None
    elif k < 0.7:
        args = e.setdefault("args", {})
        key = rng.choice(["External id", "correlation", "device", "stream", "Input Dims"])
        args[key] = rng.choice(
            {
                "External id": [None, -1, 0, 2**62],
                "correlation": [None, -7, 0, 2**63 - 1],
                "device": [None, "0", "gpu 1", 3, -2],
                "stream": [None, "7", 7],
                "Input Dims": [None, [[1, 2], []], "x", 1.5, {"a": [1]}, True],
            }[key]
        )
    elif k < 0.8:
        e["id"] = rng.choice(["0x1f", -4, None, 5, 2**63 - 1])
    elif k < 0.9:
        e["tid"] = e.get("pid", 1) if rng.random() < 0.5 else f"stream {rng.randint(0, 3)}"
        e["pid"] = rng.choice([0, -1, "host", e.get("pid", 0)])
    else:
        e["cat"] = rng.choice(["kernel", "gpu_memcpy", "cuda_runtime", "cpu_op", "ac2g", "", "Kernel", "kernel\u00e9"])
        e["ph"] = rng.choice(["X", "s", "f", "i", "", "x"])


def _variant(events: list[dict[str, Any]], seed: int, rate: float, change: Any = _hostile) -> bytes:
    rng = random.Random(seed)
    evs = [dict(e, args=dict(e["args"])) if isinstance(e.get("args"), dict) else dict(e) for e in events]
    for e in evs:
        if rng.random() < rate:
            change(rng, e)
    doc: Any = {"traceEvents": evs, "deviceProperties": [{"name": "GPU ö"}]} if seed % 5 else evs
    out: list[str] = []
    _write(rng, doc, out, pretty=seed % 3 != 0)
    text = "".join(out)
    dup = seed % 7 == 0 and '"ts":' in text
    if dup:  # a duplicate key in one event
        i = text.index('"ts":')
        text = text[:i] + '"ts": 5, ' + text[i:]
    return text.encode("utf-8", "surrogatepass")


def _events(name: str, limit: int) -> list[dict[str, Any]]:
    trace = json.loads(gzip.decompress(next(p for p in ALL if p.name == name).read_bytes()))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    # kernels, runtime calls, flows, CPU ops and Python frames: every group the table keeps
    return events[:limit]


_SOURCES = ["tiny_llama_cpu.json.gz", "graph_execution.json.gz", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]


@needs_native
@pytest.mark.parametrize("seed", range(24))
def test_hostile_variants_same_table_or_error(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    events = _events(_SOURCES[seed % 3], 1500)
    rate = [0.0, 0.002, 0.02, 0.2][seed % 4]
    path = tmp_path / "t.json"
    path.write_bytes(_variant(events, seed, rate))
    assert_same(path, monkeypatch, chunk=2048)
    assert_same(path, monkeypatch, chunk=2048, parts=2 + seed % 3)  # a bad part: the file is read whole
    if seed % 2 == 0:  # the same bytes gzipped
        gz = tmp_path / "t.json.gz"
        gz.write_bytes(gzip.compress(path.read_bytes()))
        assert_same(gz, monkeypatch, chunk=2048)


@needs_native
@pytest.mark.parametrize("seed", range(24))
def test_valid_variants_same_table(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Valid but unusual traces (every event changed at the highest rate): the reader reads them itself."""
    events = _events(_SOURCES[seed % 3], 3000)
    path = tmp_path / "t.json"
    path.write_bytes(_variant(events, seed, [0.05, 0.3, 1.0][seed % 3], _benign))
    stats = assert_same(path, monkeypatch, chunk=[512, 4096, 1 << 20][seed % 3])
    assert stats["native"] > 0
    assert_same(path, monkeypatch, chunk=[512, 4096, 1 << 20][seed % 3], parts=2 + seed % 3)


@needs_native
@pytest.mark.parametrize("seed", range(12))
def test_truncated_and_corrupted_files(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(corrupted(_variant(_events(_SOURCES[seed % 3], 600), seed + 100, 0.01), seed))
    assert_same(path, monkeypatch, chunk=1024)
    assert_same(path, monkeypatch, chunk=1024, parts=3)  # the broken part falls back; the error is the same


@needs_native
def test_escaped_names_are_read_natively(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Escapes (\\uXXXX, surrogate pairs, quotes) in names and keys of args are read by the reader itself."""
    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 1, "tid": 2, "ts": 10.0 + i, "dur": 1, "args": {"device": 0}}
        for i, n in enumerate(['k"1', "k\\2", "kä3", "k😀4", "k\u00005"])
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, ensure_ascii=True))
    stats = assert_same(path, monkeypatch, chunk=1 << 20)
    assert stats == {"native": 1, "msgspec": 0}


def test_parts_on_threads_without_the_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Byte ranges read on threads by msgspec alone (no reader, or pieces it hands back; they hold the GIL): the
    one-pass table; and a broken part falls back to the whole file, which reports the same error as one pass."""
    path = tmp_path / "t.json"
    path.write_bytes(_variant(_events(_SOURCES[2], 3000), 7, 0.3, _benign))
    none = {"native": 0, "msgspec": 0}
    one = _outcome(path, monkeypatch, False, 4096, none)
    threaded = _outcome(path, monkeypatch, False, 4096, none, parts=3)
    assert one[0] == threaded[0] == "table"
    for f in _FIELDS:
        assert _same_value(getattr(one[1], f), getattr(threaded[1], f)), f
    data = path.read_bytes()
    cut = data.index(b'"ph"', len(data) * 2 // 3)  # in the last part: the others read fine
    path.write_bytes(data[:cut] + b'"ph": oops, ' + data[cut:])
    broken = [_outcome(path, monkeypatch, False, 4096, none, parts=n) for n in (1, 3)]
    assert broken[0][0] == "error" and broken[0] == broken[1]
    assert "broken JSON" in broken[0][1] and str(path) in broken[0][1]


@needs_native
def test_one_state_read_by_two_threads_at_once(tmp_path: Path) -> None:
    """A scan state is not shared: a call that finds it in use by another thread's pass hands its piece back (None,
    so msgspec reads it); every piece read gives the same columns as a reader of its own. Misuse, but never a crash or
    a mixed table."""
    import threading

    from magpie_trace_native import _kineto_scan  # type: ignore[attr-defined]

    events = _events(_SOURCES[2], 3000)
    piece = json.dumps(events).encode()
    alone = _kineto_scan.scan(piece, native._UNESCAPE, [])
    assert alone is not None
    shared: list[Any] = []
    got: list[Any] = []

    def read() -> None:
        for _ in range(20):
            got.append(_kineto_scan.scan(piece, native._UNESCAPE, shared))

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    read_ones = [r for r in got if r is not None]
    assert len(got) == 60 and read_ones
    for r in read_ones:
        assert {k: r[k] for k in ("cat", "name", "ts", "dur", "ext")} == {
            k: alone[k] for k in ("cat", "name", "ts", "dur", "ext")
        }
        assert r["names"][: len(alone["names"])] == alone["names"]


@needs_native
@pytest.mark.parametrize("trace", ALL, ids=lambda p: p.name)
def test_gap_outputs_same_with_and_without_reader(trace: Path, tmp_path: Path) -> None:
    """``magpie gap`` end to end (real processes), with the reader and with ``MAGPIE_TRACE_NATIVE=0``: every file it
    writes is the same but for the run's timing and the report page's time stamp."""
    magpie = str(Path(sys.executable).with_name("magpie"))
    outs = {}
    for flag in ("0", "1"):
        out = tmp_path / flag
        env = {**os.environ, native.ENV: flag}
        got = subprocess.run([magpie, "gap", str(trace), "--json", "-o", str(out)], env=env, capture_output=True)
        assert got.returncode in (0, 1), got.stderr[-2000:]
        outs[flag] = out
    files = {
        flag: {_normal_text(str(p.relative_to(out)).encode(), out): p for p in out.rglob("*") if p.is_file()}
        for flag, out in outs.items()
    }
    assert files["0"].keys() == files["1"].keys() and files["0"]
    for rel in files["0"]:
        a, b = (_normal_file(files[f][rel], outs[f]) for f in ("0", "1"))
        assert a == b, rel


def _normal_text(text: bytes, out: Path) -> bytes:
    """Without the output folder's path, the run folder's time stamp and a report page's "written at" minute."""
    text = re.sub(rb"_\d{8}_\d{6}", b"_<stamp>", text.replace(str(out).encode(), b"<out>"))
    return re.sub(rb"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", b"<written>", text)


def _normal_file(path: Path, out: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".json":
        value = json.loads(data)
        if isinstance(value, dict):
            value.pop("elapsed_s", None)  # the run's own timing
        data = json.dumps(value, sort_keys=True).encode()
    return _normal_text(data, out)


@needs_native
def test_number_spellings_read_bit_for_bit() -> None:
    """Random number texts (long mantissas, exponents near the double range, subnormals, integers near 2**53 and
    2**63) in ``ts``, ``dur`` and the integer ids: where the reader reads a piece, every value is msgspec's."""
    from magpie_trace.loader import LIST_DECODER

    from magpie_trace_native import _kineto_scan  # type: ignore[attr-defined]

    rng = random.Random(17)
    read = 0
    for _ in range(20000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))).lstrip("0") or "0"
        text = ("-" if rng.random() < 0.3 else "") + digits
        if rng.random() < 0.6 and len(digits) > 1:
            cut = rng.randint(1, len(digits) - 1)
            text = text[: len(text) - len(digits) + cut] + "." + digits[cut:]
        if rng.random() < 0.4:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330))
        num = text.encode()
        ident = str(rng.choice([2**63 - 1, -(2**63), 2**53 + 1, rng.randint(-(10**19), 10**19)])).encode()
        piece = b'[{"ts":%s,"dur":%s,"args":{"correlation":%s}}]' % (num, num, ident)
        try:
            want = LIST_DECODER.decode(piece)[0]
        except Exception:
            want = None
        got = _kineto_scan.scan(piece, native._UNESCAPE)
        if got is None:
            continue
        assert want is not None, piece  # the reader never accepts what msgspec rejects
        read += 1
        for field in ("ts", "dur"):
            assert np.frombuffer(got[field], np.float64).tobytes() == np.float64(getattr(want, field)).tobytes(), piece
        assert int(np.frombuffer(got["corr"], np.int64)[0]) == want.args.correlation, piece
    assert read > 10000


def _near_midpoints(rng: random.Random, n: int) -> list[str]:
    """Decimal texts of 15-19 significant digits closest to the midpoint between two neighbouring doubles: where
    rounding twice (to 64 bits, then to 53) could go wrong."""
    from decimal import Decimal, localcontext

    out = []
    with localcontext() as ctx:
        ctx.prec = 60
        for _ in range(n):
            a = np.float64(10 ** rng.uniform(0, 17))  # every magnitude: the danger is 19-digit texts
            mid = (Decimal(float(a)) + Decimal(float(np.nextafter(a, np.inf)))) / 2
            for digits in (15, 16, 17, 18, 19):
                text = format(mid, f".{digits}g")
                if "e" not in text:
                    out.append(text if "." in text else text + ".0")
    return out


@needs_native
def test_timestamp_numbers_read_bit_for_bit() -> None:
    """Kineto's timestamps (13-digit microseconds with 3-6 decimals: 16-19 significant digits, beyond the 2**53 fast
    path), texts right at the midpoint between two doubles, and zeros in every spelling: msgspec's double, bit for
    bit (the reader rounds such mantissas in extended precision and leaves exact midpoints to strtod)."""
    from magpie_trace.loader import LIST_DECODER

    from magpie_trace_native import _kineto_scan  # type: ignore[attr-defined]

    rng = random.Random(23)
    micros = [rng.randint(10**12, 10**13) for _ in range(3000)]
    texts = [f"{m}.{rng.randint(0, 10**k - 1):0{k}d}" for k in range(1, 7) for m in micros]
    texts += _near_midpoints(rng, 3000)
    texts += [f"{s}0{f}{e}" for s in ("", "-") for f in ("", ".0", ".000") for e in ("", "e5", "E-3", "e+400")]
    texts += [("-" if rng.random() < 0.3 else "") + t for t in texts[:2000]]
    piece = ("[" + ",".join(f'{{"ts":{t},"dur":{t}}}' for t in texts) + "]").encode()
    want = LIST_DECODER.decode(piece)
    got = _kineto_scan.scan(piece, native._UNESCAPE)
    assert got is not None
    for field in ("ts", "dur"):
        expected = np.array([getattr(e, field) for e in want], np.float64)
        assert np.frombuffer(got[field], np.float64).tobytes() == expected.tobytes()


@needs_native
def test_hostile_gap_inputs_same_outcome(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fuzz suite's hostile ``magpie gap`` cases (one seed; ``benchmarks/fuzz_hostile_inputs.py`` has more), run
    in-process with the reader on and off: the same exit code and the same output (but for timings and paths)."""
    from magpie_core.plugins import PluginManager, use_plugin_manager
    from tests.fuzz.hostile import generate, run_case

    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    cases = generate(7, ("trace-gap",))
    assert cases
    for i, case in enumerate(cases):
        seen = {}
        for flag in ("1", "0"):
            monkeypatch.setenv(native.ENV, flag)
            work = tmp_path / f"{i}-{flag}"
            with use_plugin_manager(PluginManager()):
                got = run_case(case, work)
            text = re.sub(r"\d+(\.\d+)? ?s\b", "<t>", got.output.replace(str(work), "<work>"))
            seen[flag] = (got.code, re.sub(r"_\d{8}_\d{6}", "_<stamp>", text))
        assert seen["1"] == seen["0"], case.name


# -- the tokenizer's fast paths (predicted keys, digit runs, separators) against msgspec, piece by piece -------------


def _scan_rows(raw: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The reader's columns as one tuple per event, in msgspec's terms (see :func:`_msgspec_rows`)."""
    col = {k: np.frombuffer(raw[k], t) for k, t in (("ts", np.float64), ("dur", np.float64), ("id", np.int64))}
    ids = {k: np.frombuffer(raw[k], np.int32) for k in ("cat", "ph", "name", "pid", "tid", "dev", "dims")}
    ints = {k: np.frombuffer(raw[k], np.int64) for k in ("ext", "corr")}
    idint = np.frombuffer(raw["idint"], np.uint8)
    rows = []
    for i in range(raw["n"]):
        dev, dims = int(ids["dev"][i]), int(ids["dims"][i])
        rows.append((
            raw["phs"][ids["ph"][i]], raw["cats"][ids["cat"][i]], raw["names"][ids["name"][i]],
            raw["pids"][ids["pid"][i]], raw["tids"][ids["tid"][i]], col["ts"][i].tobytes(), col["dur"][i].tobytes(),
            int(col["id"][i]) if idint[i] else None, int(ints["ext"][i]), int(ints["corr"][i]),
            raw["devs"][dev] if dev >= 0 else None, raw["dimss"][dims] if dims >= 0 else b"",
        ))  # fmt: skip
    return rows


def _msgspec_rows(evs: list[Any]) -> list[tuple[Any, ...]]:
    from magpie_trace.loader import NO_ID

    def f64(v: float | None) -> bytes:
        return np.float64(math.nan if v is None else v).tobytes()

    def ident(v: int | None) -> int:
        return NO_ID if v is None else v

    return [
        (
            e.ph, e.cat, e.name, e.pid, e.tid, f64(e.ts), f64(e.dur), e.id if isinstance(e.id, int) else None,
            ident(e.args.external_id), ident(e.args.correlation), e.args.device, bytes(e.args.input_dims),
        )
        for e in evs
    ]  # fmt: skip


def _read_both(piece: Any) -> tuple[Any, Any]:
    """(msgspec's rows or None when it refuses the piece, the reader's rows or None when it hands it back)"""
    from magpie_trace.loader import LIST_DECODER

    from magpie_trace_native import _kineto_scan  # type: ignore[attr-defined]

    try:
        want = _msgspec_rows(LIST_DECODER.decode(piece))
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        want = None
    got = _kineto_scan.scan(piece, native._UNESCAPE)
    return want, None if got is None else _scan_rows(got)


@needs_native
def test_tokenizer_fast_paths_read_as_msgspec() -> None:
    """Every event text of tests/helpers/token_variants.py alone in a piece, then all the valid ones in one piece:
    where the reader reads a piece, every field is msgspec's (floats bit for bit); it never reads a piece msgspec
    refuses; and it reads the Kineto-like spellings (other spacing, look-alike keys, escaped values) itself."""
    from tests.helpers import token_variants

    readable = []
    n_read = 0
    for text, must_read in token_variants.cases():
        piece = b"[" + text.encode() + b"]"
        want, got = _read_both(piece)
        if got is not None:
            assert want is not None, piece  # the reader never accepts what msgspec rejects
            assert got == want, piece
            n_read += 1
            readable.append(piece[1:-1])
        elif must_read:
            raise AssertionError(f"not read by the reader: {piece!r}")
    assert n_read > 500
    whole = b"[" + b",\n".join(readable) + b"]"
    want, got = _read_both(whole)
    assert got is not None and got == want


@needs_native
def test_tokenizer_never_reads_past_a_piece() -> None:
    """A piece cut anywhere near its end or inside a predicted key, as bytes and as a view of a longer buffer whose
    next bytes would complete it: both readers refuse it alike (the reader's 8-byte compares stay inside it)."""
    from tests.helpers import token_variants

    piece = b"[" + token_variants.render(token_variants.KERNEL).encode() + b",\n"
    piece += token_variants.render(token_variants.FLOW, ":", ",").encode() + b"]"
    for cut in token_variants.cuts(piece):
        for buf in (cut, memoryview(piece)[: len(cut)]):
            want, got = _read_both(buf)
            assert want is None and got is None, bytes(buf)
