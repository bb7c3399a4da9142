"""Jobs against an untrusted client (issue 31): per-session quotas and fair dispatch, a scrubbed job
environment (the bearer token never reaches kernel code), and limits on what a job saves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from magpie_mcp.jobs import Job, JobLimits, JobManager, job_environment
from magpie_mcp.testing import echo_runner, environment_runner

TOKEN_VAR = "MAGPIE_TEST_MCP_TOKEN"


def test_one_session_cannot_lock_out_another(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    limits = JobLimits(max_concurrent=2, max_queued=8, max_session_running=1, max_session_queued=1)
    manager = JobManager(tmp_path / "jobs", tmp_path, limits)
    try:
        first = manager.start("echo", {"sleep_s": 30}, echo_runner, owner="http:a")
        waiting = manager.start("echo", {"sleep_s": 30}, echo_runner, owner="http:a")
        with pytest.raises(ValueError, match="too many jobs in this session: 1 running and 1 waiting"):
            manager.start("echo", {}, echo_runner, owner="http:a")
        # a's second job waits for a's own slot; b gets the free one at once
        other = manager.start("echo", {}, echo_runner, owner="http:b")
        assert (first.state, waiting.state, other.state) == ("running", "queued", "running")
        assert other.done.wait(60) and other.state == "succeeded", other.error
    finally:
        manager.shutdown()


def test_job_processes_get_a_scrubbed_environment(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(TOKEN_VAR, "s3cret-token-for-tests-0123456789")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-kernels")
    monkeypatch.setenv("OPERATOR_EXTRA", "kept")
    manager = JobManager(tmp_path / "jobs", tmp_path, keep_env=["OPERATOR_*"], secret_env=[TOKEN_VAR])
    try:
        job = manager.start("env", {}, environment_runner)
        assert job.done.wait(60) and job.state == "succeeded", job.error
    finally:
        manager.shutdown()
    seen = set(job.result["env"])  # type: ignore[index]
    assert TOKEN_VAR not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert {"PATH", "OPERATOR_EXTRA"} <= seen
    # the token is dropped even when the operator's patterns would keep it
    assert job_environment({TOKEN_VAR: "x", "MAGPIE_A": "y"}, ["MAGPIE_*"], [TOKEN_VAR]) == {"MAGPIE_A": "y"}


def test_oversized_job_arguments_and_reports_are_refused(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manager = JobManager(tmp_path / "jobs", tmp_path, JobLimits(max_result_bytes=1024))
    try:
        with pytest.raises(ValueError, match="more than 4194304 allowed"):
            manager.start("echo", {"blob": "x" * 5 * 2**20}, echo_runner)
        job = manager.start("echo", {"blob": "x" * 4096}, echo_runner)
        assert job.done.wait(60) and job.state == "failed"
        assert "larger than this server keeps (mcp.max_result_bytes=1024)" in str(job.error)
    finally:
        manager.shutdown()


def test_a_job_id_is_never_read_as_a_number(tmp_path: Path):
    """The MCP Inspector's CLI reads ``--tool-arg job_id=...`` as JSON when it can: an id like 1234e5678901 reached
    the server as infinity (a fresh clone's run of test_mcp_inspector_cli, about 1 run in 100)."""
    for _ in range(2000):
        job_id = Job("echo", tmp_path).id
        with pytest.raises(ValueError):
            json.loads(job_id)
