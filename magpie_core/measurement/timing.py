"""The timing method shared by every device: batches, cold caches, warm-up, adaptive stopping.

A timer plugin provides one primitive, :meth:`BatchClock.time_batch`: the time of ``n`` back-to-back launches taken
between two timestamps (for GPUs: device events). The core decides batch sizes and when to stop, so "a sample" means the
same thing on every device.

Why batches: with one launch between two events, host launch latency lands inside the interval (on an H200 a 14 µs
kernel read as 27-31 µs). A batch lasting at least ``min_batch_us`` amortises event overhead and resolution.

Why rotating inputs instead of a flush kernel: a cold-cache time needs the inputs out of cache before *each* launch.
Launch ``i`` of a batch uses input copy ``i mod k``, with ``k`` copies together at least twice the last-level cache, so
every launch reads its inputs from memory — no flush kernel inside the interval and nothing to subtract."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from magpie_core.measurement.stats import SamplingSettings, sample_until_stable

if TYPE_CHECKING:
    from magpie_core.reports import EvaluationOutcome

MAX_BATCH = 100_000
#: launch(i): run the kernel once (``i``: its place in the batch); the backend rotates its input copies
Launch = Callable[[int], Any]


class BatchClock(Protocol):
    """What a timer plugin must provide. A harness may watch a live clock's attributes for changes made by the code it
    times: a clock that updates some of its own names them in a ``changing`` class attribute (a tuple of names)."""

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
    #: memory the rotating copies of one process may take (0: no cap); a compare shares half the free memory out
    max_copy_bytes: int = 0
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
            max_copy_bytes=int(get("copy_memory_mib", None) or 0) << 20,
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
    cap = settings.max_copy_bytes // input_bytes if settings.max_copy_bytes else settings.max_input_copies
    return int(max(2, min(settings.max_input_copies, cap, math.ceil(2 * cache_bytes / input_bytes))))


@dataclass
class TimingRun:
    samples_us: list[float]
    stop_reason: str
    batch_size: int
    notes: list[str]


class BatchSampler:
    """Per-launch times of one kernel, a batch of launches per sample: warmed up, batch size chosen.

    :func:`measure` samples it until the median is stable; a compare's timing session
    (:class:`TimingSession`) asks it for a few samples at a time, block after block.
    """

    def __init__(self, clock: BatchClock, launch: Launch, settings: TimingSettings, copies: int = 1) -> None:
        self.clock, self.launch, self.copies = clock, launch, copies
        self.capped = 0 < settings.max_copy_bytes < 2 * clock.cache_bytes
        # warm-up for warmup_ms, not a pass over every input copy: the copies were written when they were
        # made, so a first read is no colder than a later one, and a pass over 1,024 copies took minutes on a
        # loaded 2-core machine
        deadline = time.perf_counter() + settings.warmup_ms / 1000
        clock.time_batch(launch, 1)
        while time.perf_counter() < deadline:
            clock.time_batch(launch, 1)
        # the fastest of three estimates: one taken while the machine was busy would make batches too
        # short, and short batches carry more per-batch overhead (a comparison across batch sizes is biased)
        per_launch = max(min(clock.time_batch(launch, 4) / 4 for _ in range(3)), 1e-3)
        self.batch = int(min(MAX_BATCH, max(1, math.ceil(settings.min_batch_us / per_launch))))

    def sample(self, launch: Launch | None = None) -> float:
        """One batch's time per launch (``launch``: this batch's own launches, else the sampler's)."""
        batch = self.batch  # read once: the launches timed are the launches divided by, whatever a kernel changes
        return self.clock.time_batch(launch or self.launch, batch) / batch

    def notes(self, samples: list[float]) -> list[str]:
        """What the reader of these samples must know: cache state, launch-boundness, batch size."""
        notes: list[str] = []
        if self.copies > 1:
            limit = "within copy_memory_mib, under" if self.capped else ">="
            cache_mib = self.clock.cache_bytes >> 20
            notes.append(f"cold cache: {self.copies} rotating input copies ({limit} 2x the {cache_mib} MiB cache)")
        else:
            notes.append("warm cache: the same inputs every launch")
        host = self.clock.host_overhead_us()
        if host is not None and samples:
            device = sorted(samples)[len(samples) // 2]
            if host > device:
                notes.append(
                    f"launch-bound: the host needs {host:.1f} us per launch, the device {device:.1f} us; "
                    "device time is reported, end-to-end calls will be slower"
                )
        notes.append(f"{self.batch} launches per sample between two timestamps")
        return notes


class TimingSession(Protocol):
    """A kernel kept ready for timing in its worker process, sampled a block at a time.

    Opening it loads the kernel (workers open side by side); :meth:`check` proves it correct in this same
    process; :meth:`prepare` then places its inputs, warms it up and picks its batch size, one worker at a
    time, so warm-ups never compete.
    """

    def check(self) -> EvaluationOutcome:
        """Correctness of the kernel, in this process (performance: skipped, timed in blocks)."""
        ...

    def prepare(self) -> None:
        """Warm up and choose the batch size (called once, while no other candidate runs)."""
        ...

    def sample(self, count: int, slot: int | None = None) -> list[float]:
        """``count`` per-launch times in microseconds, one batch of launches each (``slot``: a secret seed)."""
        ...

    def info(self) -> dict[str, Any]:
        """``batch_size``, ``notes`` (as :meth:`BatchSampler.notes`) and anything the backend adds."""
        ...


class SamplerSession:
    """The :class:`TimingSession` of any backend that can build a :class:`BatchSampler`."""

    def __init__(
        self, make_sampler: Callable[[], BatchSampler], notes: list[str] | None = None, meaningful: bool = True
    ) -> None:
        self.make_sampler = make_sampler
        self.extra_notes = list(notes or [])
        self.meaningful = meaningful
        self.taken: list[float] = []
        self._sampler: BatchSampler | None = None

    def prepare(self) -> None:
        self._sampler = self.make_sampler()

    @property
    def sampler(self) -> BatchSampler:
        if self._sampler is None:
            self.prepare()
        assert self._sampler is not None
        return self._sampler

    def sample(self, count: int, slot: int | None = None) -> list[float]:
        # one untimed launch first: after waiting for its turn, the device queue and the thread pool
        # are cold, and that cost belongs to no candidate
        self.sampler.clock.time_batch(self.sampler.launch, 1)
        got = [self.sampler.sample() for _ in range(max(1, count))]
        self.taken.extend(got[: max(0, 64 - len(self.taken))])  # enough for the notes' median, not the run
        return got

    def info(self) -> dict[str, Any]:
        if self._sampler is None:
            return {"timing_meaningful": self.meaningful, "notes": list(self.extra_notes)}
        return {
            "batch_size": self._sampler.batch,
            "notes": [*self.extra_notes, *self._sampler.notes(self.taken)],
            "timing_meaningful": self.meaningful,
        }


def measure(clock: BatchClock, launch: Launch, settings: TimingSettings, copies: int = 1) -> TimingRun:
    """Warm up, pick a batch size, then sample per-launch times until stable."""
    sampler = BatchSampler(clock, launch, settings, copies)
    samples, reason = sample_until_stable(sampler.sample, settings.sampling)
    return TimingRun(samples_us=samples, stop_reason=reason, batch_size=sampler.batch, notes=sampler.notes(samples))
