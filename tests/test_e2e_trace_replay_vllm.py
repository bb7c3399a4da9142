"""Trace replay end to end: ``magpie benchmark`` starts a real vLLM CPU server (tiny Llama) with prefix caching
on and replays the tiny Mooncake trace in tests/data/replay (two two-turn agent sessions and two single
requests, all sharing hash-id blocks); the server's own counters must show prefix cache hits, and its prompt
token counts must be the trace's (the prompts are built in the tiny Llama's tokens: its tokenizer is local).

Needs ``.venv-vllm`` (scripts/setup_vllm_cpu.sh, or MAGPIE_VLLM_PYTHON).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.vllm_cpu import SERVER_ARGS, benchmark_block, run_benchmark_cli

from .conftest import DATA

pytestmark = pytest.mark.slow

TRACE = DATA / "replay" / "agentx_tiny_mooncake.jsonl"


def test_agentx_trace_replay_hits_the_prefix_cache(tiny_llama_model: Path, tmp_path: Path) -> None:
    block = benchmark_block(tiny_llama_model)
    block["server_args"] = [a for a in SERVER_ARGS if a != "--no-enable-prefix-caching"] + ["--enable-prefix-caching"]
    block["agentx"] = {"enabled": True, "concurrency": 4}  # AMD Magpie's key: replay with 4 sessions in flight
    block["dataset"] = {"path": str(TRACE)}
    block["load"] = {**block["load"], "trace": {"block_size": 64, "time_scale": 0.5}}
    report_path = run_benchmark_cli(block, tmp_path / "replay")
    report = json.loads(report_path.read_text())
    print(json.dumps(report["points"][0]["trace"], indent=1))  # the measured numbers, for -s runs
    point = report["points"][0]
    assert point["concurrency"] == 4 and point["metrics"]["completed"] == 6, point["metrics"]
    trace = point["trace"]
    assert trace["sessions"] == 4 and trace["completed_sessions"] == 4 and trace["turns"] == 6
    assert [t["turn"] for t in trace["per_turn"]] == [0, 1]
    # the second turns carry the first turn's prompt and answer: the server counted the longer context
    assert trace["per_turn"][1]["mean_prompt_tokens"] > trace["per_turn"][0]["mean_prompt_tokens"]
    # token-exact prompts: a first turn is exactly its input_length on the server; a later turn adds the
    # earlier answer re-tokenized and the newline joins, a few tokens of drift
    assert trace["prompt_synthesis"] == "tokens" and "warning" not in trace
    first = trace["per_turn"][0]
    assert first["mean_prompt_tokens"] == first["mean_trace_prompt_tokens"] == (160 + 160 + 140 + 150) / 4
    match = trace["prompt_tokens"]
    assert match["compared"] == 6 and match["max_rel_error"] < 0.1, match
    cache = point["prefix_cache"]
    assert cache["query_tokens"] > 0 and cache["hit_tokens"] > 0, cache
    assert 0 < cache["hit_rate"] <= 1
