"""The lm-eval quality gate end to end: ``magpie benchmark`` against the real vLLM CPU server (tiny random
Llama), real lm-eval (a subprocess) on the tiny task whose data ships with the plugin's tests.

The tiny Llama has random weights, so its exact_match is whatever it is (0 here): the passing gate asks
for at least 0, the failing one for at least 1.01, which no score reaches. Nothing is mocked.
Needs ``.venv-vllm`` and lm-eval (``make setup`` installs ``plugins/quality_gate[lm-eval]``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.vllm_cpu import benchmark_block

pytestmark = pytest.mark.slow

TASK_DIR = Path(__file__).resolve().parents[1] / "plugins" / "quality_gate" / "tests" / "data" / "tiny_qa"


def _start(block: dict[str, Any], out: Path) -> subprocess.Popen[str]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.yaml").write_text(yaml.safe_dump({"benchmark": block}))
    argv = [sys.executable, "-m", "magpie_core", "benchmark", "-b", str(out / "bench.yaml"), "-o", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}  # nothing may be downloaded
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _report(out: Path) -> dict[str, Any]:
    (path,) = out.glob("benchmark_*/benchmark_report.json")
    return json.loads(path.read_text())


def _gate_block(model: Path, url: str, **envs: Any) -> dict[str, Any]:
    block = benchmark_block(model, run_mode="external", base_url=url)
    block["envs"] = {**block["envs"], "NUM_PROMPTS": 8, **envs}
    return block


def test_passing_and_failing_gates_land_in_the_report_and_the_exit_code(
    vllm_server: Any, tiny_llama_model: Path, tmp_path: Path
) -> None:
    # magpie's own block: a threshold every score meets
    passing = _gate_block(tiny_llama_model, vllm_server.url)
    passing["quality_gate"] = {
        "tasks": ["magpie_tiny_qa"],
        "include_path": str(TASK_DIR),
        "thresholds": {"magpie_tiny_qa": {"exact_match": 0.0}},
        "num_concurrent": 2,
    }
    # AMD Magpie's keys, with a threshold no score meets (completions: the tiny Llama has no chat template)
    failing = _gate_block(
        tiny_llama_model,
        vllm_server.url,
        RUN_EVAL="true",
        MAGPIE_EVAL_TASKS="magpie_tiny_qa",
        EVAL_TASKS_DIR=str(TASK_DIR / "tiny_qa.yaml"),
        MAGPIE_EVAL_POLICY_ID="tiny-qa-v1",
    )
    failing["quality_gate"] = {"endpoint": "completions", "thresholds": {"magpie_tiny_qa": {"exact_match": 1.01}}}
    procs = [_start(passing, tmp_path / "pass"), _start(failing, tmp_path / "fail")]  # together: half the wait
    outputs = [p.communicate(timeout=900) for p in procs]

    assert procs[0].returncode == 0, outputs[0]
    good = _report(tmp_path / "pass")
    gate = good["checks"]["lm_eval"]
    assert good["success"] is True and not good["errors"]
    assert gate["passed"] is True and gate["status"] == "passed" and gate["exit_code"] == 0
    task = gate["tasks"]["magpie_tiny_qa"]
    assert task["n_samples"] == 4 and task["primary_metric"] == "exact_match,none" and 0 <= task["value"] <= 1
    assert gate["threshold_checks"] == [
        {"task": "magpie_tiny_qa", "metric": "exact_match,none", "min": 0.0, "max": None, "value": task["value"],
         "passed": True, "why": ""}
    ]  # fmt: skip
    workspace = Path(good["workspace_dir"])
    assert (workspace / gate["results_file"]).is_file() and list((workspace / "lm_eval").rglob("samples_*.jsonl"))
    assert "Quality gate (lm-eval)" in (workspace / "report.html").read_text()

    assert procs[1].returncode == 1, outputs[1]
    bad = _report(tmp_path / "fail")
    gate = bad["checks"]["lm_eval"]
    assert bad["success"] is False and gate["passed"] is False and gate["status"] == "failed"
    assert gate["policy_id"] == "tiny-qa-v1" and gate["asked_by"] == "quality_gate"
    assert [e for e in bad["errors"] if e.startswith("check lm_eval failed: magpie_tiny_qa exact_match,none")]
    assert "check lm_eval failed" in outputs[1][0]  # printed with the run's errors
    for report in (good, bad):  # the load was measured and kept either way
        assert report["throughput"]["completed_requests"] == 8 and report["latency"]["ttft"]["mean_ms"] > 0


def _lm_eval_pids(marker: str) -> list[int]:
    """Processes whose command line runs lm_eval with ``marker`` (this test's output folder) in it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "lm_eval" in cmdline and marker in cmdline:
            found.append(int(entry.name))
    return found


def test_ctrl_c_during_the_gate_stops_lm_eval_and_keeps_the_load(
    vllm_server: Any, tiny_llama_model: Path, tmp_path: Path
) -> None:
    block = _gate_block(tiny_llama_model, vllm_server.url)
    block["quality_gate"] = {"tasks": ["magpie_tiny_qa"], "include_path": str(TASK_DIR)}
    out = tmp_path / "interrupted"
    proc = _start(block, out)
    deadline = time.monotonic() + 600
    while not _lm_eval_pids(str(out)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _lm_eval_pids(str(out)), "lm-eval never started"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert not _lm_eval_pids(str(out))  # its whole process group was stopped
    report = _report(out)
    assert report["interrupted"] is True and report["throughput"]["completed_requests"] == 8
