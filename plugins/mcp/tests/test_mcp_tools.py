"""The kernel, job and benchmark-result tools through a real MCP client session over stdio.

Kernels are small CPU PyTorch functions in tests/data/kernels with tiny timing budgets.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from magpie_mcp.testing import (
    call,
    call_error,
    processes_mentioning,
    run_session,
    write_benchmark_report,
    write_workspace,
)
from mcp import ClientSession

from tests.conftest import DATA

KERNELS = DATA / "kernels"
TINY = {"budget_seconds": 0.5, "min_samples": 5, "warmup_ms": 5, "timeout_seconds": 120, "rounds": 1}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD; allowed roots: this folder and tests/data/kernels."""
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])


def test_create_config_analyze_and_compare(workspace):
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def scenario(s: ClientSession) -> None:
        created = await call(
            s,
            "create_kernel_config",
            {
                "kernels": [
                    {"id": "single", "entry": "costs.py:single_work", "working_dir": str(KERNELS)},
                    {"id": "double", "entry": "costs.py:double_work", "working_dir": str(KERNELS)},
                ],
                "performance": {"budget_seconds": 1, "min_samples": 10, "warmup_ms": 5, "rounds": 1},
                "output_path": str(workspace / "pair.yaml"),
            },
        )
        assert created["kernel_ids"] == ["single", "double"] and Path(created["path"]).is_file()
        assert "exists" in await call_error(
            s, "create_kernel_config", {"kernels": [{"id": "x"}], "output_path": str(workspace / "pair.yaml")}
        )
        typo = {"kernels": [{"id": "x", "entyr": "a"}]}
        assert "kernels.0.entyr" in await call_error(s, "create_kernel_config", typo)

        analyzed = await call(
            s,
            "analyze",
            {
                "kernels": [
                    {"id": "good", "entry": "faulty.py:good", "reference": "faulty.py:reference"},
                    {"id": "wrong", "entry": "faulty.py:wrong_values", "reference": "faulty.py:reference"},
                ],
                "config_dir": str(KERNELS),
                "performance": TINY,
            },
        )
        assert analyzed["job"]["state"] == "succeeded" and analyzed["passed"] is False
        states = {r["kernel_id"]: r["correctness"]["status"] for r in analyzed["report"]["results"]}
        assert states == {"good": "passed", "wrong": "failed"}
        assert Path(analyzed["report_path"]).is_file()

        compared = await call(
            s, "compare", {"kernel_config": created["path"], "min_effect": 0.25}, progress_callback=on_progress
        )
        # a loaded machine may make the timing too noisy to decide: then UNSTABLE, never a wrong verdict
        ranked = compared["report"]["ranking"]
        double = next(e for e in ranked if e["kernel_id"] == "double")
        if double["verdict"] != "UNSTABLE":
            assert [e["kernel_id"] for e in ranked] == ["single", "double"] and double["speedup"] < 1
        assert compared["winner_id"] in ("single", None)

    run_session(workspace, scenario)
    assert progress, "no MCP progress notifications were received"
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)
    assert any("baseline" in (m or "") for _, m in progress)


def test_trust_model_rejects_commands_and_paths_outside_the_roots(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.yaml").write_text("kernel:\n  id: k\n  type: pytorch\n  testcase_command: ./run.sh\n")
    (outside / "run.sh").write_text("#!/bin/sh\ntouch ran\n")

    async def scenario(s: ClientSession) -> None:
        msg = await call_error(s, "analyze", {"kernel_config": str(outside / "k.yaml")})
        assert "outside the allowed workspace roots" in msg and "kernel_config" in msg
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "testcase_command": [str(outside / "run.sh")]}]})
        assert "testcase_command" in msg and "client-supplied commands are refused" in msg
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "working_dir": str(outside)}]})
        assert "working_dir" in msg
        # a command is an argv list: a shell string is rejected by the input schema
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "testcase_command": "sh -c 'touch ran'"}]})
        assert "testcase_command" in msg
        assert "not both" in await call_error(s, "analyze", {})
        assert "no kernel backend named 'nosuch'" in await call_error(
            s, "analyze", {"kernels": [{"id": "k", "type": "nosuch", "entry": "x.py:f"}], "config_dir": str(KERNELS)}
        )
        assert "outside the allowed workspace roots" in await call_error(s, "get_benchmark_result", {"path": "/"})

    run_session(workspace, scenario)
    assert not (outside / "ran").exists()


def test_jobs_status_result_and_cancel(workspace):
    async def scenario(s: ClientSession) -> None:
        started = await call(
            s,
            "analyze",
            {
                "kernels": [{"id": "quick", "entry": "faulty.py:good", "reference": "faulty.py:reference"}],
                "config_dir": str(KERNELS),
                "measure_performance": False,
                "wait": False,
            },
        )
        job_id = started["job"]["job_id"]
        assert started["job"]["state"] == "running" and started["report"] is None
        status = await call(s, "job_status", {"job_id": job_id})
        assert status["job_id"] == job_id
        done = await call(s, "job_result", {"job_id": job_id, "wait_s": 120})
        assert done["job"]["state"] == "succeeded"
        assert done["report"]["results"][0]["correctness"]["status"] == "passed"

        hanging = await call(
            s,
            "analyze",
            {
                "kernels": [{"id": "hangs", "entry": "faulty.py:hangs", "reference": "faulty.py:reference"}],
                "config_dir": str(KERNELS),
                "output_dir": str(workspace / "hang_runs"),
                "wait": False,
            },
        )
        hang_id = hanging["job"]["job_id"]
        deadline = time.monotonic() + 60
        while not processes_mentioning(str(workspace / "hang_runs")) and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        assert processes_mentioning(str(workspace / "hang_runs")), "the kernel worker never started"
        cancelled = await call(s, "job_cancel", {"job_id": hang_id})
        assert cancelled["state"] == "cancelled"
        assert "cancelled" in await call_error(s, "job_result", {"job_id": hang_id})
        listed = await call(s, "job_list")
        assert {j["job_id"]: j["state"] for j in listed["jobs"]} == {job_id: "succeeded", hang_id: "cancelled"}
        assert "no job 'nope'" in await call_error(s, "job_status", {"job_id": "nope"})

    run_session(workspace, scenario)
    # the cancelled job's worker (started in its own session) was stopped too
    assert processes_mentioning(str(workspace / "hang_runs")) == []


def test_benchmark_result_tools(workspace):
    results = workspace / "results"
    a = write_benchmark_report(results / "benchmark_vllm_20250101_000000", "vllm", 2.0, 100.0, [("gemm_a", 60.0)])
    b = write_benchmark_report(results / "benchmark_vllm_20250102_000000", "vllm", 3.0, 80.0, [("gemm_a", 40.0)])
    os.utime(a, (1, 1))

    async def scenario(s: ClientSession) -> None:
        listed = await call(s, "list_benchmark_results")
        assert [Path(r["path"]) for r in listed["runs"]] == [b, a]  # newest first
        assert listed["runs"][0]["request_throughput"] == 3.0 and listed["runs"][0]["mean_ttft_ms"] == 80.0

        detail = await call(s, "get_benchmark_result", {"path": str(b.parent), "sections": ["latency"]})
        assert list(detail["report"]) == ["latency"] and detail["summary"]["framework"] == "vllm"
        missing = {"path": str(b), "sections": ["nope"]}
        assert "no section(s) nope" in await call_error(s, "get_benchmark_result", missing)

    run_session(workspace, scenario)
