"""Drive a list of requests at a target rate and concurrency, and check the client kept up.

Arrival times are drawn up front: gaps from a gamma distribution with shape
``burstiness`` and mean ``1/rate`` (``burstiness = 1`` is a Poisson
process), rescaled so the last arrival lands at ``n / rate``; ``rate = inf``
sends everything at once. A request whose arrival comes waits for a
concurrency slot when ``max_concurrency`` is set; its TTFT clock starts when
it is sent. Warm-up requests run first and are left out of every number.
Each request has a total deadline (``request_deadline_s``): a stream that never
ends fails that request, not the run. A stall watchdog (``stall_timeout_s``) stops
the point when no in-flight request has heard a byte for that long: the finished
requests are kept, the others fail as ``stalled``. Interrupted (Ctrl-C under
:func:`magpie_core.interrupts.handling_interrupts`), a point stops at once and
keeps the requests that finished; the others are left out and counted.

Client self-checks: *schedule lag* is how late each request was handed out
compared with its planned arrival (a busy client shows up here), and the
achieved rate is the number of requests over the span of their dispatches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magpie_benchmark.loadgen.client import (
    Endpoint,
    RequestResult,
    StallWatch,
    build_payload,
    encode_payload,
    send_request,
)
from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.http import make_client, new_event_loop
from magpie_benchmark.loadgen.traces import TraceReplay
from magpie_core import interrupts


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


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Planned send times (seconds from start) for ``n`` requests."""
    if n <= 0:
        return []
    if not math.isfinite(rate):
        return [0.0] * n
    if rate <= 0:
        raise ValueError("request_rate must be positive")
    if not math.isfinite(burstiness):
        gaps = np.full(n, 1.0 / rate)
    else:
        rng = np.random.default_rng(seed)
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    cum = np.cumsum(gaps)
    if cum[-1] > 0:
        cum *= (n / rate) / cum[-1]
    return cum.tolist()


#: without a terminal, a progress line this often (seconds), so a long or stuck point is never silent
PROGRESS_LOG_EVERY_S = 10.0

log = logging.getLogger("magpie.benchmark.load")


class _Progress:
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


async def run_load_async(spec: LoadSpec) -> LoadResult:
    """Run one load point on the running event loop."""
    concurrency = spec.max_concurrency
    client = make_client(spec.base_url, concurrency, spec.request_timeout_s)
    try:
        warmup_failed = 0
        if spec.warmup_requests > 0 and spec.requests:
            warm = await _warm_up(spec, client)
            if warm.stall is not None or warm.interrupted:
                return warm
            warmup_failed = warm.warmup_failed
        if spec.trace is not None:
            from magpie_benchmark.loadgen.replay import measure_replay  # replay builds on this module

            return await measure_replay(spec, spec.trace, client, warmup_failed)
        return await _measure(spec, client, client.clock, warmup_failed)
    finally:
        await client.aclose()


async def _warm_up(spec: LoadSpec, client: Any) -> LoadResult:
    """The warm-up requests (left out of every number), under the stall watchdog: a server that stops
    answering during the warm-up stops the point there. Its ``warmup_failed`` counts the failed ones."""
    concurrency = spec.max_concurrency or spec.warmup_requests
    sem = asyncio.Semaphore(concurrency)
    watch = StallWatch(spec.stall_timeout_s)
    failed: list[bool] = []

    async def warm(i: int) -> None:
        req = spec.requests[i % len(spec.requests)]
        async with sem:
            payload = build_payload(
                spec.endpoint, spec.model, req, ignore_eos=spec.ignore_eos, extra_body=spec.extra_body
            )
            res = await send_request(
                client, spec.endpoint, encode_payload(payload), req, spec.headers, spec.request_deadline_s, watch
            )
        failed.append(not res.success)

    tasks = [asyncio.create_task(warm(i)) for i in range(spec.warmup_requests)]
    ended = await wait_for_point(
        asyncio.gather(*tasks), tasks, None, time.process_time(), _Progress(False, 0, f"{spec.label} warm-up"), watch
    )
    result = LoadResult([], 0.0, client.clock, warmup_failed=sum(failed), interrupted=ended.interrupted)
    if ended.interrupted:
        result.unfinished = len(spec.requests)
    if ended.stall is not None:  # the measured requests were never sent: failures of the stall
        ended.stall = result.stall = f"during the warm-up: {ended.stall}"
        result.results = [_not_finished(r, ended, None) for r in spec.requests]
    return result


