"""One load point: what it asks for (:class:`LoadSpec`), what it got (:class:`LoadResult`), and the wait for it
that every way of sending load shares (:mod:`~magpie_benchmark.loadgen.runner`'s rate-driven requests,
:mod:`~magpie_benchmark.loadgen.replay`'s trace sessions): the progress display, the point's timeout, the stall
watchdog and Ctrl-C.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from magpie_benchmark.loadgen.client import Endpoint, RequestResult, StallWatch
from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.traces import TraceReplay
from magpie_core.runtime import interrupts


@dataclass
class LoadSpec:
    """One load point."""

    base_url: str
    model: str
    requests: Sequence[SampleRequest]
    endpoint: Endpoint = "completions"
    request_rate: float = math.inf
    burstiness: float = 1.0
    max_concurrency: int | None = None
    warmup_requests: int = 0
    ignore_eos: bool = True
    seed: int = 0
    request_timeout_s: float = 600.0
    #: the most one request may take in all (None: only the read timeout bounds it)
    request_deadline_s: float | None = None
    #: stop the point when no in-flight request got a byte for this long (None: no watchdog)
    stall_timeout_s: float | None = None
    point_timeout_s: float | None = None
    extra_body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    progress: bool = False
    label: str = ""
    #: trace replay (sessions with their own timing) instead of ``requests`` at ``request_rate``
    trace: TraceReplay | None = None


@dataclass
class LoadResult:
    results: list[RequestResult]
    duration_s: float
    clock: str
    schedule_lag_s: list[float] = field(default_factory=list)
    achieved_rate: float | None = None
    target_rate: float | None = None
    warmup_failed: int = 0
    timed_out: bool = False
    started_at: float = 0.0
    #: CPU seconds this process used while the load ran (all threads): with the chunk count, how much of
    #: a core the client itself took from a server that shares the machine
    client_cpu_s: float | None = None
    #: stopped by Ctrl-C: ``results`` holds the requests that finished before it
    interrupted: bool = False
    #: requests sent or planned but not finished when interrupted (left out of ``results``)
    unfinished: int = 0
    #: the stall watchdog stopped the point: its message (the unfinished requests failed as ``stalled``)
    stall: str | None = None


#: without a terminal, a progress line this often (seconds), so a long or stuck point is never silent
PROGRESS_LOG_EVERY_S = 10.0

log = logging.getLogger("magpie.benchmark.load")


class Progress:
    """Requests done and failed, throughput so far and the time left (estimated) while a point runs.

    A rich progress bar on a terminal; elsewhere (a log file, CI) a log line every ``log_every_s``,
    also while nothing finishes, so that waiting on a server is visible."""

    def __init__(self, enabled: bool, total: int, label: str, log_every_s: float = PROGRESS_LOG_EVERY_S) -> None:
        self.total, self.label = total, label or "requests"
        self.done = self.failed = 0
        self.started = time.perf_counter()
        self._bar: Any = None
        self._ticker: asyncio.TimerHandle | None = None
        if not enabled:
            return
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            self._bar = self._start_bar(console)
        else:
            self._log_every_s = log_every_s
            self._ticker = asyncio.get_running_loop().call_later(log_every_s, self._tick)

    def _start_bar(self, console: Any) -> Any:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed  {task.fields[rate]}"),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        bar.start()
        self._task = bar.add_task(self.label, total=self.total, failed=0, rate="")
        return bar

    def rate(self) -> float:
        """Requests finished per second so far."""
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def advance(self, ok: bool = True) -> None:
        self.done += 1
        self.failed += not ok
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed, rate=f"{self.rate():.2f} req/s")

    def line(self) -> str:
        """The progress as one line of text."""
        elapsed = time.perf_counter() - self.started
        if not self.done:
            return f"{self.label}: 0/{self.total} done after {elapsed:.0f} s, waiting for the first answer"
        rate = self.rate()
        left = (self.total - self.done) / rate if rate > 0 else math.inf
        return (
            f"{self.label}: {self.done}/{self.total} done ({self.failed} failed), {rate:.2f} req/s, "
            f"about {left:.0f} s left"
        )

    def _tick(self) -> None:
        log.info("%s", self.line())
        self._ticker = asyncio.get_running_loop().call_later(self._log_every_s, self._tick)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None


@dataclass
class PointEnd:
    """How a point's wait ended: when (the clock stops before unfinished requests are cancelled), the client
    CPU seconds until then, and why it stopped early, if it did."""

    end: float = 0.0
    cpu_s: float = 0.0
    timed_out: bool = False
    interrupted: bool = False
    #: the stall watchdog's message when it stopped the point
    stall: str | None = None

    def unfinished_error(self, point_timeout_s: float | None) -> tuple[str, str]:
        """(error, error kind) of a request the point stopped before it finished (or before it was sent)."""
        if self.stall is not None:
            return f"not finished when the point stopped: {self.stall}", "stalled"
        return f"not finished when the point timed out after {point_timeout_s} s", "point_timeout"


async def wait_for_point(
    work: Awaitable[Any],
    tasks: list[asyncio.Task[Any]],
    timeout_s: float | None,
    cpu_start: float,
    progress: Progress,
    watch: StallWatch | None = None,
) -> PointEnd:
    """Await a point's ``work`` under its timeout and the stall watchdog on ``watch``.

    The clock stops before unfinished ``tasks`` are cancelled (their cancellation is not load); a stall ends
    the point as its timeout would, and so does a Ctrl-C that magpie's interrupt handling raised; any other
    cancellation propagates."""
    ended = PointEnd()
    try:
        try:
            async with asyncio.timeout(timeout_s) as limit:
                stop_watching = _watch_stalls(watch, limit, ended)
                try:
                    await work
                finally:
                    stop_watching()
        except TimeoutError:
            ended.timed_out = ended.stall is None
        except asyncio.CancelledError:
            if not _our_interrupt():
                raise
            ended.interrupted = True
        ended.end = time.perf_counter()
        ended.cpu_s = time.process_time() - cpu_start
        if ended.timed_out or ended.interrupted or ended.stall is not None:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        progress.close()  # after the clock stopped: stopping the progress display can take a refresh period
    if ended.stall is not None:
        log.error("%s: %s", progress.label, ended.stall)
    return ended


def _watch_stalls(watch: StallWatch | None, limit: asyncio.Timeout, ended: PointEnd) -> Callable[[], None]:
    """Check ``watch`` a few times per stall period; on a stall, note it in ``ended`` and expire ``limit`` now
    (the point then stops through the same path as a timeout). Returns the function that stops the checks."""
    if watch is None or watch.stall_s is None:
        return lambda: None
    loop = asyncio.get_running_loop()
    period = min(1.0, watch.stall_s / 4)
    handle: asyncio.TimerHandle

    def check() -> None:
        nonlocal handle
        if watch.stalled(time.perf_counter()):
            ended.stall = watch.message()
            limit.reschedule(loop.time())
        else:
            handle = loop.call_later(period, check)

    handle = loop.call_later(period, check)
    return lambda: handle.cancel()


def _our_interrupt() -> bool:
    """The running task was cancelled by :func:`~magpie_benchmark.loadgen.runner.run_in_loop` on Ctrl-C (then it
    stops and keeps its results)."""
    task = asyncio.current_task()
    if interrupts.received() is None or task is None:
        return False
    task.uncancel()
    return True
