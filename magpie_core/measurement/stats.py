"""Noise-aware statistics for timings: summaries, confidence intervals, stopping, verdicts.

Timers (plugins) only produce samples; every statistical decision is made here so all devices share one definition of
"stable" and "faster"."""

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
    ``n/2 ± z·√n/2`` covers the true median with probability ``confidence``."""
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
    return math.inf if med <= 0 else (hi - lo) / (2 * Z95 * med)


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

    Returns the samples and the stopping reason: ``"converged"``, ``"max_samples"`` or ``"budget"``."""
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
    #: the measurements cannot decide at the requested effect size (too noisy, too few blocks)
    UNSTABLE = "UNSTABLE"


@dataclass
class Speedup:
    """Baseline time / candidate time: > 1 means the candidate is faster."""

    value: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    reason: str = ""
    #: over blocks: the share of blocks in which one side (its worst process pair) was stalled on its own
    desynchronised: float = 0.0


def decide(point: float, lo: float, hi: float, min_effect: float, noise_floor: float = 0.0) -> tuple[Verdict, str]:
    """The verdict a speedup ``point`` with confidence interval ``[lo, hi]`` supports.

    FASTER (SLOWER): the whole interval beyond ``1 + min_effect`` (below ``1 / (1 + min_effect)``), and
    beyond the run's ``noise_floor`` (how far apart identical work came out, as a fraction) when larger.
    SAME: the whole interval inside ``[1/(1+min_effect), 1+min_effect]`` — no difference that matters.
    UNSTABLE: anything else — the interval reaches past the effect of interest on a side the data
    cannot rule out, or the effect is within the noise floor, so any other answer could be wrong."""
    needed = max(min_effect, noise_floor)
    band_hi, band_lo = 1 + min_effect, 1 / (1 + min_effect)
    if not all(map(math.isfinite, (point, lo, hi))):
        return Verdict.UNSTABLE, "no finite estimate"
    if lo > 1 + needed:
        return Verdict.FASTER, ""
    if hi < 1 / (1 + needed):
        return Verdict.SLOWER, ""
    if lo >= band_lo and hi <= band_hi:
        return Verdict.SAME, ""
    if needed > min_effect and (lo > 1 or hi < 1):
        return Verdict.UNSTABLE, (
            f"{point:.3f}x is within this run's noise floor of {noise_floor:.1%} (identical work came out that far "
            "apart): too noisy to decide"
        )
    return Verdict.UNSTABLE, (
        f"95% CI {lo:.3f}-{hi:.3f} reaches past the {min_effect:.0%} effect of interest: "
        "too noisy to decide (more budget, a quieter machine, or a larger min_effect)"
    )


