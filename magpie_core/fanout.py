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

Tasks are assigned up front, largest first, to the least-loaded worker
(``weights``: file sizes, say). A task's exception is its result, and a child
that dies (killed for memory, a segfault) fails only its own tasks, as
:class:`WorkerDied` results.
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


def _child(conn: Any, tasks: list[tuple[int, Task]]) -> None:
    for index, task in tasks:
        conn.send((index, _call(task)))
    conn.close()


def assign(weights: Sequence[float], workers: int) -> list[list[int]]:
    """Task indices per worker: largest task first, each to the least-loaded worker (worker 0 = caller)."""
    loads = [0.0] * workers
    shares: list[list[int]] = [[] for _ in range(workers)]
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        w = min(range(workers), key=lambda k: (loads[k], k))
        shares[w].append(i)
        loads[w] += max(float(weights[i]), 1e-9)
    for share in shares:
        share.sort()  # in task order within a worker (file order for the parts of one file)
    return shares


def start_method() -> str:
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


def run_tasks(tasks: Sequence[Task], workers: int, weights: Sequence[float] | None = None) -> list[Any]:
    """``fn(*args)`` for every task, on up to ``workers`` processes including this one, in task order.

    With ``spawn`` (see :func:`start_method`) functions and arguments must be importable/picklable;
    results must always be picklable.
    """
    workers = max(1, min(workers, len(tasks)))
    if workers == 1:
        return [_call(t) for t in tasks]
    shares = assign(weights if weights is not None else [1.0] * len(tasks), workers)
    ctx = multiprocessing.get_context(start_method())
    results: list[Any] = [None] * len(tasks)
    children = []
    for share in shares[1:]:
        if not share:
            continue
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, [(i, tasks[i]) for i in share]), daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv, share))
    # drain each child's pipe as results come, so a child with several tasks never waits on the caller
    readers = [threading.Thread(target=_collect, args=(c, results), daemon=True) for c in children]
    for t in readers:
        t.start()
    for i in shares[0]:
        results[i] = _call(tasks[i])
    for t in readers:
        t.join()
    return results


def _collect(child: tuple[Any, Any, list[int]], results: list[Any]) -> None:
    proc, recv, share = child
    pending = set(share)
    try:
        while pending:
            index, value = recv.recv()
            results[index] = value
            pending.discard(index)
    except (EOFError, OSError):
        pass
    finally:
        recv.close()
        proc.join()
    for index in pending:
        results[index] = WorkerDied(f"worker process ended (exit code {proc.exitcode}) before finishing its task")
