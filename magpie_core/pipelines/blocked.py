"""Timing a compare in short interleaved blocks, so a busy machine widens the answer instead of biasing it.

Every correct candidate is kept ready in its own long-lived timing worker
(:mod:`magpie_core.timing_workers`), and so is a second, independent instance of the baseline
(the A/A worker: its own process, inputs and batch size). A *block* gives each of them one short
*slot* (a few batches, ~``slot_ms``) in a fresh random order. Blocks repeat until the timing
budget is spent or every candidate's speedup is known precisely enough.

Because the machine's state is roughly constant within a block, each candidate's speedup is
computed from **per-block paired ratios** against the baseline of the same block
(:func:`magpie_core.stats.paired_speedup`): a load change between blocks moves both sides and
cancels; load that hits one slot of a block widens the interval over blocks. The A/A worker
measures the run's own noise floor — everything that can make two processes running identical
work disagree — and no candidate is called FASTER or SLOWER by less than that floor; when the two
baselines disagree by more than the effect of interest, every verdict is UNSTABLE.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magpie_core.stats import MAX_DESYNC_SHARE, Verdict, desync_reason, paired_speedup
from magpie_core.timing_workers import TimingWorker, TimingWorkerError

#: the key of the baseline's second, independent instance (the A/A worker) in a block
AA = -1
SLOT_MS = 25.0
MIN_BLOCKS = 20
MAX_BLOCKS = 5000
PRECISION_CHECK_EVERY = 5
#: the baseline's slowest fifth of blocks (from its 80th percentile, the share of blocks the desynchronised
#: rule tolerates) this far above its fastest (5th percentile), in %: more than load shared fairly between a
#: few processes does (a few x), as much as launches waiting whole scheduler time slices do (~9x a step): the
#: time-slice regime, where a process keeps its stalled state across blocks, so no verdict holds
MAX_DRIFT_PCT = 400.0


@dataclass
class BlockPlan:
    budget_s: float
    min_effect: float
    target_rse: float = 0.01
    slot_ms: float = SLOT_MS
    min_blocks: int = MIN_BLOCKS
    max_blocks: int = MAX_BLOCKS
    timeout_s: float = 300.0
    seed: int = 0


@dataclass
class BlockedTiming:
    """What the blocks measured: per-block medians and every sample, per candidate index."""

    baseline: int
    blocks: dict[int, list[float]] = field(default_factory=dict)
    samples: dict[int, list[float]] = field(default_factory=dict)
    spreads: list[float] = field(default_factory=list)  # the baseline's within-slot spread, per slot
    failed: dict[int, str] = field(default_factory=dict)
    elapsed_s: float = 0.0
    load_before: float | None = None
    load_after: float | None = None
    #: stopped by Ctrl-C: the blocks completed before it are kept, the block in progress is not
    interrupted: bool = False

    @property
    def block_count(self) -> int:
        return len(self.blocks.get(self.baseline, []))

    def baseline_blocks(self) -> list[float]:
        """The baseline's time per block: the geometric mean of its two instances (or the one left)."""
        if AA not in self.blocks:
            return list(self.blocks[self.baseline])
        a, b = np.asarray(self.blocks[self.baseline]), np.asarray(self.blocks[AA])
        return list(np.sqrt(a * b))


def time_in_blocks(workers: dict[int, TimingWorker], baseline: int, plan: BlockPlan) -> BlockedTiming:
    """Run blocks over ``workers`` (candidate index -> its timing worker; :data:`AA`: the baseline's
    second instance, if any) until budget or precision."""
    result = BlockedTiming(baseline=baseline, load_before=_load())
    live = dict(workers)
    counts = _samples_per_slot(live, plan, result)
    result.blocks = {key: [] for key in live}
    result.samples = {key: [] for key in live}
    rng = random.Random(plan.seed)
    start = time.monotonic()
    try:
        while baseline in live and result.block_count < plan.max_blocks:
            block = _one_block(live, counts, plan, rng, result)
            for key, value in block.items():
                result.blocks[key].append(value)
            result.elapsed_s = time.monotonic() - start
            if result.block_count >= plan.min_blocks and (
                result.elapsed_s >= plan.budget_s or _precise_enough(result, live, plan)
            ):
                break
    except KeyboardInterrupt:
        result.interrupted = True
        _drop_partial_block(result)
    result.load_after = _load()
    return result


