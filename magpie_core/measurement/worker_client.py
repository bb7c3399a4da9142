"""Long-lived timing workers: isolated processes of a compare's candidates, checked and sampled on command.

Each worker runs :func:`~magpie_core.measurement.worker.serve_session` in its own process group (see
:mod:`~magpie_core.measurement.worker` for the line protocol). It is forked from magpie's fork server, which imported
the kernel backends' heavy modules once (:attr:`~magpie_core.interfaces.KernelBackend.worker_preload`), so starting a
worker costs a fork instead of a Python start and a framework import; the fork server stays up for the life of this
process, so a later compare (an MCP server, a loop session) starts warm. A worker whose environment needs variables of
its own (read when a process starts), or any with ``MAGPIE_FORK_WORKERS=0``, is a fresh ``python -m
magpie_core.measurement.worker --session TASK.json``. A worker that crashes, hangs past its timeout or answers nonsense
is stopped and fails its candidate alone; any other exception while the parent waits on it (Ctrl-C) stops it first.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from magpie_core.reports import CorrectnessResult, EvaluationOutcome, EvaluationTask
from magpie_core.runtime.processes import (
    bounded_timeout,
    how_it_ended,
    register_started,
    stop_group,
    stopping,
    tail,
    unregister_started,
)


class TimingWorkerError(RuntimeError):
    """The timing worker of one candidate failed (crash, hang, error); it has been stopped."""


class IntegrityError(TimingWorkerError):
    """The code under test was caught faking its speed or its correctness: ``REJECTED (integrity: what was seen)``."""


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` used so far, all threads (Linux: its CPUCLOCK_SCHED clock; 0 elsewhere, or gone)."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return 0.0


class TimingWorker:
    """The parent's handle on one timing worker."""

    def __init__(
        self,
        task: EvaluationTask,
        *,
        cwd: Path,
        workdir: Path,
        env: dict[str, str],
        start_timeout_s: float,
        fork: bool = True,
    ) -> None:
        """``fork``: the worker may be forked from the fork server (False: ``env`` must be there at start-up)."""
        workdir.mkdir(parents=True, exist_ok=True)
        task_path = workdir / "timing_task.json"
        task_path.write_text(task.model_dump_json(indent=2))
        self.log_path = workdir / "timing_worker.log"
        self._log = self.log_path.open("ab")
        self._turn = threading.Lock()  # one request and its answer at a time (the referee serves many threads)
        self.turn_cpu_s = 0.0  # CPU seconds its process used while answering
        self.captures = _captures_launches(task.kernel_type)  # the parent's word, not the worker's
        self.captured: list[Any] = []  # what it sent in its latest slot: one record a timed batch, and one before
        self._unread = bytearray()  # what it wrote after the line read last
        self.proc: subprocess.Popen[bytes] | ForkedWorker
        if fork and fork_server_usable():
            self.proc = ForkedWorker(task_path, cwd, env, self.log_path)
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "magpie_core.measurement.worker", "--session", str(task_path)],
                cwd=cwd,
                env={**os.environ, **worker_env(), **env},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                start_new_session=True,
            )
        try:
            register_started(self.proc)  # type: ignore[arg-type]  # ForkedWorker has Popen's interface
        except BaseException:
            self._log.close()
            raise
        try:
            self.info: dict[str, Any] = self._read(start_timeout_s, "loaded")
        except TimingWorkerError as exc:  # a forked worker runs the script that started magpie again, as __mp_main__
            main = sys.modules["__main__"]
            file = None if getattr(main, "__spec__", None) else getattr(main, "__file__", None)
            if isinstance(self.proc, ForkedWorker) and file:
                exc.args = (f"{exc}\n(if {file} lacks `if __name__ == '__main__':`, it runs in each worker)",)
            raise

    def check(self, timeout_s: float) -> EvaluationOutcome:
        """Correctness of the kernel in this worker (the process that is timed later is the one checked)."""
        return EvaluationOutcome.model_validate(self.ask({"check": True}, timeout_s, "checked"))

    def verify(self, request: dict[str, Any], timeout_s: float) -> CorrectnessResult:
        """The referee's judgement of what another worker handed over (``ask({"handover": ...})``: a file)."""
        return CorrectnessResult.model_validate(self.ask({"verify": request}, timeout_s, "verified"))

    def prepare(self, timeout_s: float) -> None:
        """Warm up and choose the batch size; call for one worker at a time."""
        self.info = self.ask({"prepare": True}, timeout_s, "ready")

    def sample(self, count: int, timeout_s: float, slot: int | None = None) -> list[float]:
        """``count`` per-launch times (µs) taken now (``slot``: a number the backend may start its inputs from)."""
        began, self.captured = time.perf_counter(), []
        samples = self.ask({"samples": count} | ({} if slot is None else {"slot": slot}), timeout_s, "samples_us")
        wall_us = (time.perf_counter() - began) * 1e6
        if not isinstance(samples, list) or not samples or not all(isinstance(x, (int, float)) for x in samples):
            self.stop()
            raise TimingWorkerError(f"timing worker answered without samples: {str(samples)[:200]}")
        timed_us = sum(float(x) for x in samples) * int(self.info.get("batch_size") or 1)
        if timed_us > 1.05 * wall_us + 1000:  # more time inside the timed intervals than passed: not a measurement
            self.stop()
            raise IntegrityError(f"REJECTED (integrity: it reported {timed_us:.0f} us timed in {wall_us:.0f} us)")
        if self.captures and len(self.captured) != len(samples) + 1:
            self.stop()
            raise IntegrityError(f"REJECTED (integrity: {len(self.captured)} records for {len(samples)} timed batches)")
        return [float(x) for x in samples]

    def close(self, timeout_s: float = 30) -> dict[str, Any]:
        """Ask the worker to finish; its final info (notes), or the info it started with."""
        try:
            if stopping():  # interrupted: the worker is being killed, it will not answer
                raise TimingWorkerError("magpie is stopping")
            self.info = self.ask({"stop": True}, timeout_s, "info")
            # it exits by itself once it has answered; a signal now would cut short its exit's clean-up
            self.proc.wait(timeout=2.0)
        except (TimingWorkerError, subprocess.TimeoutExpired):
            pass
        self.stop()
        return self.info

    def ask(self, message: dict[str, Any], timeout_s: float, key: str) -> Any:
        """One request and its answer; the worker's CPU meanwhile is its own turn's (:attr:`turn_cpu_s`)."""
        with self._turn:
            before = cpu_seconds(self.proc.pid)
            try:
                self._send(message)
                answer = self._read(timeout_s, key)
            finally:
                self.turn_cpu_s += cpu_seconds(self.proc.pid) - before
            if problem := self._reply_pipe_problem():
                self.stop()
                raise IntegrityError(f"REJECTED (integrity: {problem})")
            return answer

    def _reply_pipe_problem(self) -> str | None:
        """Whether only :data:`~.worker.PROTOCOL_FD` holds this pipe in the worker: code keeping a copy (to write
        answers of its own) or a pipe of its own there (to rewrite them) is seen from outside (Linux ``/proc``)."""
        from magpie_core.measurement.worker import PROTOCOL_FD

        try:
            pipe, folder = f"pipe:[{os.fstat(self.proc.stdout.fileno()).st_ino}]", Path(f"/proc/{self.proc.pid}/fd")  # type: ignore[union-attr]
            holders = sorted(int(fd.name) for fd in folder.iterdir() if _link(fd) == pipe)
        except (OSError, ValueError, AttributeError):
            return None
        # none: it is exiting (its last answer sent); code that rewrites answers must hold the pipe to pass them on
        return None if holders in ([], [PROTOCOL_FD]) else f"its process holds magpie's reply pipe as fds {holders}"

    def stop(self) -> None:
        stop_group(self.proc, grace_s=0 if stopping() else 2.0)
        unregister_started(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):  # a request still buffered for a worker already gone: EPIPE again
                    stream.close()
        self._log.close()

    # -- the line protocol -------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        try:
            assert stdin is not None
            stdin.write((json.dumps(message) + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, ValueError, AssertionError) as exc:
            raise self._ended(f"timing worker is gone ({type(exc).__name__})") from None

    def _read(self, timeout_s: float, key: str) -> Any:
        try:
            return self._answer(bounded_timeout(timeout_s, "timing worker timeout"), key)
        except TimingWorkerError:
            raise
        except BaseException:  # an interrupt, or anything unexpected: the worker must not outlive us
            self.stop()
            raise

    def _answer(self, timeout_s: float, key: str) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:  # the captures it sent during the request come first
            try:
                line = _readline(self.proc.stdout, deadline - time.monotonic(), self._unread)
            except EOFError:  # its output closed: it is exiting, and its status says how (not a hang)
                raise self._ended("timing worker ended") from None
            if line is None:
                raise self._failure(f"timing worker gave no answer within {timeout_s:g} s (hung)")
            try:
                message = json.loads(line)
            except ValueError:
                raise self._failure(f"timing worker wrote something that is not the protocol: {line[:200]!r}") from None
            if not (isinstance(message, dict) and "captured" in message):
                break
            self.captured.append(message["captured"])
        if "error" in message:
            raise self._failure(str(message["error"]))
        if "integrity" in message:
            self.stop()
            raise IntegrityError(f"REJECTED (integrity: {message['integrity']})")
        if key not in message:
            raise self._failure(f"timing worker answered {sorted(message)} instead of {key!r}")
        return message[key]

    def _ended(self, what: str) -> TimingWorkerError:
        """A worker whose pipe closed, and how it ended: a backend's confinement (seccomp) ends it by SIGSYS, caught."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() == -signal.SIGSYS:
            self.stop()
            return IntegrityError("REJECTED (integrity: killed by SIGSYS, a call its confinement forbids)")
        return self._failure(f"{what}: {how_it_ended(self.proc.poll())}")

    def _failure(self, what: str) -> TimingWorkerError:
        self.stop()
        log = tail(self.log_path.read_text(errors="replace"), 15) if self.log_path.exists() else ""
        return TimingWorkerError(f"{what}\n{log}".rstrip())


def _captures_launches(kernel_type: str) -> bool:
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        return bool(get_plugin_manager().get("kernel_backend", kernel_type).captures_launches)
    except UnknownComponentError:  # its worker says so as it starts
        return False


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed meanwhile
        return ""


def _readline(stream: IO[bytes] | None, timeout_s: float, unread: bytearray) -> str | None:
    """One line from ``stream`` within ``timeout_s`` (what came after it stays in ``unread``), or None (timeout);
    EOFError at the end of the stream."""
    if stream is None:
        raise EOFError
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while (end := unread.find(b"\n")) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return None
            if not (chunk := os.read(stream.fileno(), 1 << 16)):
                raise EOFError
            unread += chunk
        line = bytes(unread[:end])
        del unread[: end + 1]
        return line.decode(errors="replace").strip()


# --- the fork server ---------------------------------------------------------------------------------

FORK_SWITCH = "MAGPIE_FORK_WORKERS"
_context: multiprocessing.context.ForkServerContext | None = None
#: what the fork server imports (set once, as it is first asked for)
_preloaded: list[str] = []
_context_lock = threading.Lock()


def fork_server_usable() -> bool:
    return FORK_SWITCH not in os.environ or os.environ[FORK_SWITCH] != "0"


def _fork_context(extra: Iterable[str] = ()) -> multiprocessing.context.ForkServerContext:
    """The fork server's context, its preload set from every kernel backend and ``extra`` (before it first
    starts: a server already running keeps its set, and workers import what it lacks themselves)."""
    global _context
    with _context_lock:
        if _context is None:
            from magpie_core.plugins import get_plugin_manager

            modules = {"magpie_core.measurement.worker", *extra}
            for backend in get_plugin_manager().components("kernel_backend").values():
                modules.update(getattr(backend, "worker_preload", ()))
            context = multiprocessing.get_context("forkserver")
            _preloaded[:] = sorted(modules)
            context.set_forkserver_preload(_preloaded)
            _context = context
        return _context


def fork_server_modules() -> list[str]:
    """The modules this process's fork server was started with (none: it was not)."""
    return list(_preloaded)


