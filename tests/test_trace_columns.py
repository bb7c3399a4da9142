"""Streaming columnar decoding: same analysis as the decoded event list, whatever the chunking or split."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from magpie_core.config.benchmark import GapAnalysisConfig
from magpie_core.pipelines.gap import gap_analysis
from magpie_core.trace import analysis
from magpie_core.trace.analysis import AnalysisOptions, WindowSpec, analyze_file, analyze_table
from magpie_core.trace.columns import FallBack, merge_tables, stream_table, table_from_loaded
from magpie_core.trace.loader import load_trace

TRACES = Path(__file__).parent / "data" / "traces"
ALL = sorted(TRACES.rglob("*.json.gz"))
OPTIONS = [
    AnalysisOptions(),
    AnalysisOptions(window=WindowSpec(start_pct=25, end_pct=50), min_duration_us=2.0),
    AnalysisOptions(window=WindowSpec(annotation="step*")),
    AnalysisOptions(categories=["cpu", "kernel"], ignore_categories=[]),
]


def _selected(options: AnalysisOptions) -> dict[str, bool]:
    return analysis._cat_matcher(options.categories, options.ignore_categories)


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
    monkeypatch.setattr(analysis, "SPLIT_MIN_BYTES", 1 << 20)
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


def test_every_cut_count_yields_each_event_once(tmp_path: Path) -> None:
    """Parts meet exactly at event boundaries whatever the cut points (a regression: later parts were
    offset by the two bytes read ahead for the gzip check, which lost an event when a boundary lay
    within two bytes of a cut)."""
    from magpie_core.trace.columns import stream_events

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
    from magpie_core.trace.columns import stream_events

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
    from magpie_core.trace.columns import stream_events

    skip = ("python_function", "cpu_instant_event")
    whole: list[object] = []
    stream_events(path, whole.extend, chunk_bytes=1 << 14)
    some: list[object] = []
    got = stream_events(path, some.extend, chunk_bytes=1 << 14, skip_categories=skip)
    assert len(some) + got.skipped_events == len(whole)
    def key(events: list[object]) -> list[tuple[object, ...]]:  # Raw fields are views of a reused buffer
        return [(e.ph, e.cat, e.name, e.tid, e.ts, e.dur) for e in events if e.cat not in skip]  # type: ignore[attr-defined]

    assert key(some) == key(whole)
