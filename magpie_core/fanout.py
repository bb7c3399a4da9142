"""CPU-bound tasks spread over processes, the calling process included.

Trace decoding is pure Python/C work that threads cannot share, so tasks run
in worker processes. Two choices keep the fan-out cheap enough to pay off on a
2-core machine:

- the caller works too: with ``workers=2`` one child is started and the parent
  runs its own share meanwhile, instead of idling while two children work;
- children are forked where that is safe (Linux, and the caller has no other
  thread yet), so they start in milliseconds with every module already
  imported. A spawned child re-imports the caller's ``__main__`` (for the
  ``magpie`` CLI: all of it), which cost 0.3-0.5 s per child here. Elsewhere,
  or from a threaded caller such as the MCP server, children are spawned.

Tasks are handed out one at a time from a shared counter, largest first
(``weights``: file sizes, say), to whichever process is free, this one
included: a process slowed by anything else running on the machine simply
takes fewer tasks, so a file split into a few more parts than there are
workers finishes on all of them at about the same time. A task's exception
is its result, and a child that dies (killed for memory, a segfault) fails
only the task it was running, as a :class:`WorkerDied` result.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

Task = tuple[Callable[..., Any], tuple[Any, ...]]


class WorkerDied(RuntimeError):
    """The worker process running a task ended before returning its result."""


def _call(task: Task) -> Any:
    fn, args = task
    try:
        return fn(*args)
    except Exception as exc:  # one task's failure is its result, not the run's
        return exc


def _next(counter: Any, order: Sequence[int]) -> int | None:
    with counter.get_lock():
        k = counter.value
        counter.value = k + 1
    return order[k] if k < len(order) else None


def _child(conn: Any, tasks: Sequence[Task], counter: Any, order: Sequence[int]) -> None:
    while (index := _next(counter, order)) is not None:
        conn.send(("start", index))
        conn.send(("done", index, _call(tasks[index])))
    conn.close()


def start_method() -> str:
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


def run_tasks(tasks: Sequence[Task], workers: int, weights: Sequence[float] | None = None) -> list[Any]:
    """``fn(*args)`` for every task, on up to ``workers`` processes including this one; results in task order.

    With ``spawn`` (see :func:`start_method`) functions and arguments must be importable/picklable;
    results must always be picklable.
    """
    workers = max(1, min(workers, len(tasks)))
    if workers == 1:
        return [_call(t) for t in tasks]
    w = weights if weights is not None else [1.0] * len(tasks)
    order = sorted(range(len(tasks)), key=lambda i: -w[i])
    ctx = multiprocessing.get_context(start_method())
    counter = ctx.Value("i", 0)
    results: list[Any] = [None] * len(tasks)
    children = []
    for _ in range(workers - 1):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, tasks, counter, order), daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv))
    # drain each child's pipe as results come, so a child never waits on this process to read
    readers = [threading.Thread(target=_collect, args=(c, results), daemon=True) for c in children]
    for t in readers:
        t.start()
    while (index := _next(counter, order)) is not None:
        results[index] = _call(tasks[index])
    for t in readers:
        t.join()
    return results


def _collect(child: tuple[Any, Any], results: list[Any]) -> None:
    proc, recv = child
    running: int | None = None
    try:
        while True:
            msg = recv.recv()
            if msg[0] == "start":
                running = msg[1]
            else:
                results[msg[1]] = msg[2]
                running = None
    except (EOFError, OSError):
        pass
    finally:
        recv.close()
        proc.join()
    if running is not None:
        results[running] = WorkerDied(f"worker process ended (exit code {proc.exitcode}) before finishing its task")
