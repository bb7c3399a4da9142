"""Noise-aware statistics for timings: summaries, confidence intervals, stopping, verdicts.

Timers (plugins) only produce samples; every statistical decision is made
here so all devices share one definition of "stable" and "faster".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from magpie_core.reports import TimingStats

Z95 = 1.959963984540054


def median_ci(sorted_samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics.

    Uses the normal approximation to the binomial: the interval between ranks
    ``n/2 ± z·√n/2`` covers the true median with probability ``confidence``.
    """
    n = len(sorted_samples)
    if n == 0:
        return math.nan, math.nan
    z = _z(confidence)
    lo = max(math.floor(n / 2 - z * math.sqrt(n) / 2), 0)
    hi = min(math.ceil(n / 2 + z * math.sqrt(n) / 2), n - 1)
    return float(sorted_samples[lo]), float(sorted_samples[hi])


def _z(confidence: float) -> float:
    if abs(confidence - 0.95) < 1e-12:
        return Z95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def rse_of_median(samples: Sequence[float]) -> float:
    """Relative standard error of the median, from the width of its 95% CI."""
    arr = np.sort(np.asarray(samples, dtype=float))
    if len(arr) < 3:
        return math.inf
    lo, hi = median_ci(arr)
    med = float(np.median(arr))
    if med <= 0:
        return math.inf
    return (hi - lo) / (2 * Z95 * med)


def summarize(samples_us: Sequence[float], stop_reason: str | None = None) -> TimingStats:
    arr = np.sort(np.asarray(samples_us, dtype=float))
    if len(arr) == 0:
        raise ValueError("no samples to summarize")
    lo, hi = median_ci(arr)
    return TimingStats(
        median=float(np.median(arr)),
        mean=float(arr.mean()),
        std=float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
        min=float(arr[0]),
        max=float(arr[-1]),
        p5=float(np.percentile(arr, 5)),
        p95=float(np.percentile(arr, 95)),
        ci95_low=lo,
        ci95_high=hi,
        samples=len(arr),
        rse_median=rse_of_median(arr) if len(arr) >= 3 else None,
        stop_reason=stop_reason,
    )


@dataclass
class SamplingSettings:
    """When to stop taking samples. Mirrors the performance config's fields."""

    min_samples: int = 10
    max_samples: int = 1000
    target_rse: float = 0.01
    budget_seconds: float = 10.0


def sample_until_stable(take_sample: Callable[[], float], settings: SamplingSettings) -> tuple[list[float], str]:
    """Call ``take_sample`` until the median is known to ``target_rse``, or limits hit.

    Returns the samples and the stopping reason: ``"converged"``,
    ``"max_samples"`` or ``"budget"``.
    """
    samples: list[float] = []
    deadline = time.perf_counter() + settings.budget_seconds
    check_every = 1
    while True:
        samples.append(take_sample())
        n = len(samples)
        if n >= settings.max_samples:
            return samples, "max_samples"
        if n >= settings.min_samples and n % check_every == 0:
            if rse_of_median(samples) <= settings.target_rse:
                return samples, "converged"
            check_every = max(1, n // 10)  # re-check cost stays O(n log n) overall
        if n >= settings.min_samples and time.perf_counter() >= deadline:
            return samples, "budget"


class Verdict(str, Enum):
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    SAME = "SAME"


@dataclass
class Speedup:
    """Baseline time / candidate time: > 1 means the candidate is faster."""

    value: float
    ci_low: float
    ci_high: float
    verdict: Verdict


def speedup(
    baseline_us: Sequence[float],
    candidate_us: Sequence[float],
    *,
    confidence: float = 0.95,
    min_effect: float = 0.02,
    resamples: int = 2000,
    seed: int = 0,
) -> Speedup:
    """Speedup of medians with a bootstrap confidence interval, and a verdict.

    FASTER (SLOWER) needs the whole interval above (below) 1 *and* an effect
    of at least ``min_effect``: run-to-run drift (clocks, thermals) is not in
    the within-run samples, so tiny but "significant" differences are SAME.
    """
    base = np.asarray(baseline_us, dtype=float)
    cand = np.asarray(candidate_us, dtype=float)
    point = float(np.median(base) / np.median(cand))
    rng = np.random.default_rng(seed)
    base_meds = np.median(rng.choice(base, size=(resamples, len(base)), replace=True), axis=1)
    cand_meds = np.median(rng.choice(cand, size=(resamples, len(cand)), replace=True), axis=1)
    ratios = base_meds / cand_meds
    alpha = (1 - confidence) / 2
    lo, hi = (float(x) for x in np.quantile(ratios, [alpha, 1 - alpha]))
    if lo > 1 and point >= 1 + min_effect:
        verdict = Verdict.FASTER
    elif hi < 1 and point <= 1 / (1 + min_effect):
        verdict = Verdict.SLOWER
    else:
        verdict = Verdict.SAME
    return Speedup(point, lo, hi, verdict)
