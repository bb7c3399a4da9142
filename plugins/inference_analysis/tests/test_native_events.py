"""The compiled reader of kept events (``_kineto_kept.c`` of magpie-trace-native) against msgspec: the same
:class:`~magpie_inference_analysis.events.Trace` (every kept event's every field, columns bit for bit, counts,
skipped events) or the same error, on every bundled trace and on odd and hostile variants of them.

Each case loads a file twice in this process, with ``MAGPIE_TRACE_NATIVE=0`` (the msgspec path every install has)
and with the reader on. Small pieces make files mix pieces the reader reads with pieces it hands back to msgspec.
Skipped when the extension is not built (no C compiler at install time)."""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from magpie_inference_analysis import events, kept_reader
from magpie_trace import native
from magpie_trace.loader import TraceLoadError

from tests.conftest import DATA
from tests.helpers.corrupt import corrupted

TRACES = sorted((DATA / "traces").rglob("*.json.gz")) + sorted((DATA / "capture_traces").rglob("*.json.gz"))
needs_native = pytest.mark.skipif(
    not kept_reader.available(),
    reason="the compiled kept-event reader (magpie-trace-native) is not installed or not built",
)
_RAW_FIELDS = ("input_dims", "input_type", "concrete", "strides")


def _load(
    path: Path, monkeypatch: pytest.MonkeyPatch, on: bool, chunk: int, workers: int, stats: dict[str, int]
) -> Any:
    monkeypatch.setenv(native.ENV, "1" if on else "0")
    monkeypatch.setattr(events, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(events, "NATIVE_CHUNK_BYTES", chunk)
    real = events._native_reader

    def counted() -> Callable[[Any], Any] | None:
        read = real()
        if read is None:
            return None

        def piece(buf: Any) -> Any:
            got = read(buf)
            stats["native" if got is not None else "msgspec"] += 1
            return got

        return piece

    monkeypatch.setattr(events, "_native_reader", counted)
    try:
        return events.load(path, workers=workers)
    except TraceLoadError as exc:
        return str(exc)
    finally:
        monkeypatch.setattr(events, "_native_reader", real)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def _assert_same_event(x: events.Ev, y: events.Ev, cpu: bool) -> None:
    for f in ("ph", "cat", "name", "tid", "ts", "dur"):
        assert _same(getattr(x, f), getattr(y, f)), (f, x, y)
    assert (x.args is None) == (y.args is None), (x, y)
    if x.args is None:
        return
    assert _same(x.args.correlation, y.args.correlation) and _same(x.args.kernel, y.args.kernel), (x, y)
    if cpu:  # the raw argument texts are kept (and read) for CPU ops only: as bytes on both paths
        for f in _RAW_FIELDS:
            assert _same(getattr(x.args, f), getattr(y.args, f)), (f, x, y)


def _buckets(t: events.Trace) -> tuple[list[events.Ev], ...]:
    return t.cpu_ops, t.gpu, t.runtime, t.annotations


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int = 4096, workers: int = 1) -> dict[str, int]:
    """Both paths give the same trace (or error); how many pieces the reader read and handed back."""
    stats = {"native": 0, "msgspec": 0}
    plain = _load(path, monkeypatch, False, chunk, workers, {"native": 0, "msgspec": 0})
    fast = _load(path, monkeypatch, True, chunk, workers, stats)
    assert type(plain) is type(fast), (plain, fast)
    if isinstance(plain, str):
        assert plain == fast
        return stats
    for f in ("t0", "num_events", "skipped", "cpu_op_names", "device_properties", "rocm", "size_bytes"):
        assert _same(getattr(plain, f), getattr(fast, f)), f
    assert (plain.cpu_columns is None) == (fast.cpu_columns is None)
    for x, y in zip(plain.cpu_columns or (), fast.cpu_columns or (), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))  # bit for bit
    for i, (xs, ys) in enumerate(zip(_buckets(plain), _buckets(fast), strict=True)):
        assert len(xs) == len(ys), i
        for x, y in zip(xs, ys, strict=True):
            _assert_same_event(x, y, cpu=i == 0)
    return stats


