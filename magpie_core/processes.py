"""Running external commands safely: argv lists only, own process group, timeouts.

Only processes magpie started are ever signalled, and always as the whole
group magpie created for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


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
        if self.returncode is not None and self.returncode < 0:
            sig = signal.Signals(-self.returncode).name
            return f"killed by {sig}: {' '.join(self.argv)}"
        return f"exit status {self.returncode}: {' '.join(self.argv)}"


#: processes run_command started and that have not finished yet (for stop_started)
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def register_started(proc: subprocess.Popen[bytes]) -> None:
    """Count a long-lived process magpie started (in its own group) among those :func:`stop_started` stops."""
    with _LIVE_LOCK:
        _LIVE.add(proc)


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
    """SIGTERM the process group magpie created for ``proc``, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait()


def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    log_path: Path | None = None,
) -> CommandOutcome:
    """Run ``argv`` (never through a shell) and capture its combined output."""
    full_env = {**os.environ, **(env or {})}
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandOutcome(argv, 127, 0.0, False, f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    timed_out = False
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_group(proc, grace_s=2.0)
        out, _ = proc.communicate()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    text = out.decode(errors="replace")
    if log_path is not None:
        with log_path.open("a") as log:
            log.write(f"$ {' '.join(argv)}\n{text}\n")
    return CommandOutcome(argv, proc.returncode, time.perf_counter() - start, timed_out, text)


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


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