def worker_env() -> dict[str, str]:
    """Every kernel backend's :attr:`~magpie_core.interfaces.KernelBackend.worker_env` the user did not set."""
    from magpie_core.plugins import get_plugin_manager

    wanted = [getattr(b, "worker_env", {}) for b in get_plugin_manager().components("kernel_backend").values()]
    return {key: value for env in wanted for key, value in env.items() if key not in os.environ}


def warm_fork_server(extra: Iterable[str] = ()) -> None:
    """Start the fork server now (importing the preloaded modules and ``extra``, in the background, with the backends'
    worker environment), so the first worker does not wait for it."""
    if fork_server_usable():
        _fork_context(extra)
        added = worker_env()
        os.environ.update(added)
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            for key in added:
                del os.environ[key]


class ForkedWorker:
    """A session worker forked from the fork server, with the part of ``Popen``'s interface magpie uses: stdin and
    stdout pipes to this process, stderr the worker log; it leads its own session, signalled like any other."""

    def __init__(self, task_path: Path, cwd: Path, env: dict[str, str], log_path: Path) -> None:
        context = _fork_context()
        child_in, parent_in = context.Pipe(duplex=False)
        parent_out, child_out = context.Pipe(duplex=False)
        from magpie_core.measurement.worker import forked_session

        self._process = context.Process(
            target=forked_session,
            args=(str(task_path), str(cwd), env, str(log_path), child_in, child_out),
            name=f"magpie worker {task_path.parent.name}",
        )
        try:
            self._process.start()
        finally:
            child_in.close()
            child_out.close()
        assert self._process.pid is not None
        self.pid: int = self._process.pid
        self.stdin: IO[bytes] = os.fdopen(os.dup(parent_in.fileno()), "wb")
        self.stdout: IO[bytes] = os.fdopen(os.dup(parent_out.fileno()), "rb")
        parent_in.close()
        parent_out.close()
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not self._process.is_alive():
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(f"magpie worker {self.pid}", timeout or 0)
        return code
