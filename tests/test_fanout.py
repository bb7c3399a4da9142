"""magpie_core.fanout: tasks over real processes, the caller included; failures stay with their task."""

from __future__ import annotations

import os
import signal

import pytest

from magpie_core.fanout import WorkerDied, assign, run_tasks, start_method


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def _fail(x: int) -> int:
    raise ValueError(f"bad {x}")


def _die(x: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_assign_largest_first_to_least_loaded() -> None:
    assert assign([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
    assert assign([1, 1, 1, 1], 2) == [[0, 2], [1, 3]]
    assert assign([1, 1], 3) == [[0], [1], []]


def test_results_in_task_order_and_the_caller_works_too() -> None:
    tasks = [(_pid_and_square, (i,)) for i in range(6)]
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
    # weights put the killer alone in the child; the caller's task still returns
    results = run_tasks([(_pid_and_square, (5,)), (_die, (1,))], workers=2, weights=[2.0, 1.0])
    assert results[0] == (os.getpid(), 25)
    assert isinstance(results[1], WorkerDied) and "exit code -9" in str(results[1])
