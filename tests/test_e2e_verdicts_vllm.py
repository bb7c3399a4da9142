"""End-to-end verdicts against a real vLLM CPU server (tiny Llama): A/A, a real regression, a changed workload.

Needs ``.venv-vllm`` (scripts/setup_vllm_cpu.sh, or MAGPIE_VLLM_PYTHON). The default server and the A/A
runs are shared with the loop test (root conftest); one more server runs with ``--max-num-seqs 1``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.vllm_cpu import benchmark_block, run_benchmark_cli, run_interleaved_cli, running_vllm

pytestmark = pytest.mark.slow


def _compare(base: Path, new: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "magpie_core", "benchmark", "--compare", str(base), str(new), "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def _verdicts(result: dict) -> dict[str, str]:
    return {m["metric"]: m["verdict"] for m in result["metrics"]}


def test_aa_is_within_noise(vllm_aa_reports: list[Path]) -> None:
    a, a2 = vllm_aa_reports
    data = json.loads(a.read_text())
    assert data["repeats"] == 5 and len(data["points"][0]["repeats"]) == 5
    assert data["repeat_stats"]["output_throughput"]["n"] == 5
    assert [r["round"] for r in data["points"][0]["repeats"]] == [0, 1, 2, 3, 4]
    fp = data["fingerprint"]
    assert fp["system"]["engine_version"] not in (None, "unknown")  # from the server's /version
    assert fp["workload"]["tokenizer"]["loaded"] is True
    code, result = _compare(a, a2)
    assert code == 0 and result["comparable"] and not result["workload_differences"]
    # the noise was measured by the interleaved rounds, not assumed
    assert result["noise"] == "interleaved" and result["rounds"] == 5
    verdicts = _verdicts(result)
    assert {"request_throughput", "output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_e2el_ms"} <= set(verdicts)
    assert set(verdicts.values()) == {"WITHIN NOISE"}, result["metrics"]


def test_max_num_seqs_1_regresses_throughput(vllm_server, tiny_llama_model: Path, tmp_path: Path) -> None:
    # concurrency 32: batching is what --max-num-seqs 1 takes away (about 3-5x throughput here); 32 requests.
    # Interleaved rounds, each side against its own server: the machine's load moving between rounds hits both
    # sides of a round alike, and the rounds' spread is the noise the verdict's interval is built on
    block = benchmark_block(tiny_llama_model, run_mode="external")
    block["envs"] = {**block["envs"], "CONC": 32, "NUM_PROMPTS": 32}
    with running_vllm(tiny_llama_model, tmp_path, ["--max-num-seqs", "1"]) as one_seq_url:
        default, one_seq = run_interleaved_cli(
            {**block, "base_url": vllm_server.url}, {**block, "base_url": one_seq_url}, tmp_path, "--repeats", "6"
        )
    code, result = _compare(default, one_seq)
    assert code == 0 and result["comparable"], result["reasons"]
    assert result["noise"] == "interleaved" and result["rounds"] == 6
    verdicts = _verdicts(result)
    assert verdicts["request_throughput"] == "REGRESSED" and verdicts["output_throughput"] == "REGRESSED", result
    assert result["verdict"] == "REGRESSED"


def test_changed_input_length_is_not_comparable(
    vllm_server: str, vllm_aa_reports: list[Path], tiny_llama_model: Path, tmp_path: Path
) -> None:
    block = benchmark_block(tiny_llama_model, run_mode="external", base_url=vllm_server.url)
    block["envs"] = {**block["envs"], "ISL": 96}
    longer = run_benchmark_cli(block, tmp_path / "isl96")
    code, result = _compare(vllm_aa_reports[0], longer)
    assert code == 1 and result["verdict"] == "NOT COMPARABLE"
    assert set(_verdicts(result).values()) == {"NOT COMPARABLE"}
    fields = json.dumps(result["workload_differences"])
    assert "workload.load.points[0].input_len" in fields
    code, forced = _compare(vllm_aa_reports[0], longer, "--allow-different-workload")
    assert code == 0 and forced["allowed_different_workload"] is True
    assert forced["reasons"] and forced["reasons"][0].startswith("compared anyway (--allow-different-workload)")
