"""Running external commands safely: argv lists only, own process group, bounded waits.

Only processes magpie started are ever signalled, and always as the whole group magpie created for them. Whatever ends a
wait on a child early — its timeout, an exception (``OverflowError`` from an absurd timeout included),
``KeyboardInterrupt``, a cancelled task — stops the child's group before the exception goes on, so no child outlives the
code that started it.

Every wait is bounded: a timeout of ``None``, infinity or more than :data:`MAX_WAIT_S` waits :data:`MAX_WAIT_S`
(:func:`bounded_timeout`). Once :func:`stop_everything` ran (Ctrl-C, SIGTERM: :mod:`~magpie_core.runtime.interrupts`),
no new child starts: :func:`run_command` raises :class:`Interrupted`."""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("magpie.processes")

#: the longest any wait on a child lasts (7 days): longer timeouts are clamped to it. The OS calls under
#: ``communicate``/``select`` overflow far below 1e9 s, which once left a child running with nobody waiting.
MAX_WAIT_S = 7 * 24 * 3600.0


class Interrupted(RuntimeError):
    """magpie is stopping (Ctrl-C, SIGTERM): no new child process is started."""


def bounded_timeout(seconds: float | None, what: str = "timeout") -> float:
    """``seconds`` as a wait the OS accepts: ``None``/infinite/over :data:`MAX_WAIT_S` become
    :data:`MAX_WAIT_S` (a warning names ``what`` when a value was clamped); NaN or <= 0 is a ValueError."""
    if seconds is None:
        return MAX_WAIT_S
    value = float(seconds)
    if math.isnan(value) or value <= 0:
        raise ValueError(f"{what}: {seconds!r} is not a positive number of seconds")
    if value > MAX_WAIT_S:
        log.warning("%s of %g s is longer than magpie waits for anything; using %g s", what, value, MAX_WAIT_S)
        return MAX_WAIT_S
    return value


@dataclass
class CommandOutcome:
    argv: list[str]
    returncode: int | None
    duration_s: float
    timed_out: bool
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f} s: {' '.join(self.argv)}"
        return f"{how_it_ended(self.returncode)}: {' '.join(self.argv)}"


def how_it_ended(returncode: int | None) -> str:
    """``killed by SIGABRT`` for a negative status (the signal's name says more than -6), else ``exit status N``."""
    if returncode is not None and returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


#: processes run_command started and that have not finished yet (for stop_started)
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def register_started(proc: subprocess.Popen[bytes]) -> None:
    """Count a long-lived process magpie started (in its own group) among those :func:`stop_started` stops.

    If magpie is already stopping, the process's group is killed at once and :class:`Interrupted` raised:
    a child started while Ctrl-C was being handled must not be missed."""
    with _LIVE_LOCK:
        refused = _STOPPING.is_set()
        if not refused:
            _LIVE.add(proc)
    if refused:
        kill_group(proc)
        raise Interrupted("magpie is stopping: no new process is started")


def stopping() -> bool:
    """True once :func:`stop_everything` ran."""
    return _STOPPING.is_set()


def stop_everything(sig: int = signal.SIGTERM) -> int:
    """Refuse new children from now on and send ``sig`` to every live group magpie started; how many."""
    with _LIVE_LOCK:
        _STOPPING.set()
        live = list(_LIVE)
    for proc in live:
        signal_group(proc, sig)
    return len(live)


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the group magpie created for ``proc`` (nothing if it is gone)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s group and reap ``proc`` (bounded)."""
    signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        log.warning("process %d did not die after SIGKILL", proc.pid)


def unregister_started(proc: subprocess.Popen[bytes]) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def stop_started(grace_s: float = 2.0) -> None:
    """Stop the process groups of every command this process started that is still running."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        stop_group(proc, grace_s=grace_s)


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """SIGTERM the process group magpie created for ``proc``, then SIGKILL after ``grace_s``.

    The group is killed even when ``proc`` itself has exited: its children may still be in it."""
    if proc.poll() is None:
        signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=bounded_timeout(grace_s) if grace_s > 0 else 0.001)
        except subprocess.TimeoutExpired:
            pass
        except BaseException:  # interrupted while waiting: do not leave the group behind
            kill_group(proc)
            raise
    _kill_leftovers(proc)
    if proc.returncode is None:
        kill_group(proc)