def _drop_partial_block(result: BlockedTiming) -> None:
    """An interrupted block is cut to the length of the complete ones (its samples stay in ``samples``)."""
    n = min((len(v) for v in result.blocks.values()), default=0)
    for key in result.blocks:
        del result.blocks[key][n:]


def _samples_per_slot(live: dict[int, TimingWorker], plan: BlockPlan, result: BlockedTiming) -> dict[int, int]:
    """How many samples fill one slot of ``slot_ms``, from a short probe of each worker."""
    counts: dict[int, int] = {}
    for key, worker in list(live.items()):
        try:
            probe = worker.sample(2, plan.timeout_s)
        except TimingWorkerError as exc:
            _drop(live, key, str(exc), result)
            continue
        per_sample_us = max(float(np.median(probe)) * _batch(worker), 1.0)
        counts[key] = int(min(200, max(2, round(plan.slot_ms * 1000 / per_sample_us))))
    return counts


def _batch(worker: TimingWorker) -> int:
    return int(worker.info.get("batch_size") or 1)


def _one_block(
    live: dict[int, TimingWorker], counts: dict[int, int], plan: BlockPlan, rng: random.Random, result: BlockedTiming
) -> dict[int, float]:
    """One slot per live key in random order; the block's median per key (a failed key is dropped)."""
    order = list(live)
    rng.shuffle(order)
    block: dict[int, float] = {}
    for key in order:
        if key not in live:  # the baseline failed earlier in this block
            continue
        try:
            got = live[key].sample(counts[key], plan.timeout_s)
        except TimingWorkerError as exc:
            _drop(live, key, str(exc), result)
            continue
        block[key] = float(np.median(got))
        result.samples[key].extend(got)
        if key in (result.baseline, AA):
            result.spreads.append(_spread(got))
    return {key: value for key, value in block.items() if key in live}


def _drop(live: dict[int, TimingWorker], key: int, why: str, result: BlockedTiming) -> None:
    """A candidate whose worker failed leaves the blocks (its earlier blocks are not used)."""
    result.failed[key] = why
    live.pop(key, None)
    result.blocks.pop(key, None)


def _spread(samples: list[float]) -> float:
    q25, q50, q75 = np.percentile(samples, [25, 50, 75])
    return float((q75 - q25) / q50) if q50 > 0 else math.inf


def _precise_enough(result: BlockedTiming, live: dict[int, TimingWorker], plan: BlockPlan) -> bool:
    """Every candidate's log-ratio known to ``target_rse`` (a precision rule: it ignores which way they point)."""
    if result.block_count % PRECISION_CHECK_EVERY:
        return False
    base = np.log(result.baseline_blocks())
    for key in live:
        if key in (result.baseline, AA):
            continue
        d = base - np.log(result.blocks[key])
        half_width = 1.96 * 1.25 * float(np.std(d, ddof=1)) / math.sqrt(len(d))  # 1.25: the median's efficiency
        if half_width > plan.target_rse:
            return False
    return True


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


# --- what the blocks say ---------------------------------------------------------------------------


