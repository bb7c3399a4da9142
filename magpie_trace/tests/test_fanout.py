"""magpie_trace.fanout: tasks over real processes, the caller included; failures stay with their task."""

from __future__ import annotations

import os
import signal
import time

import pytest
from magpie_trace.fanout import WorkerDied, run_tasks, start_method


def _meet(parent: int, folder: str) -> None:
    """Hold the task until the other process (caller or child) has taken one too: tests that need both to
    work cannot rely on a child starting within a fixed sleep (a loaded machine ran every task in the caller)."""
    mine, other = ("caller", "child") if os.getpid() == parent else ("child", "caller")
    open(os.path.join(folder, mine), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(folder, other)) and time.monotonic() < deadline:
        time.sleep(0.01)


def _pid_and_square(x: int, meet: tuple[int, str] | None = None) -> tuple[int, int]:
    if meet:
        _meet(*meet)
    time.sleep(0.05)
    return os.getpid(), x * x


def _sleep_pid(seconds: float, meet: tuple[int, str] | None = None) -> int:
    if meet:
        _meet(*meet)
    time.sleep(seconds)
    return os.getpid()


def _fail(x: int) -> int:
    raise ValueError(f"bad {x}")


def _die_in_child(parent: int) -> int:
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.5)  # the caller holds its task while the child takes (and dies on) the other
    return parent


def test_results_in_task_order_and_the_caller_works_too(tmp_path) -> None:
    tasks = [(_pid_and_square, (i, (os.getpid(), str(tmp_path)))) for i in range(6)]
    results = run_tasks(tasks, workers=2)
    assert [r[1] for r in results] == [i * i for i in range(6)]
    pids = {r[0] for r in results}
    assert os.getpid() in pids and len(pids) == 2


def test_one_worker_runs_everything_here() -> None:
    results = run_tasks([(_pid_and_square, (3,))], workers=4)
    assert results == [(os.getpid(), 9)]


def test_an_exception_is_that_tasks_result() -> None:
    results = run_tasks([(_pid_and_square, (2,)), (_fail, (7,)), (_pid_and_square, (4,))], workers=2)
    assert results[0][1] == 4 and results[2][1] == 16
    assert isinstance(results[1], ValueError) and "bad 7" in str(results[1])


@pytest.mark.skipif(start_method() != "fork", reason="needs a forked child to kill")
def test_a_dying_child_fails_only_its_tasks() -> None:
    me = os.getpid()
    results = run_tasks([(_die_in_child, (me,)), (_die_in_child, (me,))], workers=2)
    assert me in results
    died = [r for r in results if isinstance(r, WorkerDied)]
    assert len(died) == 1 and "exit code -9" in str(died[0])


def test_a_busy_worker_takes_fewer_tasks(tmp_path) -> None:
    """Tasks go to whichever process is free: the short ones all run beside the long one."""
    meet = (os.getpid(), str(tmp_path))
    tasks = [(_pid_and_square, (i, meet)) for i in range(8)] + [(_sleep_pid, (3.0, meet))]
    results = run_tasks(tasks, workers=2, weights=[1.0] * 8 + [10.0])
    assert [r[1] for r in results[:8]] == [i * i for i in range(8)]
    assert all(r[0] != results[8] for r in results[:8])


def _big(x: int, meet: tuple[int, str]) -> tuple[int, bytes]:
    _meet(*meet)
    time.sleep(0.05)
    return os.getpid(), bytes([x]) * (3 << 20)


def test_large_results_come_back_through_files_that_are_then_removed(tmp_path, monkeypatch) -> None:
    """A child's large result travels through a file (the pipe needs the caller's GIL for every read), which
    the caller reads and deletes, with the folder it made for them (that folder alone: other runs of the suite share
    the temporary directory, and their folders come and go meanwhile)."""
    import tempfile

    made: list[str] = []
    mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(mkdtemp(*a, **k)) or made[-1])
    results = run_tasks([(_big, (i, (os.getpid(), str(tmp_path)))) for i in range(6)], workers=2)
    assert [r[1] == bytes([i]) * (3 << 20) for i, r in enumerate(results)] == [True] * 6
    assert len({r[0] for r in results}) == 2  # the child returned some of them
    assert [os.path.basename(p)[:13] for p in made] == ["magpie-tasks-"] and not os.path.exists(made[0])


def _unpicklable(parent: int, folder: str) -> object:
    # each process holds its task until the other has taken one (fixed sleeps lost the race on a loaded
    # machine: one process ran both tasks), then the child answers with what it cannot send
    mine, other = ("caller", "child") if os.getpid() == parent else ("child", "caller")
    open(os.path.join(folder, mine), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(folder, other)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return parent if mine == "caller" else (lambda: None)


def test_a_result_the_child_cannot_send_fails_only_its_task(tmp_path) -> None:
    me = os.getpid()
    results = run_tasks([(_unpicklable, (me, str(tmp_path))), (_unpicklable, (me, str(tmp_path)))], workers=2)
    assert me in results
    errors = [r for r in results if isinstance(r, RuntimeError)]
    assert len(errors) == 1 and "cannot be sent back" in str(errors[0])
