"""The trace library as a public API (``magpie_trace``, docs/trace-library.md): every exported name
resolves, and the code on that page (a streaming decoder of one's own, a split decode, and the example trace
analyzer plugin) runs as written against the traces in tests/data/traces."""

from __future__ import annotations

import gzip
import math
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import magpie_trace as trace_lib
import msgspec
import pytest
from magpie_trace import load_trace

from magpie_core.plugins import PluginManager
from tests.conftest import DATA, ROOT

DOC = ROOT / "docs" / "trace-library.md"
TRACES = DATA / "traces"
FILES = sorted(TRACES.rglob("*.json.gz"))


@pytest.fixture(scope="module")
def doc() -> Iterator[types.ModuleType]:
    """Every ``python`` block of the page, run in order as one module."""
    mod = types.ModuleType("trace_library_doc")
    sys.modules[mod.__name__] = mod  # msgspec and dataclasses resolve annotations through the module
    try:
        for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
            exec(compile(block, str(DOC), "exec"), mod.__dict__)
        yield mod
    finally:
        del sys.modules[mod.__name__]


def _kernel_totals(path: Path) -> dict[str, float]:
    """Kernel time per name from a whole-file decode, the plain way."""
    totals: dict[str, float] = {}
    for e in load_trace(path).events:
        if e.ph == "X" and e.cat == "kernel" and not math.isnan(e.ts):  # type: ignore[arg-type]
            totals[e.name] = totals.get(e.name, 0.0) + e.dur
    return totals


def test_public_names_resolve_and_are_documented() -> None:
    for name in trace_lib.__all__:
        obj = getattr(trace_lib, name)
        if callable(obj) and not isinstance(obj, type(re.compile(""))):
            assert getattr(obj, "__doc__", None), name
    with pytest.raises(AttributeError):
        trace_lib.no_such_name  # noqa: B018


def test_the_documented_analyzer_registers_and_sums_kernel_time(doc: types.ModuleType, tmp_path: Path) -> None:
    pm = PluginManager(entry_points=[], plugins=[("kernel_time", doc)], defaults=False)
    analyzer = pm.get("trace_analyzer", "kernel-time")
    assert len(FILES) >= 4
    everything: dict[str, float] = {}
    for path in FILES:
        expected = _kernel_totals(path)
        for name, us in expected.items():
            everything[name] = everything.get(name, 0.0) + us
        summary = analyzer.analyze(path, {}, tmp_path / path.stem)
        assert summary["kernels"] == len(expected)
        assert summary["kernel_time_us"] == pytest.approx(sum(expected.values()), rel=1e-9)
        rows = (tmp_path / path.stem / "kernel_time.csv").read_text().splitlines()
        assert rows[0] == "kernel,total_us" and len(rows) == len(expected) + 1
        for name, us in summary["top"]:
            assert us == pytest.approx(expected[name], rel=1e-9)
    assert not _kernel_totals(TRACES / "cpu_recorded" / "tiny_llama_cpu.json.gz")  # CPU only: no kernels
    whole = analyzer.analyze(TRACES, {}, tmp_path / "all")  # a folder: every trace file under it
    assert whole["kernels"] == len(everything)
    assert whole["kernel_time_us"] == pytest.approx(sum(everything.values()), rel=1e-9)
    with pytest.raises(ValueError, match=r"broken\.json"):  # TraceLoadError names the file
        bad = tmp_path / "broken.json"
        bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},')
        analyzer.analyze(bad, {}, tmp_path / "bad")


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_the_documented_streaming_decoder(
    doc: types.ModuleType, path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [(e.name, e.ts, e.dur) for e in load_trace(path).events if e.ph == "X" and e.cat == "kernel"]
    assert [(k.name, k.ts, k.dur) for k in doc.kernels_of(path)] == expected

    # the fallback (whole-file decode) when the streaming path gives up, for an object and a bare event list
    def give_up(*args: object, **kwargs: object) -> None:
        raise trace_lib.FallBack("test")

    monkeypatch.setattr(doc, "stream_events", give_up)
    assert [(k.name, k.ts, k.dur) for k in doc.kernels_of(path)] == expected
    bare = tmp_path / "bare.json"
    with gzip.open(path) as f:
        bare.write_bytes(msgspec.json.encode(msgspec.json.decode(f.read())["traceEvents"]))
    assert [(k.name, k.ts, k.dur) for k in doc.kernels_of(bare)] == expected


def test_the_documented_split_decode(doc: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import magpie_trace.columns as columns

    plain = tmp_path / "h100.json"
    with gzip.open(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "rb") as f:
        plain.write_bytes(f.read())
    one = doc.kernel_table(str(plain), workers=1)
    monkeypatch.setattr(columns, "SPLIT_MIN_BYTES", 0)  # split even this small file, on real threads
    assert columns.part_count(plain, 2) == 2
    two = doc.kernel_table(str(plain), workers=2)
    assert two.num_events == one.num_events
    for group, cols in one.groups.items():
        for col, values in cols.items():
            a, b = values, two.groups[group][col]
            if col in ("name",):
                assert [one.names[i] for i in a.tolist()] == [two.names[i] for i in b.tolist()], (group, col)
            elif col in ("tid", "dev", "dims", "cat"):
                continue  # interned ids: equal values checked through the names above
            else:
                assert a.tolist() == b.tolist(), (group, col)
