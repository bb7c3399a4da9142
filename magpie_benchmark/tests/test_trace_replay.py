"""Trace replay: the Mooncake / AIPerf readers, prompt synthesis (prefix sharing checked on the text, and on
the token ids with a real tokenizer: the tiny Llama's BPE, trained here, nothing downloaded), and the session
replay against the fake streaming server (causality and order, never raw timing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from magpie_benchmark.loadgen import LoadSpec, run_load
from magpie_benchmark.loadgen.client import RequestResult
from magpie_benchmark.loadgen.datasets import DatasetError
from magpie_benchmark.loadgen.fake_server import running
from magpie_benchmark.loadgen.replay import prompt_token_match, session_metrics
from magpie_benchmark.loadgen.traces import TokenSynth, TraceReplay, block_words, read_trace, summary, synth_text

from tests.conftest import DATA

MOONCAKE = DATA / "replay" / "agentx_tiny_mooncake.jsonl"
MULTI_TURN = DATA / "replay" / "agentx_tiny_multi_turn.jsonl"


def _common_prefix_words(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split(), b.split(), strict=False):
        if x != y:
            break
        n += 1
    return n


def test_mooncake_reader_groups_sessions_and_scales_time() -> None:
    sessions = read_trace(MOONCAKE, block_size=64, time_scale=0.5)
    assert [s.session_id for s in sessions] == ["agent-a", "agent-b", "line-5", "line-6"]
    a = sessions[0]
    assert len(a.turns) == 2 and a.turns[0].at_s == 0.0 and a.turns[1].delay_s == pytest.approx(0.025)
    assert sessions[1].turns[0].at_s == pytest.approx(0.05)  # 100 ms at time scale 0.5
    assert [t.output_len for s in sessions for t in s.turns] == [8] * 6
    assert all(len(t.text.split()) == t.input_len for s in sessions for t in s.turns)
    info = summary(sessions)
    assert info["sessions"] == 4 and info["turns"] == 6 and info["multi_turn_sessions"] == 2
    assert info["repeated_hash_blocks"] == 5  # 0,1 again; 0 again; 0,1 again


def test_same_hash_ids_give_the_same_text_and_only_that() -> None:
    sessions = read_trace(MOONCAKE, block_size=64)
    a0, b0 = sessions[0].turns[0].text, sessions[1].turns[0].text  # both [0, 1], 160 words
    five, six = sessions[2].turns[0].text, sessions[3].turns[0].text  # [0, 2] and [0, 1, 3]
    assert a0.split()[:128] == b0.split()[:128]
    assert a0 != b0  # the 32 words past the listed blocks are unique to each request
    assert _common_prefix_words(a0, five) >= 64 and _common_prefix_words(a0, five) < 128
    assert six.split()[:128] == a0.split()[:128]
    assert six.split()[:64] == block_words(0, 64)
    # a request without hash ids shares nothing by design
    assert _common_prefix_words(sessions[0].turns[1].text, sessions[1].turns[1].text) < 8


def test_synth_text_cuts_the_last_block_and_pads_uniquely() -> None:
    assert synth_text(10, (5,), 64, 1).split() == block_words(5, 64)[:10]
    long = synth_text(100, (5,), 64, 1).split()
    assert long[:64] == block_words(5, 64) and len(long) == 100
    assert synth_text(100, (5,), 64, 2).split()[64:] != long[64:]


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """The tiny Llama's byte-level BPE tokenizer (the one the vLLM e2e tests serve), loaded as the benchmark
    loads a tokenizer."""
    pytest.importorskip("tokenizers")
    from magpie_benchmark.loadgen.datasets import load_tokenizer

    from tests.helpers.make_tiny_llama import make_tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny_tokenizer")
    make_tiny_tokenizer(folder)
    return load_tokenizer(str(folder))


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_token_prompts_have_the_trace_lengths(tiny_tokenizer, tmp_path: Path) -> None:
    sessions = read_trace(MOONCAKE, block_size=64, tokenizer=tiny_tokenizer)
    for s in sessions:
        for k, turn in enumerate(s.turns):
            # a session's first message opens the prompt: the server adds the BOS to it, counted in input_length
            n = len(tiny_tokenizer.encode(turn.text, add_special_tokens=k == 0))
            assert n == turn.input_len, (s.session_id, k, n, turn.input_len)
    assert [t.input_len for s in sessions for t in s.turns] == [160, 40, 160, 40, 140, 150]
    # the published traces' block size, messages of several blocks and a cut last block
    trace = tmp_path / "big.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 1300, "output_length": 4, "hash_ids": [7, 8, 9]}\n'
        '{"timestamp": 1, "input_length": 2000, "output_length": 4, "hash_ids": [7, 8]}\n'
    )
    big = read_trace(trace, tokenizer=tiny_tokenizer)
    assert [len(tiny_tokenizer.encode(s.turns[0].text)) for s in big] == [1300, 2000]
    # a given text is counted in tokens too
    multi = read_trace(MULTI_TURN, block_size=32, default_output_len=4, tokenizer=tiny_tokenizer)
    fix = multi[0].turns[1]
    assert fix.text == "now fix the failing test"
    assert fix.input_len == len(tiny_tokenizer.encode(fix.text, add_special_tokens=False)) != len(fix.text.split())


def test_same_hash_ids_give_the_same_tokens_and_only_those(tiny_tokenizer) -> None:
    sessions = read_trace(MOONCAKE, block_size=64, tokenizer=tiny_tokenizer)

    def ids(i: int, k: int = 0) -> list[int]:
        return tiny_tokenizer.encode(sessions[i].turns[k].text, add_special_tokens=False)

    a0, b0, five, six = ids(0), ids(1), ids(2), ids(3)  # [0, 1], [0, 1], [0, 2], [0, 1, 3]
    blocks = TokenSynth(tiny_tokenizer, 64)
    # the server's own tokens of a shared block are the block's fixed ids, in every request that lists it
    assert a0[:64] == b0[:64] == five[:64] == six[:64] == blocks.block(0)
    assert a0[64:128] == b0[64:128] == six[64:128] == blocks.block(1)
    assert len(six) == 149 and six[128:] == blocks.block(3)[:21]  # the last block cut to fit (BOS: 150)
    assert _common_prefix(a0, b0) == 128 and a0 != b0  # the 31 tokens past the blocks are unique
    assert _common_prefix(a0, five) == 64
    assert _common_prefix(ids(0, 1), ids(1, 1)) < 8  # no hash ids: nothing shared by design
    # another salt (the next repeat) gives other tokens for the same id
    assert TokenSynth(tiny_tokenizer, 64, salt=1).block(0) != blocks.block(0)


def test_prompt_token_match_compares_server_counts_with_the_trace() -> None:
    rows = [
        RequestResult(success=True, trace_prompt_len=100, server_prompt_len=100),
        RequestResult(success=True, trace_prompt_len=200, server_prompt_len=210),
        RequestResult(success=True, trace_prompt_len=50),  # the server sent no usage counts: not compared
        RequestResult(success=False, trace_prompt_len=50, server_prompt_len=10),  # failed: not compared
    ]
    match = prompt_token_match(rows)
    assert match["compared"] == 2 and match["trace_tokens"] == 300 and match["server_tokens"] == 310
    assert match["mean_rel_error"] == pytest.approx(0.025) and match["max_rel_error"] == pytest.approx(0.05)
    assert prompt_token_match([])["mean_rel_error"] is None


def test_multi_turn_reader() -> None:
    sessions = read_trace(MULTI_TURN, block_size=32, default_output_len=4)
    assert [len(s.turns) for s in sessions] == [2, 3]
    s1, s2 = sessions
    assert s1.turns[1].text == "now fix the failing test" and s1.turns[1].delay_s == pytest.approx(0.04)
    assert s2.turns[0].output_len == 6 and s2.turns[2].output_len == 4 and s2.turns[2].text == "run it\nagain"
    assert s1.turns[0].text.split()[:32] == s2.turns[0].text.split()[:32]
    assert read_trace(MULTI_TURN, fmt="auto", default_output_len=4)[0].turns[0].input_len == 100


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"timestamp": 0, "output_length": 4}', "needs 'input_length'"),
        ('{"timestamp": 0, "input_length": -3, "output_length": 4}', "'input_length' must be a whole number"),
        ('{"timestamp": "soon", "input_length": 3, "output_length": 4}', "'timestamp' must be milliseconds"),
        ('{"input_length": 3, "output_length": 4, "hash_ids": [1, "x"]}', "'hash_ids' must be a list"),
        ('{"input_length": 3}', "missing field 'output_length'"),
        ("[1, 2]", "must be a JSON object"),
        ("{not json", "invalid JSON"),
        ('{"session_id": "s", "turns": []}', "'turns' must be a non-empty list"),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = (
        '{"session_id": "ok", "turns": [{"text": "hi", "output_length": 2}]}'
        if "turns" in line
        else ('{"timestamp": 0, "input_length": 3, "output_length": 2}')
    )
    path.write_text(good + "\n\n" + line + "\n")
    with pytest.raises(DatasetError) as err:
        read_trace(path)
    assert f"{path}:3" in str(err.value) and message in str(err.value)


def test_empty_or_missing_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="no requests"):
        read_trace(empty)
    with pytest.raises(DatasetError, match="cannot read"):
        read_trace(tmp_path / "missing.jsonl")


@pytest.fixture(scope="module")
def fake_url():
    with running(ttft_ms=20, itl_ms=2) as url:
        yield url


def _replay(url: str, path: Path, endpoint: str = "completions", **kw) -> tuple[list, dict]:
    sessions = read_trace(path, block_size=64, default_output_len=4, **kw)
    spec = LoadSpec(
        base_url=url, model="fake-model", requests=[], endpoint=endpoint, trace=TraceReplay(sessions), max_concurrency=8
    )
    load = run_load(spec)
    return load.results, {"sessions": sessions, "load": load}


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_replay_causality_and_growing_context(fake_url: str, endpoint: str) -> None:
    results, info = _replay(fake_url, MOONCAKE, endpoint)
    load, sessions = info["load"], info["sessions"]
    assert len(results) == 6 and all(r.success for r in results), [r.error for r in results]
    start = load.started_at
    by_session: dict[str, list] = {}
    for r in results:
        by_session.setdefault(r.session_id, []).append(r)
    for s in sessions:
        rows = by_session[s.session_id]
        assert [r.turn for r in rows] == list(range(len(s.turns)))
        # never before its timestamp
        assert rows[0].start_time >= start + (s.turns[0].at_s or 0.0)
        for k in range(1, len(rows)):
            prev_end = rows[k - 1].start_time + rows[k - 1].latency
            # turn k waits for turn k-1's answer plus its delay
            assert rows[k].start_time >= prev_end + (s.turns[k].delay_s or 0.0)
            # its prompt held the previous context and answer: the server counted more prompt words
            assert rows[k].prompt_len > rows[k - 1].prompt_len + s.turns[k].input_len - 1
    metrics = session_metrics(results)
    assert metrics["sessions"] == 4 and metrics["completed_sessions"] == 4
    assert [t["turn"] for t in metrics["per_turn"]] == [0, 1]
    assert metrics["per_turn"][1]["requests"] == 2


def test_replay_without_timing_and_concurrency_one(fake_url: str) -> None:
    sessions = read_trace(MULTI_TURN, block_size=64, default_output_len=4)
    spec = LoadSpec(
        base_url=fake_url,
        model="fake-model",
        requests=[],
        trace=TraceReplay(sessions, keep_timing=False),
        max_concurrency=1,
    )
    results = run_load(spec).results
    assert all(r.success for r in results)
    # one session slot: the second session's first turn starts after the first session's last answer
    first = [r for r in results if r.session_id == "s1"]
    second = [r for r in results if r.session_id == "s2"]
    assert second[0].start_time >= first[-1].start_time + first[-1].latency
    assert len(results) == 5


def test_failed_turn_aborts_the_rest_of_its_session(fake_url: str) -> None:
    sessions = read_trace(MULTI_TURN, block_size=64, default_output_len=4)
    spec = LoadSpec(
        base_url=fake_url,
        model="fake-model",
        requests=[],
        trace=TraceReplay(sessions),
        extra_body={"fake_status": 500},
    )
    results = run_load(spec).results
    kinds = [(r.session_id, r.turn, r.error_kind) for r in results]
    assert kinds == [
        ("s1", 0, "http_500"),
        ("s1", 1, "session_aborted"),
        ("s2", 0, "http_500"),
        ("s2", 1, "session_aborted"),
        ("s2", 2, "session_aborted"),
    ]
    assert json.dumps(results[1].as_dict())  # session id and turn are in the saved request rows
    assert results[1].as_dict()["session_id"] == "s1"


class _CountingFramework:
    """The pipeline's fake framework, with the fake server's request counter read as 'prefix cache' counters
    (the fake server has no cache: this checks the before/after plumbing, not a hit rate)."""

    name = "fake"
    metrics_path = "/metrics"

    def prefix_cache_counters(self, metrics_text: str) -> dict[str, float] | None:
        from magpie_benchmark.serving.prometheus import counter_sum

        n = counter_sum(metrics_text, "fake_requests")
        return None if n is None else {"hits": n, "queries": 2 * n}


def test_pipeline_reports_sessions_turns_and_cache_counters(tmp_path: Path) -> None:
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.pipeline import run_benchmark

    from tests.helpers.fake_framework import FakeFramework

    class Framework(_CountingFramework, FakeFramework):
        pass

    cfg = BenchmarkConfig.model_validate(
        {
            "framework": "fake",
            "model": "fake-model",
            "run_mode": "local",
            "run_kind": "measurement",
            "envs": {"CONC": 2, "OSL": 3},
            "dataset": {"name": "trace", "path": str(MULTI_TURN)},
            "load": {"progress": False, "save_requests": True, "warmup_requests": 3, "trace": {"block_size": 16}},
            "repeats": 2,
            "stop_grace_s": 5,
        }
    )
    report = run_benchmark(cfg, tmp_path, framework_component=Framework())
    assert report.success, report.errors
    point = report.points[0]
    assert point["concurrency"] == 2 and point["warmup_requests"] == 0 and point["metrics"]["completed"] == 10
    assert point["trace"]["sessions"] == 2 and point["trace"]["turns"] == 5
    assert point["trace"]["completed_sessions"] == 2 and point["trace"]["time_scale"] == 1.0
    assert point["prefix_cache"]["query_tokens"] == 2 * point["prefix_cache"]["hit_tokens"]
    assert point["prefix_cache"]["hit_tokens"] == 5  # the first repeat's 5 turns (no warm-up was sent)
    assert [r["prefix_cache"]["hit_tokens"] for r in point["repeats"]] == [5, 5]
    assert {(r["session_id"], r["turn"]) for r in point["requests"]} >= {("s1", 0), ("s1", 1), ("s2", 2)}
    # each repeat salts the hash-id texts: its prompts differ, so one repeat's cache cannot serve the next
    digests = [r["prompts"] for r in point["repeats"]]
    assert digests[0]["sha256"] != digests[1]["sha256"]
    # no tokenizer here: word prompts, said in the report; the fake server counts words, the trace tokens
    assert point["trace"]["prompt_synthesis"] == "words" and "--tokenizer" in point["trace"]["warning"]
    match = point["trace"]["prompt_tokens"]
    assert match["compared"] == 5 and match["max_rel_error"] is not None
    assert all(r["trace_prompt_len"] for r in point["requests"])


def test_prometheus_counters_and_the_vllm_plugin_names() -> None:
    from magpie_benchmark.serving.prometheus import counter_sum
    from magpie_vllm.plugin import Vllm

    page = (
        "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
        "# TYPE vllm:prefix_cache_hits_total counter\n"
        'vllm:prefix_cache_hits_total{engine="0",model_name="m a"} 1920.0\n'
        'vllm:prefix_cache_hits_total{engine="1",model_name="m a"} 80.0\n'
        'vllm:prefix_cache_queries_total{engine="0",model_name="m a"} 3495.0\n'
        "vllm:prefix_cache_queries_created 1.7e9\n"
    )
    assert counter_sum(page, "vllm:prefix_cache_hits") == 2000.0
    assert counter_sum(page, "vllm:missing") is None
    assert Vllm().prefix_cache_counters(page) == {"hits": 2000.0, "queries": 3495.0}
    assert Vllm().prefix_cache_counters("vllm:other 1\n") is None