def _not_finished(request: SampleRequest, ended: PointEnd, point_timeout_s: float | None) -> RequestResult:
    """The failure of a request the point stopped before it finished (or before it was sent)."""
    error, kind = ended.unfinished_error(point_timeout_s)
    return RequestResult(
        prompt_len=request.prompt_len, expected_output_len=request.expected_output_len, error=error, error_kind=kind
    )


async def _measure(spec: LoadSpec, client: Any, clock: str, warmup_failed: int) -> LoadResult:
    n = len(spec.requests)
    offsets = arrival_offsets(n, spec.request_rate, spec.burstiness, spec.seed)
    sem: asyncio.Semaphore | contextlib.nullcontext[None] = (
        asyncio.Semaphore(spec.max_concurrency) if spec.max_concurrency else contextlib.nullcontext()
    )
    payloads = [  # encoded before the clock starts
        encode_payload(
            build_payload(spec.endpoint, spec.model, r, ignore_eos=spec.ignore_eos, extra_body=spec.extra_body)
        )
        for r in spec.requests
    ]
    progress = _Progress(spec.progress, n, spec.label)
    watch = StallWatch(spec.stall_timeout_s)
    results: list[RequestResult | None] = [None] * n
    lags: list[float] = []
    dispatched: list[float] = []

    async def one(i: int, dispatch: float, planned: float) -> None:
        async with sem:  # type: ignore[union-attr]
            res = await send_request(
                client, spec.endpoint, payloads[i], spec.requests[i], spec.headers, spec.request_deadline_s, watch
            )
        res.scheduled_time = planned
        res.dispatch_time = dispatch
        results[i] = res
        progress.advance(res.success)

    tasks: list[asyncio.Task[None]] = []
    cpu_start = time.process_time()
    start = time.perf_counter()

    async def dispatcher() -> None:
        for i, offset in enumerate(offsets):
            planned = start + offset
            delay = planned - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.perf_counter()
            lags.append(max(0.0, now - planned))
            dispatched.append(now)
            tasks.append(asyncio.create_task(one(i, now, planned)))

    async def everything() -> None:
        await dispatcher()
        if tasks:
            await asyncio.gather(*tasks)

    ended = await wait_for_point(everything(), tasks, spec.point_timeout_s, cpu_start, progress, watch)
    final: list[RequestResult] = []
    for i, r in enumerate(results):
        if r is None and ended.interrupted:
            continue
        final.append(r if r is not None else _not_finished(spec.requests[i], ended, spec.point_timeout_s))
    achieved = None
    if math.isfinite(spec.request_rate) and dispatched and dispatched[-1] > start:
        # planned: the last of n arrivals lands at n / rate
        achieved = len(dispatched) / (dispatched[-1] - start)
    return LoadResult(
        results=final,
        duration_s=ended.end - start,
        client_cpu_s=ended.cpu_s,
        clock=clock,
        schedule_lag_s=lags,
        achieved_rate=achieved,
        target_rate=spec.request_rate if math.isfinite(spec.request_rate) else None,
        warmup_failed=warmup_failed,
        timed_out=ended.timed_out,
        started_at=start,
        interrupted=ended.interrupted,
        unfinished=n - len(final),
        stall=ended.stall,
    )


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
    progress: _Progress,
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
    """The running task was cancelled by :func:`run_in_loop` on Ctrl-C (then it stops and keeps its results)."""
    task = asyncio.current_task()
    if interrupts.received() is None or task is None:
        return False
    task.uncancel()
    return True


def run_load(spec: LoadSpec) -> LoadResult:
    """Run one load point in a fresh event loop whose reads are timestamped on arrival."""
    return run_in_loop(lambda: run_load_async(spec))


def run_in_loop(factory: Callable[[], Any]) -> Any:
    """Run ``factory()`` to completion; Ctrl-C (when magpie handles interrupts) cancels it, so the
    coroutine can stop cleanly and return what it has."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        loop = runner.get_loop()
        task = loop.create_task(factory())
        with interrupts.on_interrupt(lambda: loop.call_soon_threadsafe(task.cancel)):
            try:
                return runner.run(_await(task))
            except asyncio.CancelledError:
                if interrupts.received() is None:
                    raise
                raise KeyboardInterrupt from None  # cancelled before it could keep anything


async def _await(task: asyncio.Task[Any]) -> Any:
    return await task
