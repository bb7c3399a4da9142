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
:func:`magpie_core.runtime.interrupts.handling_interrupts`), a point stops at once and
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
from collections.abc import Callable
from typing import Any

import numpy as np

from magpie_benchmark.loadgen.client import RequestResult, StallWatch, build_payload, encode_payload, send_request
from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.http import make_client, new_event_loop
from magpie_benchmark.loadgen.point import LoadResult, LoadSpec, PointEnd, Progress, wait_for_point
from magpie_benchmark.loadgen.replay import measure_replay
from magpie_core.runtime import interrupts

__all__ = ["LoadResult", "LoadSpec", "arrival_offsets", "run_in_loop", "run_load", "run_load_async"]


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
        asyncio.gather(*tasks), tasks, None, time.process_time(), Progress(False, 0, f"{spec.label} warm-up"), watch
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
    progress = Progress(spec.progress, n, spec.label)
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