@needs_native
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_bundled_traces_same_events(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stats = assert_same(path, monkeypatch)
    assert stats["native"] > 0 and stats["msgspec"] <= 1, stats  # the reader reads these (the last piece: maybe not)
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    assert_same(plain, monkeypatch, chunk=1 << 20)
    assert_same(plain, monkeypatch, chunk=2048, workers=2)  # byte ranges (workers send msgpack back)


def test_switched_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    assert events._native_reader() is None


# -- odd and hostile variants ---------------------------------------------------------------------------------------


class _Text:
    """A value written as this exact text (number spellings, invalid values, escapes)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _write(rng: random.Random, v: Any, out: list[str]) -> None:
    """JSON text with random spacing, key order and escaping."""
    sep = lambda: rng.choice(["", "", " ", "\n", "\t "])  # noqa: E731
    if isinstance(v, dict):
        items = list(v.items())
        if rng.random() < 0.3:
            rng.shuffle(items)
        out.append("{" + sep())
        for i, (k, x) in enumerate(items):
            out.append(("," + sep()) if i else "")
            out.append(json.dumps(k) + sep() + ":" + sep())
            _write(rng, x, out)
        out.append(sep() + "}")
    elif isinstance(v, list):
        out.append("[" + sep())
        for i, x in enumerate(v):
            out.append(("," + sep()) if i else "")
            _write(rng, x, out)
        out.append(sep() + "]")
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=rng.random() < 0.5))
    elif isinstance(v, _Text):
        out.append(v.text)
    else:
        out.append(json.dumps(v))


_NAMES = ['say "hi"', "back\\slash", "tab\there", "ünïcödé", "😀 emoji", "a/b", "ctl\u0001x", "é\u2028"]
_NUMBERS = ["0", "-0", "-0.0", "1e3", "1E+2", "2.5e-3", "12345678901234567", "9007199254740993", "1e-320", "0.1"]


def _benign(rng: random.Random, e: dict[str, Any]) -> None:
    """One change that keeps the event valid for msgspec."""
    args = e.get("args") if isinstance(e.get("args"), dict) else None
    k = rng.random()
    if k < 0.1:
        e.pop(rng.choice(["ph", "cat", "name", "tid", "ts", "dur", "args"]), None)
    elif k < 0.2:
        e["name"] = rng.choice(_NAMES) + str(e.get("name", ""))
    elif k < 0.3:
        e[rng.choice(["ts", "dur"])] = _Text(rng.choice(_NUMBERS))
    elif k < 0.35:
        e["ts"] = None
    elif k < 0.45 and args is not None:
        key = rng.choice(["Input Dims", "Input type", "Concrete Inputs", "Input Strides"])
        args[key] = rng.choice(
            [[], [[1, 2], []], ["é", 'q"'], "x", 1.5, None, {"a": [1]}, _Text('[ [1 ,2] , "\\u00e9" ]')]
        )
    elif k < 0.55 and args is not None:
        key = rng.choice(["correlation", "kernel", "External id", "Sequence number"])
        args[key] = rng.choice(
            {"correlation": [None, -7, 0, 2**63 - 1], "kernel": [None, "k", '\u00e9k"', ""]}.get(key, [None, 3, "x"])
        )
    elif k < 0.6:
        e["args"] = rng.choice([None, {}])
    elif k < 0.7:
        e["tid"] = rng.choice([0, -1, 2**62, "stream 7", "\u00e9"])
    elif k < 0.8:
        e["ph"] = rng.choice(["X", "B", "i", "s", "f", "", "x"])
    elif k < 0.9:
        e["cat"] = rng.choice(["kernel", "cpu_op", "cuda_runtime", "hip_runtime", "user_annotation", "Kernel", "", "é"])
    else:
        e.setdefault("extra", {})["note"] = '{"cat":"cpu_op","ph":"X","ts":1,"dur":2}'


def _hostile(rng: random.Random, e: dict[str, Any]) -> None:
    """One change msgspec may reject or the reader must not read itself (escaped ph/cat, duplicates, types)."""
    k = rng.random()
    if k < 0.15:
        e[rng.choice(["ph", "cat", "name", "tid", "ts", "dur", "args"])] = rng.choice([True, [1], {"x": 1}, 1.5, "7"])
    elif k < 0.3:
        e.setdefault("args", {})
        if isinstance(e["args"], dict):
            e["args"][rng.choice(["correlation", "kernel"])] = rng.choice([2**63 + 5, 1.0, "3", True, [1], 2**64 + 1])
    elif k < 0.45:
        e["ts"] = _Text(rng.choice(["NaN", "Infinity", "1e400", "01", "1.", "+1", ".5", "1e", "-"]))
    elif k < 0.55:
        e["dur"] = None
    elif k < 0.65:
        e["ph"] = _Text('"\\u0058"')  # "X", escaped
    elif k < 0.75:
        e["cat"] = _Text('"cpu\\u005fop"')  # "cpu_op", escaped
    elif k < 0.85:
        e["tid"] = rng.choice([2**63, 2**64 - 1, -(2**63) - 1, 1.0])
    else:
        e[rng.choice(["ph", "cat", "name", "tid"])] = None  # null where a string (or an integer) belongs


def _variant(source: list[dict[str, Any]], seed: int, rate: float, change: Callable[..., None], dup: bool) -> bytes:
    rng = random.Random(seed)
    evs = [dict(e, args=dict(e["args"])) if isinstance(e.get("args"), dict) else dict(e) for e in source]
    for e in evs:
        if rng.random() < rate:
            change(rng, e)
    doc: Any = {"traceEvents": evs, "deviceProperties": [{"name": "GPU ö"}]} if seed % 4 else evs
    out: list[str] = []
    _write(rng, doc, out)
    text = "".join(out)
    if dup and '"dur":' in text:  # a duplicate key in one event
        i = text.index('"dur":', len(text) // 2)
        text = text[:i] + '"dur": 5, ' + text[i:]
    return text.encode("utf-8", "surrogatepass")


def _source(name: str, limit: int) -> list[dict[str, Any]]:
    path = next(p for p in TRACES if p.name == name)
    trace = json.loads(gzip.decompress(path.read_bytes()))
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    keep = [e for e in evs if e.get("cat") in ("cpu_op", "kernel", "cuda_runtime", "hip_runtime", "user_annotation")]
    return keep[:limit] + evs[:limit]  # the kept kinds first (CPU ops with all four argument texts), then anything


_SOURCES = ["tiny_llama_cpu.json.gz", "graph_execution.json.gz", "google_owlv2-large-patch14-ensemble__1016001.json.gz"]


@needs_native
@pytest.mark.parametrize("seed", range(18))
def test_valid_variants_same_events(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Valid but unusual traces: the reader reads them itself, and keeps what msgspec keeps."""
    path = tmp_path / "t.json"
    path.write_bytes(_variant(_source(_SOURCES[seed % 3], 1500), seed, [0.05, 0.3, 1.0][seed % 3], _benign, False))
    stats = assert_same(path, monkeypatch, chunk=[512, 4096, 1 << 20][seed % 3])
    assert stats["native"] > 0 and stats["msgspec"] <= 1, stats


@needs_native
@pytest.mark.parametrize("seed", range(18))
def test_hostile_variants_same_events_or_error(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    rate = [0.001, 0.01, 0.1][seed % 3]
    path.write_bytes(_variant(_source(_SOURCES[seed % 3], 1000), seed, rate, _hostile, seed % 4 == 0))
    assert_same(path, monkeypatch, chunk=2048)
    if seed % 2:
        assert_same(path, monkeypatch, chunk=2048, workers=2)


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_truncated_and_corrupted_files(seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(corrupted(_variant(_source(_SOURCES[seed % 3], 400), seed + 100, 0.01, _benign, False), seed))
    assert_same(path, monkeypatch, chunk=1024)


@needs_native
def test_escaped_and_unicode_strings_are_read_natively(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    evs = [
        {"ph": "X", "cat": "cpu_op", "name": n, "tid": 1, "ts": i, "dur": 1,
         "args": {"Input Dims": [[1], [n]], "Input type": ["float", n], "Concrete Inputs": ["", n],
                  "Input Strides": [[1]], "External id": i}}
        for i, n in enumerate(_NAMES)
    ]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": evs}).encode())
    stats = assert_same(path, monkeypatch)
    assert stats["native"] >= 1 and stats["msgspec"] == 0, stats


@needs_native
@pytest.mark.parametrize("chunk", [256, 1024, 1 << 20])
def test_skipped_runs_and_the_last_piece(chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runs of Python frames are skipped whole by the same rule on both paths; the last piece (decoded while the
    end of the event array is searched, here followed by a key holding a list) is never skipped by rule."""
    frame = {
        "ph": "X",
        "cat": "python_function",
        "name": "f.py(1): f",
        "pid": 1,
        "tid": 1,
        "dur": 1.0,
        "args": {"Python id": 1, "ph": "X"},
    }
    op = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": 1,
        "tid": 1,
        "dur": 2.0,
        "args": {"Input Dims": [[1, 2]], "External id": 1},
    }
    evs = [dict(frame if i % 50 < 40 or i > 900 else op, ts=float(i)) for i in range(1000)]  # fmt: skip
    path = tmp_path / "t.json"
    doc = {"traceEvents": evs, "after": [{"ph": "X", "cat": "python_function"}], "deviceProperties": [{"n": 1}]}
    path.write_bytes(json.dumps(doc).encode())
    stats = assert_same(path, monkeypatch, chunk=chunk)
    assert stats["native"] > 0, stats  # (msgspec: the candidate ends of the array that are not JSON)


@needs_native
def test_skip_rule_same_as_the_python_one() -> None:
    """The reader skips a piece (and counts its events) exactly when ``columns.PieceSkipper`` would: random
    texts with the needles planted, overlapping, nested in args and split across each other."""
    from magpie_trace.columns import PieceSkipper

    read = events._native_reader()
    assert read is not None
    rng = random.Random(1)
    snippets = [
        '{"ph": "X", "cat": "python_function", "name": "f", "ts": 1, "dur": 1}',
        '{"ph":"X","cat":"python_function"cat": "python_function", "ts": 1}',
        '{"ph":"X","cat":"python_function","args":{"ph": 1, "cat": "python_function"}}',
        '{"ph": "i", "cat": "cpu_instant_event", "name": "x", "ts": 3}',
        '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 2, "dur": 1}',
    ]
    noise = ['"ph":', '"p', 'h":', '"cat": "python_function"', '"cat":"cpu_instant_event"', "xx", '"ph"', " "]
    for _ in range(3000):
        parts = [
            rng.choice(snippets) if rng.random() < 0.7 else rng.choice(noise) * rng.randint(1, 3)
            for _ in range(rng.randint(1, 30))
        ]
        buf = bytearray(("[" + ",".join(parts) + "]").encode())
        skipper = PieceSkipper(events.SKIPPED_CATS)
        skipped = skipper.skips(buf, 1, len(buf) - 1)
        got = read(memoryview(buf))
        by_rule = got is not None and all(isinstance(e, tuple) for e in got.events)  # the reader's "skipped whole"
        assert by_rule == skipped, buf
        if skipped:
            assert got is not None and got.seen == skipper.skipped
        assert read(bytes(buf)) is None or not all(isinstance(e, tuple) for e in read(bytes(buf)).events)  # last piece


def test_built_wherever_the_gap_reader_is() -> None:
    """Both extensions are built by the same compiler from the same tokenizer (``_kineto_kept.c`` includes
    ``_kineto_scan.c``): one built without the other means the include broke (``optional=True`` would hide it)."""
    assert kept_reader.available() == native.available()


@needs_native
@pytest.mark.parametrize("chunk", [512, 1 << 20])
def test_tokenizer_fast_paths_same_events(chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The event texts aimed at the shared tokenizer's fast paths (tests/helpers/token_variants.py: look-alike keys,
    other spacings, digit runs of every length, odd numbers, skipped values), as kernels and as CPU ops: every text
    msgspec reads, in one trace, gives the same kept events; a sample of the others, each in a small trace, the same
    error."""
    from tests.helpers import token_variants

    good: list[str] = []
    kineto_like: list[str] = []  # the spellings the reader reads itself
    bad: list[str] = []
    # negative zero timestamps included: t0 is 0.0 whichever piece holds the -0.0
    for text, must_read in token_variants.cases():
        for t in (text, text.replace('"kernel"', '"cpu_op"')):
            try:
                events._LIST.decode(b"[" + t.encode() + b"]")
            except (ValueError, RecursionError):
                bad.append(t)
                continue
            good.append(t)
            if must_read:
                kineto_like.append(t)
    path = tmp_path / "t.json"
    for texts in (kineto_like, good):
        path.write_text('{"traceEvents": [\n' + ",\n".join(texts) + "\n]}")
        stats = assert_same(path, monkeypatch, chunk=chunk)
        assert stats["native"] > 0 or texts is good, stats
    base = token_variants.render(token_variants.KERNEL)
    for t in bad[:: max(1, len(bad) // 40)]:
        path.write_text('{"traceEvents": [\n' + ",\n".join([base, t, base]) + "\n]}")
        assert_same(path, monkeypatch, chunk=chunk)


@pytest.mark.parametrize("on", [False, True])
def test_broken_and_cut_short_json_say_where(on: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The trace library's messages (the same as `magpie gap`'s): broken JSON names byte, line and column; a file cut
    short says where its data ends, not "not a trace"."""
    text = json.dumps(
        {"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(50)]}
    )
    text = text.replace("}, {", "},\n{")
    broken, cut = tmp_path / "broken.json", tmp_path / "cut.json"
    at = text.index('"name": "k20"')
    broken.write_text(text[:at] + "@" + text[at:])
    cut.write_text(text[: len(text) // 2])
    got = _load(broken, monkeypatch, on, 1 << 20, 1, {"native": 0, "msgspec": 0})
    assert isinstance(got, str) and f"broken JSON at byte {at}, line 21, column " in got and str(broken) in got
    got = _load(cut, monkeypatch, on, 1 << 20, 1, {"native": 0, "msgspec": 0})
    line = text[: len(text) // 2].count("\n") + 1
    assert isinstance(got, str) and f"truncated JSON: the data ends at byte {len(text) // 2}, line {line}," in got
