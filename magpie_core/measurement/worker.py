"""Isolated worker: evaluates one kernel in its own process.

``python -m magpie_core.measurement.worker TASK.json OUTCOME.json`` loads the backend plugin named by the task and
writes an :class:`~magpie_core.reports.EvaluationOutcome`. A crash or hang here only fails this kernel; the parent reads
the exit status and the log.

``python -m magpie_core.measurement.worker --session TASK.json`` keeps the kernel ready for timing
(:meth:`~magpie_core.interfaces.KernelBackend.open_timing`) and answers one JSON line per command line on stdin:
``{"check": true}`` -> ``{"checked": <EvaluationOutcome>}`` (correctness, in this process: the worker that checks a
kernel is the one that times it); ``{"prepare": true}`` -> ``{"ready": {...}}`` (inputs placed, warmed up, batch
chosen); ``{"samples": N, "slot": SEED}`` -> ``{"samples_us": [...]}``, after the ``{"captured": {...}}`` lines
a backend sends mid-request (:func:`tell`, :attr:`~magpie_core.interfaces.KernelBackend.captures_launches`);
``{"verify": {...}}`` -> ``{"verified": ...}`` (a compare's referee, :mod:`magpie_core.pipelines.instances`);
``{"stop": true}`` -> ``{"info": {...}}`` and exit. It first says ``{"loaded": {...}}``; ``{"error": "..."}`` whenever
something fails, ``{"integrity": "..."}`` instead of an answer when the session's ``integrity()`` saw tampering.
Everything the kernel itself prints goes to stderr (the worker log), never into the protocol."""

from __future__ import annotations

import gc
import json
import multiprocessing.util
import os
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import CorrectnessResult, EvaluationOutcome, EvaluationTask, PerformanceResult, StageStatus

EXIT_EXCEPTION = 3
#: a session worker writes the protocol to this fd alone; the parent checks that nothing else in the worker holds
#: the pipe, and that this fd still does (:meth:`~magpie_core.measurement.worker_client.TimingWorker.ask`)
PROTOCOL_FD = 200
_dumps = json.dumps  # the reply path as magpie loaded it, before any kernel
_protocol: IO[str] | None = None  # a session worker's protocol stream, set before its kernel is loaded


def main(argv: list[str]) -> int:
    task_path, outcome_path = Path(argv[0]), Path(argv[1])
    task = EvaluationTask.model_validate_json(task_path.read_text())
    try:
        backend = get_plugin_manager().get("kernel_backend", task.kernel_type)
        outcome = backend.evaluate(task)
        code = 0
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        sys.stderr.write(text)
        message = f"{type(exc).__name__}: {exc}"
        outcome = EvaluationOutcome(
            correctness=CorrectnessResult(status=StageStatus.ERROR, message=message),
            performance=PerformanceResult(status=StageStatus.SKIPPED, message="correctness did not complete"),
        )
        code = EXIT_EXCEPTION
    outcome_path.write_text(outcome.model_dump_json(indent=2))
    return code


def _protocol_stream() -> IO[str]:
    """A private copy of stdout for the protocol (:data:`PROTOCOL_FD`); fd 1 itself now writes to stderr."""
    os.dup2(1, PROTOCOL_FD)
    stream = os.fdopen(PROTOCOL_FD, "w", buffering=1)
    os.dup2(2, 1)
    return stream


def _say(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(_dumps(message) + "\n")
    stream.flush()


def tell(message: dict[str, Any]) -> None:
    """Send ``message`` to the parent now, in the middle of a request: gone before any more kernel code runs."""
    if _protocol is not None:
        _say(_protocol, message)


def serve_session(task_path: Path) -> int:
    """Open a timing session for the task's kernel and sample it on command until told to stop."""
    global _protocol
    out, say = _protocol_stream(), _say  # bound before the kernel is imported: a patched module global changes nothing
    _protocol = out
    try:
        task = EvaluationTask.model_validate_json(task_path.read_text())
        session = get_plugin_manager().get("kernel_backend", task.kernel_type).open_timing(task)
        if session is None:
            say(out, {"error": f"kernel backend {task.kernel_type!r} has no timing session"})
            return EXIT_EXCEPTION
        say(out, {"loaded": session.info()})
        for line in sys.stdin:
            command = json.loads(line)
            if command.get("stop"):
                say(out, {"info": session.info()})
                return 0
            answer = _answer(session, command)
            # checked before every answer: a kernel that replaced a clock or the reply path is caught, not believed
            tampered = session.integrity() if hasattr(session, "integrity") else None
            say(out, {"integrity": tampered} if tampered else answer)
    except Exception as exc:
        sys.stderr.write("".join(traceback.format_exception(exc)))
        say(out, {"error": f"{type(exc).__name__}: {exc}"})
        return EXIT_EXCEPTION
    return 0  # the parent closed stdin: nothing more to do


def _answer(session: Any, command: dict[str, Any]) -> dict[str, Any]:
    if command.get("check"):
        return {"checked": session.check().model_dump(mode="json")}
    if command.get("prepare"):
        session.prepare()
        return {"ready": session.info()}
    if "verify" in command:  # the referee judges another process's outputs
        return {"verified": session.verify(command["verify"]).model_dump(mode="json")}
    if "call_times" in command:  # KernelBench's clock: single synchronized calls
        return {"call_us": session.call_times(int(command["call_times"]))}
    slot = [int(command["slot"])] if "slot" in command else []  # the seed of the slot's fresh input values
    return {"samples_us": session.sample(int(command["samples"]), *slot)}


def forked_session(
    task_path: str, cwd: str, env: dict[str, str], log_path: str, stdin: Connection, stdout: Connection
) -> None:
    """A session worker forked from the fork server: its own session, pipes as stdin/stdout, the log as
    stderr, the kernel's folder as working directory — then the same session as a started worker."""
    os.setsid()
    # the fork server's imports (torch, compilers) are millions of objects no collection will free: kept out
    # of every collection, a gc.collect() costs milliseconds instead of ~0.2 s, and gc does not write to (and
    # so copy) the pages this process shares with the fork server
    gc.freeze()
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(stdin.fileno(), 0)
    os.dup2(stdout.fileno(), 1)
    os.dup2(log, 2)
    os.close(log)
    stdin.close()  # their pipes are fds 0 and 1 now, and the reply pipe must be held once (PROTOCOL_FD)
    stdout.close()
    sys.stdin = os.fdopen(0, "r")  # multiprocessing gave the child /dev/null
    os.chdir(cwd)
    sys.path.insert(0, cwd)  # as ``python -m`` puts the working directory first
    os.environ.update(env)
    _leave(serve_session(Path(task_path)))


def _leave(code: int) -> None:
    """End a session worker at once: its answers are written, and tearing down the interpreter and a device
    context (a second or more with CUDA) would only keep the parent waiting."""
    # what a kernel's libraries created through multiprocessing (tqdm, in torch.compile, makes a named semaphore)
    # is released as at a normal exit: left to the parent's resource tracker, it is reported as leaked there
    multiprocessing.util._run_finalizers(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":  # as the imported module, whose protocol stream a backend's tell() reaches, not __main__
    from magpie_core.measurement import worker

    if sys.argv[1:2] == ["--session"]:
        worker._leave(worker.serve_session(Path(sys.argv[2])))
    sys.exit(worker.main(sys.argv[1:]))
