"""The timing method shared by every device: batches, flushes, warm-up, adaptive stopping.

A timer plugin provides one primitive, :meth:`BatchClock.time_batch`: the
device time of ``n`` back-to-back launches taken between two timestamps (for
GPUs: device events). The core decides batch sizes, cache handling and when
to stop, so "a sample" means the same thing on every device.

Why batches: with one launch between two events, host launch latency lands
inside the interval (on an H200 a 14 µs Triton kernel read as 27 µs). A batch
lasting at least ``min_batch_us`` amortises the event overhead.

Why paired flush batches: a cold-cache time needs a flush before *each*
launch. A sample is then ``(T[n×(flush, fn)] − T[n×flush]) / n``, the flush-only
batch taken right next to it so drift cancels.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from magpie_core.stats import SamplingSettings, sample_until_stable

MAX_BATCH = 100_000


class BatchClock(Protocol):
    """What a timer plugin must provide."""

    def time_batch(self, fn: Callable[[], Any] | None, n: int, flush: bool) -> float:
        """Microseconds for ``n`` × (flush if asked, then ``fn`` if given), between two timestamps."""
        ...

    def host_overhead_us(self) -> float | None:
        """Host time per launch seen during the last batch, if the clock knows it."""
        ...


@dataclass
class TimingSettings:
    warmup_ms: float = 25.0
    min_batch_us: float = 1000.0
    flush_cache: bool = True
    sampling: SamplingSettings = field(default_factory=SamplingSettings)

    @classmethod
    def from_performance(cls, perf: Any) -> TimingSettings:
        """Build from a :class:`~magpie_core.config.kernel.PerformanceConfig` (or its dict)."""
        get = perf.get if isinstance(perf, dict) else lambda k, d=None: getattr(perf, k, d)
        return cls(
            warmup_ms=float(get("warmup_ms", 25.0)),
            min_batch_us=float(get("min_batch_us", 1000.0)),
            flush_cache=bool(get("flush_cache", True)),
            sampling=SamplingSettings(
                min_samples=int(get("min_samples", 10)),
                max_samples=int(get("max_samples", 1000)),
                target_rse=float(get("target_rse", 0.01)),
                budget_seconds=float(get("budget_seconds", 10.0)),
            ),
        )


@dataclass
class TimingRun:
    samples_us: list[float]
    stop_reason: str
    batch_size: int
    notes: list[str]


def measure(clock: BatchClock, fn: Callable[[], Any], settings: TimingSettings) -> TimingRun:
    """Warm up, pick a batch size, then sample per-launch times until stable."""
    notes: list[str] = []
    # Warm-up: compile caches, clocks ramping, allocator growth.
    deadline = time.perf_counter() + settings.warmup_ms / 1000
    single = clock.time_batch(fn, 1, False)
    while time.perf_counter() < deadline:
        single = clock.time_batch(fn, 1, False)
    per_launch = max(clock.time_batch(fn, 4, False) / 4, 1e-3)
    batch = int(min(MAX_BATCH, max(1, math.ceil(settings.min_batch_us / per_launch))))

    if settings.flush_cache:

        def take() -> float:
            with_fn = clock.time_batch(fn, batch, True)
            flush_only = clock.time_batch(None, batch, True)
            return max((with_fn - flush_only) / batch, 0.0)

        notes.append(f"cold cache: flush before every launch, flush time subtracted (batches of {batch})")
    else:

        def take() -> float:
            return clock.time_batch(fn, batch, False) / batch

        notes.append(f"warm cache: {batch} back-to-back launches per sample")

    samples, reason = sample_until_stable(take, settings.sampling)
    host = clock.host_overhead_us()
    if host is not None and samples:
        device = sorted(samples)[len(samples) // 2]
        if host > device:
            notes.append(
                f"launch-bound: the host needs {host:.1f} us per launch, the device {device:.1f} us; "
                "device time is reported, end-to-end calls will be slower"
            )
    del single
    return TimingRun(samples_us=samples, stop_reason=reason, batch_size=batch, notes=notes)
