"""Ctrl-C and SIGTERM for commands that run children: stop at once, keep what was measured.

magpie starts every child in its own session or process group (so a child's crash, or a signal meant for it, touches
nothing else). The terminal's Ctrl-C therefore reaches magpie alone, and :func:`handling_interrupts` forwards it:

* **first signal**: no new child starts, every process group magpie started gets SIGTERM and, :data:`GRACE_S` later,
  SIGKILL (:func:`~magpie_core.runtime.processes.stop_everything`). Then the innermost :func:`on_interrupt` callback
  runs (the load generator's event loop cancels its task and keeps the requests that completed) or, without one,
  ``KeyboardInterrupt`` is raised in the main thread. Pipelines catch it, write their report marked ``interrupted`` and
  raise :class:`RunInterrupted`.
* **another signal**: SIGKILL to every group now (the report is still written). If the first came more than
  :data:`FORCE_AFTER_S` ago, something is stuck: the process exits at once.
* If the process is still alive :data:`HARD_EXIT_S` after the first signal, it exits regardless.

Commands exit with 128 + the signal: 130 after Ctrl-C, 143 after SIGTERM — at once, through :func:`exit_now` once the
partial report is written and the message printed, so that a further Ctrl-C cannot land in the interpreter's shutdown
(which would end the process by the signal itself)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_core.runtime.processes import stop_everything

#: seconds between the SIGTERM and the SIGKILL every child group gets on an interrupt
GRACE_S = 1.0
#: a second signal this long after the first ends the process at once
FORCE_AFTER_S = 3.0
#: the process exits this long after the first signal even if nothing else made it
HARD_EXIT_S = 10.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(KeyboardInterrupt):
    """A run was stopped by a signal; what it measured so far is in ``report_path`` (if anything was)."""

    def __init__(self, message: str, report_path: Path | str | None = None, signum: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.report_path = Path(report_path) if report_path is not None else None
        self.signum = signum if signum is not None else (received() or signal.SIGINT)

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


@dataclass
class _State:
    signum: int | None = None
    first_at: float = 0.0
    callbacks: list[Callable[[], None]] = field(default_factory=list)


_STATE = _State()


def received() -> int | None:
    """The first interrupting signal this process handled, or None."""
    return _STATE.signum


def exit_code() -> int:
    """128 + the signal that interrupted the run (130 for Ctrl-C)."""
    return 128 + int(_STATE.signum or signal.SIGINT)


def exit_now() -> None:
    """End an interrupted process: stop what is left, flush the output, exit with :func:`exit_code`."""
    _kill_all()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(exit_code())


def _kill_all() -> None:
    stop_everything(signal.SIGKILL)


def _later(delay_s: float, action: Callable[[], None]) -> None:
    timer = threading.Timer(delay_s, action)
    timer.daemon = True
    timer.start()


def _hard_exit() -> None:
    sys.stderr.write(f"magpie: still running {HARD_EXIT_S:g} s after the interrupt; exiting now\n")
    exit_now()


def _handler(signum: int, frame: Any) -> None:
    now = time.monotonic()
    if _STATE.signum is None:
        _STATE.signum, _STATE.first_at = signum, now
        stop_everything(signal.SIGTERM)
        _later(GRACE_S, _kill_all)
        _later(HARD_EXIT_S, _hard_exit)
        if _STATE.callbacks:
            _STATE.callbacks[-1]()
            return
        raise KeyboardInterrupt
    _kill_all()
    if now - _STATE.first_at > FORCE_AFTER_S:
        exit_now()


@contextlib.contextmanager
def handling_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM handled as above for the ``with`` block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    try:
        yield
    finally:
        if received() is None:  # once interrupted, keep handling until exit_now
            for sig, old in previous.items():
                signal.signal(sig, old)


@contextlib.contextmanager
def on_interrupt(callback: Callable[[], None]) -> Iterator[None]:
    """For the ``with`` block, the first signal calls ``callback`` (in the main thread) instead of raising
    ``KeyboardInterrupt`` — for code that stops more cleanly on its own, like an event loop."""
    _STATE.callbacks.append(callback)
    try:
        yield
    finally:
        _STATE.callbacks.remove(callback)
