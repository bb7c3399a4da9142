"""A futility stopping rule, simulated; NOT shipped (a next step for issue 28's per-candidate time on noisy CPUs).

    python benchmarks/futility_rule_simulation.py

Idea: a candidate whose interval could not be decided however many blocks ran (the spread between processes alone,
block noise subtracted, already makes SAME impossible, and its centre is too close to 1 for FASTER/SLOWER) need not
keep the blocks going; the blocks end once every candidate is clear (the shipped rule) or futile. Output per case:
how often and when the blocks ended early, and the 95 % verdicts at the early stop vs at a fixed 150 blocks.
Measured 2026-12-02 (200 runs each): identical copies with processes 2 % apart end at a median of 30 blocks with
the fixed-length verdicts; the cost is power where the process spread is small (a 5 % loss with processes 0.5 %
apart: SLOWER 128 vs 140 of 200; identical copies called SAME less often: 25 vs 38 with processes 0.5 % apart,
9 vs 14 with none).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from clear_rule_simulation import LENGTH, clear, simulate

from magpie_core.measurement.stats import _student_t
from magpie_core.pipelines.blocked import BlockedTiming

#: (candidates' time ratios to the baseline, process spread, block noise)
CASES = [
    ((1.0,), 0.02, 0.05),
    ((1.0,), 0.005, 0.05),
    ((1.05,), 0.005, 0.05),
    ((1.05,), 0.02, 0.05),
    ((1.04,), 0.0, 0.03),
    ((1.0, 1.5), 0.02, 0.1),
    ((1.0,), 0.0, 0.1),
    ((1.1,), 0.01, 0.1),
]
SHIPPED = clear(0.10, 0.99)


def _level_variance(timing: BlockedTiming) -> float:
    """The mean squared standard error of a process's level: the block noise's share of the spread."""
    reference = np.log(timing.baseline_blocks())
    errors = []
    for values in timing.blocks.values():
        d = np.log(values[: timing.block_count]) - reference
        errors.append((1.25 * np.std(d, ddof=1)) ** 2 / len(d))
    return float(np.mean(errors))


def _futile(timing: BlockedTiming, index: int, min_effect: float = 0.02) -> bool:
    spread = timing.spread()
    if spread.df < 3:
        return False
    noise = _level_variance(timing)
    weight = 1 / len(timing.processes(0)) + 1 / len(timing.processes(index))
    limit = _student_t(0.975, spread.df) * math.sqrt(max(0.0, spread.variance - noise) * weight)
    band = math.log1p(min_effect)
    centre = float(np.mean(timing.levels(0)) - np.mean(timing.levels(index)))
    return limit >= band and abs(centre) + 2 * math.sqrt(noise * weight) < limit + band


def _clear_or_futile(timing: BlockedTiming, index: int) -> bool:
    return SHIPPED(timing, index) or _futile(timing, index)


def main() -> None:
    for ratios, process_sd, block_sd in CASES:
        runs = [simulate(seed, ratios, process_sd, block_sd, _clear_or_futile) for seed in range(200)]
        stops = np.array([r[0] for r in runs])
        early = Counter(v.value for r in runs for v in r[1])
        fixed = Counter(v.value for r in runs for v in r[2])
        ended = 100 * np.mean(stops < LENGTH)
        print(ratios, process_sd, block_sd, f"ended early {ended:.1f} %, median stop {np.median(stops):.0f}")
        print("   early:", dict(early), " fixed:", dict(fixed))


if __name__ == "__main__":
    main()
