"""Gap analysis over streamed columns: the same analysis as over the decoded event list, whatever the chunking
or the split into byte-range parts (the streaming decoder itself is tested in tests/test_trace_columns.py)."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from magpie_gap_analysis import analysis
from magpie_gap_analysis.analysis import AnalysisOptions, WindowSpec, analyze_file, analyze_table
from magpie_gap_analysis.config import GapAnalysisConfig
from magpie_gap_analysis.pipeline import gap_analysis
from magpie_trace import columns
from magpie_trace.columns import FallBack, category_matcher, merge_tables, stream_table, table_from_loaded
from magpie_trace.loader import load_trace

from tests.conftest import DATA

TRACES = DATA / "traces"
ALL = sorted(TRACES.rglob("*.json.gz"))
OPTIONS = [
    AnalysisOptions(),
    AnalysisOptions(window=WindowSpec(start_pct=25, end_pct=50), min_duration_us=2.0),
    AnalysisOptions(window=WindowSpec(annotation="step*")),
    AnalysisOptions(categories=["cpu", "kernel"], ignore_categories=[]),
]


def _selected(options: AnalysisOptions) -> dict[str, bool]:
    return category_matcher(options.categories, options.ignore_categories)


def _as_json(result: analysis.RankAnalysis) -> str:
    return json.dumps(dataclasses.asdict(result), default=str)


def _reference(path: Path, options: AnalysisOptions) -> str:
    table = table_from_loaded(load_trace(path), _selected(options))
    return _as_json(analyze_table(table, 0, "r", options))


def _variants(tmp_path: Path, src: Path) -> list[Path]:
    """The trace as Kineto writes it (indented), compact, as a bare list, and with keys after the events."""
    raw = gzip.decompress(src.read_bytes())
    data = json.loads(raw)
    out = [tmp_path / "indented.json", tmp_path / "compact.json", tmp_path / "bare.json", tmp_path / "tail.json"]
    out[0].write_bytes(raw)
    out[1].write_text(json.dumps(data))
    out[2].write_text(json.dumps(data["traceEvents"], indent=1))
    rest = {k: v for k, v in data.items() if k != "traceEvents"}
    out[3].write_text(json.dumps({**rest, "traceEvents": data["traceEvents"], "zz": [1, [2]], "x": "]"}))
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_streamed_chunks_and_parts_give_the_same_analysis(path: Path, tmp_path: Path) -> None:
    options = OPTIONS[0]
    ref = _reference(path, options)
    for chunk in (4 << 20, 20_000, 1):  # 1: every event is its own piece
        table = stream_table(path, _selected(options), chunk_bytes=chunk, block_bytes=max(chunk, 65536))
        assert _as_json(analyze_table(table, 0, "r", options)) == ref
    for variant in _variants(tmp_path, path):
        ref_v = _reference(variant, options)
        for n in (1, 2, 3):
            parts = [
                stream_table(variant, _selected(options), part=(i, n), chunk_bytes=30_000, block_bytes=65536)
                for i in range(n)
            ]
            assert _as_json(analyze_table(merge_tables(parts), 0, "r", options)) == ref_v, (variant.name, n)


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "window", "cpu-ranges", "categories"])
def test_analyze_file_matches_the_event_list_analysis(options: AnalysisOptions) -> None:
    for path in ALL:
        assert _as_json(analyze_file(str(path), 0, "r", options)) == _reference(path, options)


def test_boundary_lookalikes_inside_strings_and_nested_objects(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": f"k}}, {{{i}", "pid": 0, "tid": 7, "ts": i * 10.0, "dur": 2.5}
        for i in range(300)
    ]
    for e in events[::7]:
        e["args"] = {"nested": [{"a": 1}, {"b": [{"c": 2}, {"d": 3}]}], "correlation": 1}
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"traceEvents": events}))
    options = AnalysisOptions()
    ref = _reference(p, options)
    assert json.loads(ref)["total_duration_us"] == pytest.approx(300 * 2.5)
    for chunk in (1, 50, 333):
        try:
            table = stream_table(p, _selected(options), chunk_bytes=chunk, block_bytes=4096)
        except FallBack:  # a cut that is not between events is detected, never silently wrong
            continue
        assert _as_json(analyze_table(table, 0, "r", options)) == ref
    for n in (2, 3, 7):
        try:
            parts = [stream_table(p, _selected(options), part=(i, n), chunk_bytes=64) for i in range(n)]
        except FallBack:
            continue
        assert _as_json(analyze_table(merge_tables(parts), 0, "r", options)) == ref
    assert _as_json(analyze_file(str(p), 0, "r", options)) == ref


def test_broken_files_still_name_the_position(tmp_path: Path) -> None:
    good = ",\n".join(json.dumps({"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": 1}) for i in range(5000))
    p = tmp_path / "broken.json"
    p.write_text('{"traceEvents": [\n' + good + ',\n{"ph": "X", "name": oops}\n]}')
    r = analyze_file(str(p), 0, "r", AnalysisOptions())
    assert r.error is not None and "broken JSON" in r.error and "line 5002" in r.error


def test_one_large_plain_file_is_split_across_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = TRACES / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz"
    plain = tmp_path / "rank-0.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    one = gap_analysis(plain, GapAnalysisConfig(), tmp_path / "one", workers=1)
    monkeypatch.setattr(columns, "SPLIT_MIN_BYTES", 1 << 20)
    split = gap_analysis(plain, GapAnalysisConfig(), tmp_path / "two", workers=2)
    assert split.workers == 2 and not split.errors
    assert split.model_dump(
        exclude={
            "elapsed_s",
            "workers",
            "output_dir",
            "csv_path",
            "json_path",
            "full_csv_path",
            "gaps_csv_path",
            "ranks",
        }
    ) == one.model_dump(
        exclude={
            "elapsed_s",
            "workers",
            "output_dir",
            "csv_path",
            "json_path",
            "full_csv_path",
            "gaps_csv_path",
            "ranks",
        }
    )
    assert [d.model_dump() for d in split.ranks[0].devices] == [d.model_dump() for d in one.ranks[0].devices]


def test_a_split_file_is_read_on_threads_of_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One large file, two workers: its byte ranges are read on two threads of this process (no child process), and
    a broken part means the whole file is read again, which reports the error as with one worker."""
    import threading

    from magpie_trace import fanout

    src = TRACES / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz"
    plain = tmp_path / "rank-0.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    monkeypatch.setattr(columns, "SPLIT_MIN_BYTES", 1 << 20)
    threads: set[str] = set()
    real_stream = columns.stream_table

    def seen(*a: object, **k: object) -> columns.EventTable:
        threads.add(threading.current_thread().name)
        return real_stream(*a, **k)  # type: ignore[arg-type]

    real_run = fanout.run_tasks
    monkeypatch.setattr(columns, "stream_table", seen)
    processes: list[int] = []

    def run(tasks: list[fanout.Task], workers: int, weights: list[float] | None = None) -> list[object]:
        processes.append(min(workers, len(tasks)))
        return real_run(tasks, workers, weights)

    monkeypatch.setattr("magpie_gap_analysis.pipeline.run_tasks", run)
    r = gap_analysis(plain, GapAnalysisConfig(), tmp_path / "two", workers=2)
    assert not r.errors and r.workers == 2 and len(threads) == 2 and processes == [1]  # this one

    data = plain.read_bytes()
    cut = data.index(b'"ph"', len(data) * 3 // 4)
    plain.write_bytes(data[:cut] + b'"ph": oops, ' + data[cut:])
    one = gap_analysis(plain, GapAnalysisConfig(), tmp_path / "b1", workers=1)
    two = gap_analysis(plain, GapAnalysisConfig(), tmp_path / "b2", workers=2)
    assert one.errors and one.errors == two.errors and "broken JSON" in one.errors[0]
