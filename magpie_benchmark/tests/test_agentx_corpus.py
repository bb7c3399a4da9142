"""AgentX: InferenceX's agentic-coding trace, fetched on first use, cached, checksummed, replayed.

Offline: the corpus is a small file in the real Weka format (``tests/data/replay/agentx_tiny_weka.jsonl``),
served through a ``file://`` URL or put where the cache keeps the real Hugging Face URL's file, and read
by the real loading code (``load_benchmark_config`` -> ``trace_problem`` / ``make_trace``).
"""

from __future__ import annotations

import hashlib
import shutil
import socket
from pathlib import Path

import pytest
from magpie_benchmark.loadgen import LoadSpec, run_load
from magpie_benchmark.loadgen import agentx_corpus as corpus
from magpie_benchmark.loadgen.datasets import DatasetError
from magpie_benchmark.loadgen.fake_server import FakeSettings, in_thread
from magpie_benchmark.loadgen.traces import TraceReplay, read_trace
from magpie_benchmark.run_config import load_benchmark_config
from magpie_benchmark.workload import make_trace, plan_points, trace_problem

from tests.conftest import DATA

WEKA = DATA / "replay" / "agentx_tiny_weka.jsonl"
AGENTX_YAML = DATA / "magpie_configs" / "benchmarks" / "benchmark_sglang_deepseek_v4_pro_fp4_mi355x_agentx.yaml"
WEKA_SHA = hashlib.sha256(WEKA.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MAGPIE_TRACE_CACHE", str(cache))
    return cache


def test_weka_reader_sessions_subagents_timing_and_whole_prompts() -> None:
    sessions = {s.session_id: s for s in read_trace(WEKA, time_scale=2.0)}
    assert set(sessions) == {"trace-a", "trace-a::sa:agent_001", "trace-b"}
    main = sessions["trace-a"]
    assert all(s.full_prompts for s in sessions.values())
    assert [t.input_len for t in main.turns] == [130, 200] and [t.output_len for t in main.turns] == [6, 6]
    # due at t (scaled), and not before the recorded idle gap t - (t_prev + api_time_prev) after the answer
    assert main.turns[1].at_s == pytest.approx(0.2) and main.turns[1].delay_s == pytest.approx(0.16)
    assert sessions["trace-a::sa:agent_001"].turns[0].at_s == pytest.approx(0.12)
    # whole prompts of `in` words (no tokenizer); the blocks are the trace's 64 tokens
    assert len(main.turns[1].text.split()) == 200
    first, second = main.turns[0].text.split(), main.turns[1].text.split()
    assert first == second[:130]  # blocks 1, 2 and the start of 3: the next request's prefix
    # hash_id_scope local: the same ids in another trace are other blocks
    assert sessions["trace-b"].turns[0].text.split()[:64] != first[:64]


def test_download_on_first_use_then_the_cache_alone(tmp_path: Path, trace_cache: Path) -> None:
    source = tmp_path / "remote" / "traces.jsonl"
    source.parent.mkdir()
    shutil.copy(WEKA, source)
    got = corpus.fetch(source.as_uri(), corpus.cache_dir(), WEKA_SHA)
    assert got.path.is_file() and trace_cache in got.path.parents and got.sha256 == WEKA_SHA
    source.unlink()  # no "network" any more: the cached copy is used
    again = corpus.fetch(source.as_uri(), corpus.cache_dir())
    assert again.path == got.path and again.sha256 == WEKA_SHA


def test_checksum_mismatch_keeps_nothing(tmp_path: Path, trace_cache: Path) -> None:
    with pytest.raises(DatasetError, match=f"SHA-256 {WEKA_SHA} differs from dataset.sha256 {'0' * 64}"):
        corpus.fetch(WEKA.as_uri(), corpus.cache_dir(), "0" * 64)
    assert not [p for p in trace_cache.rglob("*") if p.is_file()]


def test_offline_names_the_url_and_how_to_give_a_local_copy() -> None:
    with socket.socket() as s:  # a loopback port nobody listens on: the download fails at once
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/traces.jsonl"
    with pytest.raises(DatasetError) as err:
        corpus.fetch(url, corpus.cache_dir(), timeout_s=5)
    assert url in str(err.value) and "dataset.path" in str(err.value) and "MAGPIE_TRACE_CACHE" in str(err.value)


def test_inferencex_corpus_choice() -> None:
    assert corpus.default_loader("deepseek-ai/DeepSeek-V4-Pro-0813") == corpus.LONG_LOADER
    assert corpus.default_loader("Qwen/Qwen3.5-397B") == corpus.CAPPED_LOADER
    assert corpus.loader_url(corpus.LONG_LOADER) == (
        "https://huggingface.co/datasets/semianalysisai/cc-traces-weka-062126/resolve/main/traces.jsonl"
    )
    with pytest.raises(DatasetError, match="WEKA_LOADER_OVERRIDE"):
        corpus.loader_url("nope")


def test_amd_agentx_config_replays_the_cached_corpus(trace_cache: Path) -> None:
    """AMD Magpie's own AgentX config, with the corpus already in the cache (as after a first download)."""
    url = corpus.loader_url(corpus.default_loader("deepseek-ai/DeepSeek-V4-Pro-0813"))
    cached = corpus.cached_path(url, trace_cache)
    cached.parent.mkdir(parents=True)
    shutil.copy(WEKA, cached)
    config = load_benchmark_config(AGENTX_YAML)
    assert trace_problem(config) is None
    trace = make_trace(config, plan_points(config)[0])
    assert trace.source == {"url": url, "loader": corpus.LONG_LOADER, "cached_path": str(cached), "sha256": WEKA_SHA}
    assert len(trace.sessions) == 3


def test_config_sha256_pin_is_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "agentx.yaml"
    text = AGENTX_YAML.read_text() + f"  dataset:\n    url: {WEKA.as_uri()}\n    sha256: '{'1' * 64}'\n"
    cfg.write_text(text)
    problem = trace_problem(load_benchmark_config(cfg))
    assert problem and "differs from dataset.sha256" in problem
    cfg.write_text(text.replace("1" * 64, WEKA_SHA))
    assert trace_problem(load_benchmark_config(cfg)) is None


def test_whole_prompts_are_sent_alone() -> None:
    settings = FakeSettings(ttft_ms=2, itl_ms=1)
    with in_thread(settings) as url:
        sessions = read_trace(WEKA, time_scale=0.1)
        spec = LoadSpec(base_url=url, model="fake-model", requests=[], endpoint="chat", trace=TraceReplay(sessions))
        load = run_load(spec)
    assert len(load.results) == 5 and all(r.success for r in load.results), [r.error for r in load.results]
    # the server saw each turn's own `in` words: no earlier turns or answers were appended
    assert sorted(r.prompt_len for r in load.results) == [70, 100, 130, 150, 200]
