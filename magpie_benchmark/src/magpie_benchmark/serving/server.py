"""Start, watch and stop a serving process that magpie owns.

The server runs as a child in its own process group (so the whole group
can be signalled without touching anything else), with stdout and stderr
going to ``server.log``. Stopping sends SIGTERM to that group, waits a grace
period, then SIGKILLs it. Only groups magpie started are ever signalled.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from magpie_core.runtime.processes import Interrupted, register_started, unregister_started

log = logging.getLogger("magpie.serving")


class ServerError(RuntimeError):
    """The server exited, never became ready, or could not be started."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class ServerProcess:
    """One server child process and its log."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        log_path: Path,
        *,
        cwd: Path | None = None,
        stop_argv: Sequence[str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.log_path = log_path
        self.cwd = cwd
        self.stop_argv = list(stop_argv) if stop_argv else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                # Its own process group (so the whole group can be signalled without touching
                # anything else) but NOT its own session: with the kernel's autogroup scheduling a
                # new session is a separate CPU group, and on small machines that skewed the client's
                # measurements against it (docs/benchmarks/benchmark_accuracy.md).
                process_group=0,
            )
        except OSError as exc:
            raise ServerError(f"cannot start the server ({self.argv[0]}): {exc}") from exc
        finally:
            log_file.close()
        try:
            register_started(self.proc)  # Ctrl-C stops it with everything else magpie started
        except Interrupted as exc:
            raise ServerError(str(exc)) from None
        self.started_at = time.monotonic()
        log.info("server started (pid %d): %s", self.proc.pid, " ".join(self.argv))

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def check_alive(self) -> None:
        code = self.exit_code()
        if code is not None:
            raise ServerError(
                f"the server exited with code {code}; last lines of {self.log_path.name}:\n{log_tail(self.log_path)}"
            )

    def wait_ready(self, url: str, timeout_s: float, interval_s: float = 0.5) -> float:
        """Poll ``url`` until it answers 200; seconds it took. Fails fast when the process exits."""
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5.0) as client:
            while True:
                self.check_alive()
                try:
                    if client.get(url).status_code == 200:
                        return time.monotonic() - (self.started_at or deadline - timeout_s)
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"the server was not ready at {url} after {timeout_s:.0f} s; last lines of "
                        f"{self.log_path.name}:\n{log_tail(self.log_path)}"
                    )
                time.sleep(interval_s)

    def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGTERM the server's process group, SIGKILL it after ``grace_s``; its exit code."""
        if self.proc is None:
            return None
        if self.stop_argv:
            try:
                subprocess.run(self.stop_argv, timeout=grace_s, capture_output=True, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("stop command failed: %s", exc)
        pgid = self.proc.pid  # process_group=0: the child leads its own group
        if self.proc.poll() is None:
            self._signal_group(pgid, signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                log.warning("server did not stop within %.0f s; killing its process group", grace_s)
                self._signal_group(pgid, signal.SIGKILL)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    log.warning("server process %d did not die after SIGKILL", pgid)
        # children that outlived the leader are still in the group
        self._signal_group(pgid, signal.SIGKILL)
        unregister_started(self.proc)
        return self.proc.returncode

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