def speedup(
    baseline_us: Sequence[float],
    candidate_us: Sequence[float],
    *,
    confidence: float = 0.95,
    min_effect: float = 0.02,
    resamples: int = 2000,
    seed: int = 0,
) -> Speedup:
    """Speedup of medians of two independent sample sets, with a bootstrap interval and a verdict.

    Only sound when both sets were taken under the same conditions; a compare uses
    :func:`paired_speedup` over interleaved blocks instead (see docs/kernel-evaluation.md).
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
    verdict, reason = decide(point, lo, hi, min_effect)
    return Speedup(point, lo, hi, verdict, reason)


#: below this many blocks, a t interval on the mean log-ratio; from here on, the median with a sign-test interval
MIN_MEDIAN_BLOCKS = 8


def log_ratio_ci(log_ratios: Sequence[float], *, confidence: float = 0.95) -> tuple[float, float, float]:
    """Centre and confidence interval of per-block log-ratios: (estimate, low, high), in log units.

    Many blocks: the median with its distribution-free interval from order statistics (the sign
    test's), robust to a few disturbed blocks and honest for any shape of noise. Few blocks (compare
    rounds run elsewhere): the mean with Student's t interval. Fewer than two: nan."""
    d = np.asarray(log_ratios, dtype=float)
    n = len(d)
    if n < 2:
        return (float(d[0]) if n else math.nan), math.nan, math.nan
    alpha = (1 - confidence) / 2
    if n >= MIN_MEDIAN_BLOCKS:
        lo, hi = median_ci(np.sort(d), confidence)
        return float(np.median(d)), lo, hi
    half = student_t(1 - alpha, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    mean = float(d.mean())
    return mean, mean - half, mean + half


def student_t(q: float, dof: int) -> float:
    """Quantile ``q`` of Student's t with ``dof`` degrees of freedom (SciPy's, imported on first use)."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, q))


#: a block whose paired ratio is this many times away from the ratio of the two sides' fastest blocks had
#: one side stalled on its own: on an overloaded CPU a launch waits whole scheduler time slices (block
#: medians jump ~9x at a time: 0.18, 1.7, 15 ms for a 0.18 ms matmul), a state that persists per process
#: across adjacent blocks. Load both sides share moves both and stays far below this.
DESYNC_FACTOR = 3.0
#: more desynchronised blocks than this share and the interval over blocks is not trusted: those blocks are
#: neither independent (a process keeps its state) nor about the kernels, so they can carry the median
MAX_DESYNC_SHARE = 0.2


def desynchronised_blocks(
    baseline_blocks: Sequence[float], candidate_blocks: Sequence[float], factor: float = DESYNC_FACTOR
) -> np.ndarray:
    """Which blocks had one side stalled on its own: True where the block's ratio is more than ``factor`` away from
    the ratio of the two sides' fastest blocks. Load only adds time, so each side's fastest block is the closest to
    its own cost and their ratio is the reference a block's ratio should stay near. Load slowing both sides of a
    block cancels here as in the interval; a true difference of any size is in the reference, never a stall."""
    base = np.asarray(baseline_blocks, dtype=float)
    cand = np.asarray(candidate_blocks, dtype=float)
    reference = math.log(float(base.min()) / float(cand.min()))
    return np.abs(np.log(base / cand) - reference) > math.log(factor)


def paired_speedup(
    baseline_blocks: Sequence[float],
    candidate_blocks: Sequence[float],
    *,
    min_effect: float = 0.02,
    confidence: float = 0.95,
    noise_floor: float = 0.0,
) -> Speedup:
    """Speedup from per-block times of the baseline and a candidate measured side by side.

    Block ``b`` of both lists was taken in the same short window, so a change of machine load
    between windows moves both and cancels in the ratio; the interval is over blocks, so load
    that hits one side of a block unevenly widens it instead of biasing the answer. That needs the
    blocks to be independent: when more than :data:`MAX_DESYNC_SHARE` of them had one side stalled
    on its own (:func:`desynchronised_blocks`), the verdict is UNSTABLE whatever the interval says."""
    base = np.asarray(baseline_blocks, dtype=float)
    cand = np.asarray(candidate_blocks, dtype=float)
    if len(base) != len(cand):
        raise ValueError("paired blocks must have the same count")
    centre, lo, hi = log_ratio_ci(np.log(base / cand), confidence=confidence)
    point, low, high = math.exp(centre), math.exp(lo), math.exp(hi)
    if len(base) < 2:
        return Speedup(point, low, high, Verdict.UNSTABLE, f"{len(base)} block(s): no interval")
    stalled = desynchronised_blocks(base, cand)
    share = float(stalled.mean())
    if share > MAX_DESYNC_SHARE:
        return Speedup(point, low, high, Verdict.UNSTABLE, desync_reason(int(stalled.sum()), len(base)), share)
    verdict, reason = decide(point, low, high, min_effect, noise_floor)
    return Speedup(point, low, high, verdict, reason, share)


def desync_reason(stalled: int, blocks: int) -> str:
    """Why blocks with one side stalled on its own leave no verdict (shared by the A/A check's message)."""
    return (
        f"in {stalled} of {blocks} blocks one side (or one of its processes) was stalled on its own (its ratio "
        f"{DESYNC_FACTOR:g}x or more away from that of the two sides' fastest blocks): the machine is overloaded "
        "(launches or threads waiting whole CPU time slices, or another process sharing the device), which, not the "
        "kernels, set those times; too noisy to decide (a quieter machine; a CPU kernel: fewer threads than cores)"
    )


# --- the process as a random effect ----------------------------------------------------------------


@dataclass
class ProcessSpread:
    """How far apart independent worker processes running the same kernel came out, pooled over kernels.

    ``variance`` is of a process's level (log time), ``df`` its degrees of freedom: the sum over kernels of
    (processes - 1). Memory layout, allocator history and placement differ from process to process and can
    move a kernel's time by several per cent (Mytkowicz et al., ASPLOS 2009), so a verdict about the kernel
    must carry this spread, not only the block-to-block noise inside one process.
    """

    variance: float
    df: int

    @property
    def pct(self) -> float:
        """One standard deviation of a process's level, in per cent."""
        return 100 * (math.exp(math.sqrt(self.variance)) - 1) if self.df else math.nan


def process_levels(process_blocks: Sequence[Sequence[float]], reference_log: Sequence[float]) -> list[float]:
    """Each process's level: the median over blocks of its log block time minus the block's reference
    (log units). Subtracting the reference of the same block cancels load shared by the block."""
    ref = np.asarray(reference_log, dtype=float)
    return [float(np.median(np.log(np.asarray(blocks, dtype=float)) - ref)) for blocks in process_blocks]


def pooled_process_spread(levels_per_kernel: Sequence[Sequence[float]], always: int | None = None) -> ProcessSpread:
    """The between-process variance of levels, pooled over every kernel that ran in two processes or more, leaving
    out a kernel whose processes landed far further apart than the others' (:func:`_apart`): that kernel keeps its
    own, larger variance in :func:`hierarchical_speedup`, so only its own verdicts widen. Kernel ``always`` (the
    baseline's identical copy) is never left out: how far apart identical code lands is the machine's spread
    (processes in rare 1x/6.2x states, simulated: left out, identical work got a verdict in 1.9 % of compares, kept
    0.7 %; benchmarks/precision_scale_simulation.py)."""
    groups = [(np.asarray(lv, dtype=float), i == always) for i, lv in enumerate(levels_per_kernel) if len(lv) > 1]
    stats = [(float(g.var(ddof=1)), len(g) - 1) for g, _ in groups]
    kept = [(v, d) for i, (v, d) in enumerate(stats) if groups[i][1] or not _apart(v, d, stats[:i] + stats[i + 1 :])]
    df = sum(d for _, d in kept)
    return ProcessSpread(math.nan, 0) if not df else ProcessSpread(sum(v * d for v, d in kept) / df, df)


#: a kernel's processes landed far further apart than the others' when the ratio of its variance to theirs
#: is beyond this quantile of the F distribution (homogeneous variances cross it once in a thousand)
APART_QUANTILE = 0.999


def _apart(variance: float, dof: int, others: Sequence[tuple[float, int]]) -> bool:
    """An F test of one kernel's between-process variance against the pooled variance of the others."""
    df = sum(d for _, d in others)
    if not df:
        return False
    pooled = sum(v * d for v, d in others) / df
    from scipy.special import fdtri  # the F distribution's quantile

    return variance > pooled * float(fdtri(dof, df, APART_QUANTILE))


def hierarchical_speedup(
    baseline_levels: Sequence[float],
    candidate_levels: Sequence[float],
    spread: ProcessSpread,
    *,
    min_effect: float = 0.02,
    confidence: float = 0.95,
    noise_floor: float = 0.0,
    blocks: tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]] | None = None,
) -> Speedup:
    """Speedup over the baseline of a candidate timed in several worker processes; the interval includes their spread.

    Two-stage model: log time = kernel + process effect + block effect + noise. The block effect cancels in
    each process's level (:func:`process_levels`); a kernel's estimate is the mean of its processes' levels,
    whose variance is the process spread over the number of processes. Each side uses the pooled spread
    (:func:`pooled_process_spread`), or its own when its processes landed unusually far apart; the interval
    is Student's t with Welch-Satterthwaite degrees of freedom. An identical copy's interval therefore
    straddles 1 however the processes landed, and a kernel whose processes disagree is undecided alone.

    ``blocks``: each side's per-block times, process by process; when any baseline/candidate process pair had one
    stalled on its own (:func:`desynchronised_blocks`) in over :data:`MAX_DESYNC_SHARE` of blocks: UNSTABLE. Not per
    kernel: a 2-thread CPU matmul's process on a busy 2-core machine sat at 1x or ~6x for seconds, which the mean of
    two processes shrinks to ~2.5x, under the stall factor (docs/benchmarks/kernelbench_bed.md, "Bursty load")."""
    base = np.asarray(baseline_levels, dtype=float)
    cand = np.asarray(candidate_levels, dtype=float)
    centre = float(base.mean() - cand.mean())
    point = math.exp(centre)
    if spread.df < 1 or not math.isfinite(spread.variance):
        return Speedup(point, math.nan, math.nan, Verdict.UNSTABLE, "one worker process per kernel: no interval")
    (a, df_a), (b, df_b) = _side(base, spread), _side(cand, spread)
    if df_a == df_b == spread.df:  # both sides rest on the one pooled estimate: its degrees of freedom
        df = float(spread.df)
    else:  # one side's own variance, independent of the pool it was left out of: Welch-Satterthwaite
        df = (a + b) ** 2 / (a * a / df_a + b * b / df_b) if a + b > 0 else float(spread.df)
    half = student_t(1 - (1 - confidence) / 2, max(1, math.floor(df))) * math.sqrt(a + b)
    low, high = math.exp(centre - half), math.exp(centre + half)
    stalled_share = 0.0
    if blocks is not None and min(map(len, [*blocks[0], *blocks[1]])) > 1:
        stalled = max((desynchronised_blocks(b, c) for b in blocks[0] for c in blocks[1]), key=np.mean)
        stalled_share = float(stalled.mean())
        if stalled_share > MAX_DESYNC_SHARE:
            reason = desync_reason(int(stalled.sum()), len(stalled))
            return Speedup(point, low, high, Verdict.UNSTABLE, reason, stalled_share)
    verdict, reason = decide(point, low, high, min_effect, noise_floor)
    if verdict == Verdict.UNSTABLE and not noise_floor > min_effect:
        reason = (
            f"95% CI {low:.3f}-{high:.3f} (processes and blocks) reaches past the {min_effect:.0%} effect of "
            f"interest: too noisy to decide (more worker processes, a quieter machine, or a larger min_effect)"
        )
    return Speedup(point, low, high, verdict, reason, stalled_share)


def _side(levels: np.ndarray, spread: ProcessSpread) -> tuple[float, int]:
    """One side's share of the estimate's variance and its degrees of freedom."""
    n = len(levels)
    if n > 1 and _apart(own := float(levels.var(ddof=1)), n - 1, [(spread.variance, spread.df)]):
        return own / n, n - 1
    return spread.variance / n, spread.df