def stability(result: BlockedTiming, min_effect: float) -> dict[str, Any]:
    """The run's own noise: A/A check, noise floor, drift, within-slot spread, machine load — and a verdict on it."""
    if AA in result.blocks and result.block_count > 1:
        aa = paired_speedup(result.blocks[result.baseline], result.blocks[AA], min_effect=min_effect)
        # how far identical work landed apart: the A/A interval's far end, as a fraction
        floor_pct = 100 * (math.exp(max(abs(math.log(aa.ci_low)), abs(math.log(aa.ci_high)))) - 1)
    else:
        aa, floor_pct = None, math.nan
    base = np.asarray(result.baseline_blocks())
    drift_pct = _drift_pct(base, 95)
    slow_fifth_pct = _drift_pct(base, 100 * (1 - MAX_DESYNC_SHARE))
    info: dict[str, Any] = {
        "design": "interleaved blocks, paired per-block ratios",
        "blocks": result.block_count,
        "elapsed_s": round(result.elapsed_s, 3),
        "aa_speedup": aa.value if aa else None,
        "aa_ci95": [aa.ci_low, aa.ci_high] if aa else None,
        "aa_verdict": aa.verdict.value if aa else None,
        "noise_floor_pct": floor_pct,
        "drift_pct": drift_pct,
        "slow_blocks_drift_pct": slow_fifth_pct,
        "within_slot_spread_pct": 100 * float(np.median(result.spreads)) if result.spreads else None,
        # blocks where one baseline instance was stalled on its own: the time-slice regime of an overloaded CPU
        "aa_desynchronised_pct": 100 * aa.desynchronised if aa else None,
        "load_average": [result.load_before, result.load_after],
        "cpus": os.cpu_count(),
        "unstable": bool(
            slow_fifth_pct > MAX_DRIFT_PCT
            or (aa and (aa.verdict in (Verdict.FASTER, Verdict.SLOWER) or aa.desynchronised > MAX_DESYNC_SHARE))
        ),
    }
    info["message"] = _stability_message(info, min_effect)
    return info


def _drift_pct(blocks: np.ndarray, upper_percentile: float) -> float:
    """How much slower the baseline's blocks at ``upper_percentile`` were than its fastest (5th percentile), in %."""
    if len(blocks) < 2:
        return 0.0
    return 100 * (float(np.percentile(blocks, upper_percentile) / np.percentile(blocks, 5)) - 1)


def _stability_message(info: dict[str, Any], min_effect: float) -> str:
    busy = (
        f"load average {info['load_average'][0]:.1f} on {info['cpus']} CPUs, "
        if info["load_average"][0] is not None
        else ""
    )
    facts = f"{busy}drift {info['drift_pct']:.0f} %, noise floor {info['noise_floor_pct']:.1f} %"
    if info["slow_blocks_drift_pct"] > MAX_DRIFT_PCT:
        return (
            f"UNSTABLE: the baseline's slowest {MAX_DESYNC_SHARE:.0%} of blocks took "
            f"{info['slow_blocks_drift_pct'] / 100 + 1:.0f}x or more its fastest ({facts}): "
            "the CPU is overloaded and launches wait whole scheduler time slices, in a state each process keeps "
            "across blocks, so the blocks are not independent and no verdict is trusted (a quieter machine)"
        )
    if info["aa_verdict"] is None:
        return f"no A/A check (the baseline's second instance failed); {facts}"
    if info["unstable"] and (info["aa_desynchronised_pct"] or 0) > 100 * MAX_DESYNC_SHARE:
        stalled = round(info["aa_desynchronised_pct"] * info["blocks"] / 100)
        return (
            "UNSTABLE: two instances of the baseline timed in the same blocks: "
            f"{desync_reason(stalled, info['blocks'])} ({facts}); identical work does not measure identical here, "
            "so no verdict is trusted"
        )
    if info["unstable"]:
        lo, hi = info["aa_ci95"]
        return (
            f"UNSTABLE: two instances of the baseline timed in the same blocks came out {info['aa_speedup']:.3f}x "
            f"apart (95% CI {lo:.3f}-{hi:.3f}; {facts}): identical work does not measure identical here, "
            "so no verdict is trusted"
        )
    if info["noise_floor_pct"] > 100 * min_effect:
        return (
            f"the machine was busy ({facts}): differences under {info['noise_floor_pct']:.0f} % cannot be told "
            f"apart from noise at min_effect {min_effect:.0%}; consider a quieter machine, a longer budget_seconds "
            "or a larger min_effect"
        )
    return f"stable ({facts}, {info['blocks']} blocks)"
