"""The timing method shared by every device: batches, cold caches, warm-up, adaptive stopping.

A timer plugin provides one primitive, :meth:`BatchClock.time_batch`: the
time of ``n`` back-to-back launches taken between two timestamps (for GPUs:
device events). The core decides batch sizes and when to stop, so "a sample"
means the same thing on every device.

Why batches: with one launch between two events, host launch latency lands
inside the interval (on an H200 a 14 µs kernel read as 27-31 µs). A batch
lasting at least ``min_batch_us`` amortises event overhead and resolution.

Why rotating inputs instead of a flush kernel: a cold-cache time needs the
inputs out of cache before *each* launch. Launch ``i`` of a batch uses input
copy ``i mod k``, with ``k`` copies together at least twice the last-level
cache, so every launch reads its inputs from memory — no flush kernel inside
the interval and nothing to subtract.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from magpie_core.stats import SamplingSettings, sample_until_stable

MAX_BATCH = 100_000
#: launch(i): run the kernel on rotating input copy ``i mod k``
Launch = Callable[[int], Any]


class BatchClock(Protocol):
    """What a timer plugin must provide."""

    #: bytes of the cache that cold-cache timing must defeat (LLC / L2)
    cache_bytes: int

    def time_batch(self, launch: Launch, n: int) -> float:
        """Microseconds for ``launch(0) … launch(n-1)`` between two timestamps."""
        ...

    def host_overhead_us(self) -> float | None:
        """Host time per launch seen during the last batch, if the clock knows it."""
        ...


@dataclass
class TimingSettings:
    warmup_ms: float = 25.0
    min_batch_us: float = 1000.0
    flush_cache: bool = True
    max_input_copies: int = 1024
    sampling: SamplingSettings = field(default_factory=SamplingSettings)

    @classmethod
    def from_performance(cls, perf: Any) -> TimingSettings:
        """Build from a :class:`~magpie_core.config.kernel.PerformanceConfig` (or its dict)."""

        def get(key: str, default: Any) -> Any:
            return perf.get(key, default) if isinstance(perf, dict) else getattr(perf, key, default)

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


def input_copies(input_bytes: int, cache_bytes: int, settings: TimingSettings) -> int:
    """How many rotating input copies make every launch cold (1 for warm-cache timing)."""
    if not settings.flush_cache or input_bytes <= 0:
        return 1
    return int(min(settings.max_input_copies, max(2, math.ceil(2 * cache_bytes / input_bytes))))


@dataclass
class TimingRun:
    samples_us: list[float]
    stop_reason: str
    batch_size: int
    notes: list[str]


def measure(clock: BatchClock, launch: Launch, settings: TimingSettings, copies: int = 1) -> TimingRun:
    """Warm up, pick a batch size, then sample per-launch times until stable."""
    notes: list[str] = []
    deadline = time.perf_counter() + settings.warmup_ms / 1000
    clock.time_batch(launch, max(1, copies))
    while time.perf_counter() < deadline:
        clock.time_batch(launch, 1)
    per_launch = max(clock.time_batch(launch, 4) / 4, 1e-3)
    batch = int(min(MAX_BATCH, max(1, math.ceil(settings.min_batch_us / per_launch))))

    def take() -> float:
        return clock.time_batch(launch, batch) / batch

    samples, reason = sample_until_stable(take, settings.sampling)
    if copies > 1:
        notes.append(f"cold cache: {copies} rotating input copies (>= 2x the {clock.cache_bytes >> 20} MiB cache)")
    else:
        notes.append("warm cache: the same inputs every launch")
    host = clock.host_overhead_us()
    if host is not None and samples:
        device = sorted(samples)[len(samples) // 2]
        if host > device:
            notes.append(
                f"launch-bound: the host needs {host:.1f} us per launch, the device {device:.1f} us; "
                "device time is reported, end-to-end calls will be slower"
            )
    notes.append(f"{batch} launches per sample between two timestamps")
    return TimingRun(samples_us=samples, stop_reason=reason, batch_size=batch, notes=notes)