def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    log_path: Path | None = None,
    stream_to: Path | None = None,
    grace_s: float = 2.0,
) -> CommandOutcome:
    """Run ``argv`` (never through a shell) and capture its combined output.

    ``timeout_s`` is bounded by :func:`bounded_timeout`. Any exception while the child runs stops its
    group before it propagates. ``stream_to``: the output goes straight into that file as it is written
    (a long run's log is readable while it runs and survives a crash of magpie); ``output`` is then the
    file's last lines. ``grace_s``: how long a timed-out child gets between SIGTERM and SIGKILL."""
    wait_s = bounded_timeout(timeout_s, "timeout")
    if stopping():
        raise Interrupted(f"magpie is stopping: {argv[0]!r} was not started")
    start = time.perf_counter()
    proc = _start(argv, cwd, {**os.environ, **(env or {})}, stream_to)
    if isinstance(proc, CommandOutcome):
        return proc
    out, timed_out = _wait(proc, wait_s, streamed=stream_to is not None, grace_s=grace_s)
    text = out.decode(errors="replace") if stream_to is None else _file_tail(stream_to)
    if log_path is not None:
        with log_path.open("a") as fh:
            fh.write(f"$ {' '.join(argv)}\n{text}\n")
    return CommandOutcome(argv, proc.returncode, time.perf_counter() - start, timed_out, text)


def _start(
    argv: list[str], cwd: Path, env: dict[str, str], stream_to: Path | None
) -> subprocess.Popen[bytes] | CommandOutcome:
    """Start ``argv`` in a new process group, its output piped or appended to ``stream_to``; a program that
    cannot start gives its outcome (exit 127, the reason, also written to ``stream_to``)."""
    sink = stream_to.open("ab") if stream_to is not None else None
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if sink else None,
            stdout=sink or subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        message = f"cannot start {argv[0]!r}: {exc.strerror or exc}"
        if sink is not None:
            sink.write(f"{message}\n".encode())  # the log says why there is no output
        return CommandOutcome(argv, 127, 0.0, False, message)
    finally:
        if sink is not None:
            sink.close()  # the child holds its own descriptor


def _wait(proc: subprocess.Popen[bytes], wait_s: float | None, *, streamed: bool, grace_s: float) -> tuple[bytes, bool]:
    """Wait for ``proc`` (its piped output unless ``streamed``); a timeout stops its group after ``grace_s``, any
    exception stops it at once. Returns the output and whether it timed out."""
    register_started(proc)
    try:
        if not streamed:
            return proc.communicate(timeout=wait_s)[0], False
        proc.wait(timeout=wait_s)
        return b"", False
    except subprocess.TimeoutExpired:
        stop_group(proc, grace_s=grace_s)
        return (b"" if streamed else _rest_of_output(proc)), True
    except BaseException:
        stop_group(proc, grace_s=0)
        raise
    finally:
        _kill_leftovers(proc)
        unregister_started(proc)


def _rest_of_output(proc: subprocess.Popen[bytes]) -> bytes:
    """What a stopped child wrote; empty if something that escaped its group still holds the pipe."""
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        return b"(output lost: a process that left magpie's process group kept the pipe open)"
    return out or b""


def _kill_leftovers(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL what is left of ``proc``'s group: a leader that ended may have left children (background jobs)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_commands(
    commands: list[list[str]],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    log_path: Path | None = None,
) -> list[CommandOutcome]:
    """Run commands in order, stopping at the first that fails."""
    outcomes = []
    for argv in commands:
        outcome = run_command(argv, cwd=cwd, env=env, timeout_s=timeout_s, log_path=log_path)
        outcomes.append(outcome)
        if not outcome.ok:
            break
    return outcomes


def _file_tail(path: Path, max_bytes: int = 64 * 1024) -> str:
    """The end of a log file (a long run's log can be large: only its last ``max_bytes`` are read)."""
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - max_bytes))
        return fh.read().decode(errors="replace")


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
