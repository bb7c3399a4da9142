"""Drive a list of requests at a target rate and concurrency, and check the client kept up.

Arrival times are drawn up front: gaps from a gamma distribution with shape
``burstiness`` and mean ``1/rate`` (``burstiness = 1`` is a Poisson
process), rescaled so the last arrival lands at ``n / rate``; ``rate = inf``
sends everything at once. A request whose arrival comes waits for a
concurrency slot when ``max_concurrency`` is set; its TTFT clock starts when
it is sent. Warm-up requests run first and are left out of every number.
Each request has a total deadline (``request_deadline_s``): a stream that never
ends fails that request, not the run. Interrupted (Ctrl-C under
:func:`magpie_core.interrupts.handling_interrupts`), a point stops at once and
keeps the requests that finished; the others are left out and counted.

Client self-checks: *schedule lag* is how late each request was handed out
compared with its planned arrival (a busy client shows up here), and the
achieved rate is the number of requests over the span of their dispatches.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magpie_benchmark.loadgen.client import Endpoint, RequestResult, build_payload, encode_payload, send_request
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


class _Progress:
    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self._progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(label or "requests", total=total)

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


async def run_load_async(spec: LoadSpec) -> LoadResult:
    """Run one load point on the running event loop."""
    concurrency = spec.max_concurrency
    client = make_client(spec.base_url, concurrency, spec.request_timeout_s)
    try:
        warmup_failed = 0
        if spec.warmup_requests > 0 and spec.requests:
            sem = asyncio.Semaphore(concurrency or spec.warmup_requests)

            async def warm(i: int) -> RequestResult:
                req = spec.requests[i % len(spec.requests)]
                async with sem:
                    payload = build_payload(
                        spec.endpoint, spec.model, req, ignore_eos=spec.ignore_eos, extra_body=spec.extra_body
                    )
                    return await send_request(
                        client, spec.endpoint, encode_payload(payload), req, spec.headers, spec.request_deadline_s
                    )

            try:
                warm_results = await asyncio.gather(*(warm(i) for i in range(spec.warmup_requests)))
            except asyncio.CancelledError:
                if not _our_interrupt():
                    raise
                return LoadResult([], 0.0, client.clock, interrupted=True, unfinished=len(spec.requests))
            warmup_failed = sum(not r.success for r in warm_results)
        if spec.trace is not None:
            from magpie_benchmark.loadgen.replay import measure_replay  # replay builds on this module

            return await measure_replay(spec, spec.trace, client, warmup_failed)
        return await _measure(spec, client, client.clock, warmup_failed)
    finally:
        await client.aclose()


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
    results: list[RequestResult | None] = [None] * n
    lags: list[float] = []
    dispatched: list[float] = []

    async def one(i: int, dispatch: float, planned: float) -> None:
        async with sem:  # type: ignore[union-attr]
            res = await send_request(
                client, spec.endpoint, payloads[i], spec.requests[i], spec.headers, spec.request_deadline_s
            )
        res.scheduled_time = planned
        res.dispatch_time = dispatch
        results[i] = res
        progress.advance()

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

    end, cpu_used, timed_out, interrupted = await wait_for_point(
        everything(), tasks, spec.point_timeout_s, cpu_start, progress
    )
    final: list[RequestResult] = []
    for i, r in enumerate(results):
        if r is None and interrupted:
            continue
        if r is None:
            r = RequestResult(
                prompt_len=spec.requests[i].prompt_len,
                expected_output_len=spec.requests[i].expected_output_len,
                error=f"not finished when the point timed out after {spec.point_timeout_s} s",
                error_kind="point_timeout",
            )
        final.append(r)
    achieved = None
    if math.isfinite(spec.request_rate) and dispatched and dispatched[-1] > start:
        # planned: the last of n arrivals lands at n / rate
        achieved = len(dispatched) / (dispatched[-1] - start)
    return LoadResult(
        results=final,
        duration_s=end - start,
        client_cpu_s=cpu_used,
        clock=clock,
        schedule_lag_s=lags,
        achieved_rate=achieved,
        target_rate=spec.request_rate if math.isfinite(spec.request_rate) else None,
        warmup_failed=warmup_failed,
        timed_out=timed_out,
        started_at=start,
        interrupted=interrupted,
        unfinished=n - len(final),
    )


async def wait_for_point(
    work: Awaitable[Any],
    tasks: list[asyncio.Task[Any]],
    timeout_s: float,
    cpu_start: float,
    progress: _Progress,
) -> tuple[float, float, bool, bool]:
    """Await a point's ``work`` under its timeout: (end, client CPU s, timed out, interrupted).

    The clock stops before unfinished ``tasks`` are cancelled (their cancellation is not load), and a Ctrl-C that
    magpie's interrupt handling raised ends the point like a timeout; any other cancellation propagates."""
    timed_out = interrupted = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                await work
        except TimeoutError:
            timed_out = True
        except asyncio.CancelledError:
            if not _our_interrupt():
                raise
            interrupted = True
        end = time.perf_counter()
        cpu_used = time.process_time() - cpu_start
        if timed_out or interrupted:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        progress.close()  # after the clock stopped: stopping the progress display can take a refresh period
    return end, cpu_used, timed_out, interrupted


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
