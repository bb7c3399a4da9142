"""AMD Magpie's server_lifecycle: one server kept across runs, reused, stopped only with cleanup.

Real server processes (the fake streaming server, started by the pipeline through a test
framework plugin); records live in a temporary pid_dir.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from magpie_benchmark.loadgen.fake_server import running
from magpie_benchmark.pipeline import run_benchmark
from magpie_benchmark.serving import persistent
from magpie_benchmark.serving.server import free_port

from tests.helpers.fake_framework import FakeFramework, config


def _config(tmp_path: Path, port: int, **lifecycle: Any) -> Any:
    envs = {"CONC": 2, "ISL": 8, "OSL": 4, "NUM_PROMPTS": 2, "PORT": port}
    block = {"enabled": True, "pid_dir": str(tmp_path / "pids"), "server_ready_timeout_s": 60, **lifecycle}
    cfg = config(envs=envs, load={"progress": False}, server_lifecycle=block)
    return cfg.model_copy(update={"port": port})


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if persistent.start_ticks(pid) is None:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def port(tmp_path: Path):
    port = free_port()
    yield port
    for record in (tmp_path / "pids").glob("*.json"):  # never leave a server behind
        rec = persistent.read_record(record)
        if rec and persistent.owns_process(rec):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(rec.pid, signal.SIGKILL)


def test_start_reuse_then_cleanup(tmp_path: Path, port: int) -> None:
    first = run_benchmark(_config(tmp_path, port), tmp_path / "r1", framework_component=FakeFramework())
    info = first.server["persistent"]
    assert first.success and info["reused"] is False and info["left_running"], first.errors
    pid = info["pid"]
    assert persistent.start_ticks(pid) is not None and Path(info["record"]).exists()

    second = run_benchmark(_config(tmp_path, port), tmp_path / "r2", framework_component=FakeFramework())
    assert second.success and second.server["persistent"]["reused"] and second.server["persistent"]["pid"] == pid
    assert second.gpus == {"how": "reused server"} and second.points[0]["metrics"]["completed"] == 2

    other = _config(tmp_path, port).model_copy(update={"model": "another-model"})
    refused = run_benchmark(other, tmp_path / "r3", framework_component=FakeFramework())
    assert not refused.success and "model: server has 'fake-model'" in refused.errors[0]
    assert persistent.start_ticks(pid) is not None  # a refused reuse leaves the server alone

    last = run_benchmark(_config(tmp_path, port, cleanup=True), tmp_path / "r4", framework_component=FakeFramework())
    assert last.success and last.server["persistent"]["stopped"] == "stopped"
    assert _gone(pid) and not Path(info["record"]).exists()


def test_force_reuse_ignores_a_mismatch(tmp_path: Path, port: int) -> None:
    run_benchmark(_config(tmp_path, port), tmp_path / "r1", framework_component=FakeFramework())
    other = _config(tmp_path, port, force_reuse=True, cleanup=True).model_copy(update={"model": "another-model"})
    report = run_benchmark(other, tmp_path / "r2", framework_component=FakeFramework())
    assert report.server["persistent"]["reused"] and report.server["persistent"]["mismatches_ignored"]


def test_a_server_magpie_did_not_start_is_never_adopted(tmp_path: Path) -> None:
    with running(ttft_ms=1, itl_ms=1) as url:
        port = int(url.rsplit(":", 1)[1])
        report = run_benchmark(_config(tmp_path, port), tmp_path / "r", framework_component=FakeFramework())
        assert not report.success and "no record of starting that server" in report.errors[0]
        assert persistent.healthy(url + "/health")  # untouched


def test_profiling_with_a_kept_server_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cleanup: false cannot profile"):
        config(server_lifecycle={"enabled": True}, profiler={"torch_profiler": {"enabled": True}})
    with pytest.raises(ValueError, match="run_mode local or docker"):
        config(server_lifecycle={"enabled": True}, run_mode="external", base_url="http://h:1")
