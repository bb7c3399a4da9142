"""CPU-bound tasks spread over processes, the calling process included.

Part of the trace library because trace analysis is what needs it (the ``gap`` and ``inference`` analyzers, a
task per file or byte range); it uses the standard library only.

Analyzing a trace is mostly Python work that threads cannot share, so tasks
(one file each, say) run in worker processes. (Reading one large file is the
exception: the compiled reader runs without the GIL, so its byte ranges are read
on threads of one process, :func:`magpie_trace.columns.split_table`, with
no table to send back.) Two choices keep the fan-out cheap enough to pay off on
a 2-core machine:

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

A large result travels through a file (in ``/dev/shm`` where there is one),
not the pipe: the parent's reader thread needs the GIL for every pipe read,
and while the parent decodes its own share it gets it only every switch
interval (5 ms), so a 38 MB result took over a second to cross the pipe and
held the child back from its next task meanwhile. Through a file it is one
write, and one read by the parent when its own share is done. The files live
in a private folder made for the run and removed with everything in it at
the end, whatever happened to the children.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
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


#: results larger than this (pickled) go through a file rather than the pipe
FILE_RESULT_BYTES = 256 * 1024


def _result_dir() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _child(conn: Any, tasks: Sequence[Task], counter: Any, order: Sequence[int], folder: str) -> None:
    while (index := _next(counter, order)) is not None:
        conn.send(("start", index))
        result = _call(tasks[index])
        try:
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result fails its task, as the pipe would have
            data = pickle.dumps(RuntimeError(f"task result cannot be sent back: {exc}"))
        if len(data) < FILE_RESULT_BYTES:
            conn.send(("done", index, data))  # the result is pickled once; the collector unpickles it
            continue
        path = os.path.join(folder, f"{index}.pickle")
        with open(path, "wb") as f:
            f.write(data)
        conn.send(("file", index, _InFile(path)))
    conn.close()


class _InFile(str):
    """The path of a file holding a child's pickled result."""


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
    folder = tempfile.mkdtemp(prefix="magpie-tasks-", dir=_result_dir())  # mode 0700: this user's only
    children = []
    for _ in range(workers - 1):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, tasks, counter, order, folder), daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv))
    # drain each child's pipe as results come, so a child never waits on this process to read
    readers = [threading.Thread(target=_collect, args=(c, results), daemon=True) for c in children]
    for t in readers:
        t.start()
    try:
        while (index := _next(counter, order)) is not None:
            results[index] = _call(tasks[index])
    except BaseException:  # interrupted: children take no further task
        with counter.get_lock():
            counter.value = len(order)
        raise
    finally:
        try:
            for t in readers:
                t.join()
            for index, r in enumerate(results):
                if isinstance(r, _InFile):
                    results[index] = _read_result(r)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return results


def _read_result(path: str) -> Any:
    try:
        with open(path, "rb") as f:
            return pickle.loads(f.read())
    except Exception as exc:
        return RuntimeError(f"task result could not be read back from {path}: {exc}")


def _collect(child: tuple[Any, Any], results: list[Any]) -> None:
    proc, recv = child
    running: int | None = None
    try:
        while True:
            tag, index, *rest = recv.recv()
            if tag == "start":
                running = index
            else:  # "done" with the pickled result, or "file" with the path of the file holding it
                results[index] = pickle.loads(rest[0]) if tag == "done" else rest[0]
                running = None
    except (EOFError, OSError):
        pass
    finally:
        recv.close()
        proc.join()
    if running is not None:
        results[running] = WorkerDied(f"worker process ended (exit code {proc.exitcode}) before finishing its task")
