"""A warm job process for the next kernel job: after an analyze/compare job, the server keeps one job process
with magpie imported and the kernel backends' fork server started (torch and the harness), and hands it the next
kernel job; none for other kinds, none when the operator turns it off, none left behind at shutdown."""

from __future__ import annotations

import time
from pathlib import Path

from magpie_mcp.jobs import JobLimits, JobManager
from magpie_mcp.testing import process_runner


def _run(manager: JobManager, kind: str) -> dict:
    job = manager.start(kind, {}, process_runner)
    assert job.done.wait(120) and job.state == "succeeded", job.error
    return {"job": job, **job.result}  # type: ignore[dict-item]


def _alive(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_the_next_kernel_job_runs_in_the_warm_process(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    manager = JobManager(tmp_path / "jobs", tmp_path)
    try:
        first = _run(manager, "compare")
        assert not first["fork_server"]  # a cold job process: nothing started before the job
        spare = manager._spare
        assert spare is not None and spare.poll() is None  # started once the kernel job ended
        second = _run(manager, "compare")
        assert second["pid"] == spare.pid and second["fork_server"]  # the spare ran it, its fork server up
        assert "started in a warm job process" in second["job"].messages
        # the job's stderr went to the job's own log, not the spare's
        assert "process_runner on stderr" in second["job"].log_path.read_text()
        third = _run(manager, "benchmark")  # not a kernel job: a process of its own, and no new spare for it
        assert third["pid"] != manager._spare.pid  # type: ignore[union-attr]
        waiting = manager._spare
        assert waiting is not None
        children = _children_soon(waiting.pid)  # its fork server
        assert children, "the spare started no fork server"
    finally:
        manager.shutdown()
    assert waiting.wait(10) is not None  # stopped with the server, its fork server too
    for pid in children:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)


def _children_soon(pid: int) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
        if found:
            return found
        time.sleep(0.1)
    return []


def test_the_operator_can_turn_the_warm_process_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    manager = JobManager(tmp_path / "jobs", tmp_path, JobLimits(warm_job_process=False))
    try:
        first, second = _run(manager, "compare"), _run(manager, "compare")
        assert manager._spare is None and first["pid"] != second["pid"] and not second["fork_server"]
    finally:
        manager.shutdown()
