"""How often the clear-verdict rule ends a compare's blocks early, and whether its verdicts are the ones a run of
fixed length gives (docs/kernel-evaluation.md, step 4).

    python benchmarks/clear_rule_simulation.py --each                 # as shipped: each clear candidate leaves
    python benchmarks/clear_rule_simulation.py                        # the first version: all at one look
    python benchmarks/clear_rule_simulation.py --line 0.02 --confidence 0.999   # the rejected variant

Simulated compares under the timing model: the baseline, its identical copy and the candidates in two processes
each (process offsets drawn from a normal), a block effect shared by every process of a block, and heavy-tailed
(Student t, 3 df) noise per process and block. The rule is looked at every 5 blocks from the 20th to the 150th, as
`time_in_blocks` does; "wrong" counts a FASTER/SLOWER verdict (95 %) that points the wrong way or names an identical
kernel different, at the early stop and at the fixed length of 150 blocks. With ``--each`` a candidate leaves the
blocks at the first look where the rule holds for it (its verdict is then over the blocks it ran, as in
`BlockedTiming.speedup`), and the run ends once none is left; without it, the run ends at the first look where the
rule holds for every candidate at once.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from magpie_core.measurement.stats import Verdict
from magpie_core.pipelines.blocked import BASELINE_COPY, BlockedTiming

DECIDED = (Verdict.FASTER, Verdict.SLOWER)
LENGTH = 150
#: (candidates' time ratios to the baseline, process spread, block noise)
CASES = [
    ((1.5,), 0.02, 0.05),
    ((1.5,), 0.02, 0.15),
    ((0.8,), 0.02, 0.10),
    ((1.15, 1.3), 0.02, 0.10),
    ((1.0,), 0.01, 0.10),
    ((1.0,), 0.0, 0.10),
    ((1.0,), 0.03, 0.05),
    ((0.5, 1.0), 0.01, 0.10),
    ((0.3, 1.0, 1.0), 0.02, 0.10),
    ((1.05, 0.5), 0.02, 0.10),
]


def verdict(timing: BlockedTiming, index: int, line: float, confidence: float) -> Verdict:
    """A candidate's verdict against the baseline with the given line (min_effect) and confidence."""
    return timing.speedup(index, line, confidence=confidence).verdict


StopRule = Callable[[BlockedTiming, int], bool]


def clear(line: float, confidence: float) -> StopRule:
    """The shipped rule for one candidate: decided past ``line`` at ``confidence``."""
    return lambda timing, index: verdict(timing, index, line, confidence) in DECIDED


def simulate(
    seed: int,
    ratios: tuple[float, ...],
    process_sd: float,
    block_sd: float,
    may_stop: StopRule,
    each: bool = False,
    first_look: int = 20,
) -> tuple[int, list[Verdict], list[Verdict], int, int]:
    """One simulated compare: where the blocks stopped (every candidate ``may_stop``, at once or ``each`` at its
    own look), the 95 % verdicts there and at the fixed length, how many candidates left before the stop, and how
    many identical candidates (ratio 1.0) were decided early (left, or in a run that ended early)."""
    rng = np.random.default_rng(seed)
    truth = {0: 0.0, BASELINE_COPY: 0.0} | {i + 1: math.log(r) for i, r in enumerate(ratios)}
    levels = {(k, p): truth[k] + rng.normal(0, process_sd) for k in truth for p in range(2)}
    shared = rng.normal(0, 0.05, LENGTH)
    blocks = {key: np.exp(3 + lvl + shared + block_sd * rng.standard_t(3, LENGTH)) for key, lvl in levels.items()}
    candidates = range(1, len(ratios) + 1)
    timing, stop = BlockedTiming(baseline=0), LENGTH
    for n in range(first_look, LENGTH + 1, 5):
        timing.blocks = {k: list(v[: timing.decided.get(k[0], n)]) for k, v in blocks.items()}
        undecided = [i for i in candidates if i not in timing.decided]
        leaving = [i for i in undecided if may_stop(timing, i)]
        if each:
            timing.decided |= dict.fromkeys(leaving, n)
        if len(leaving) == len(undecided):
            stop = n
            break
    early = [verdict(timing, i, 0.02, 0.95) for i in candidates]
    left = sum(n < stop for n in timing.decided.values())
    identical_early = sum(ratios[i - 1] == 1.0 and (i in timing.decided or stop < LENGTH) for i in candidates)
    timing.blocks, timing.decided = {k: list(v) for k, v in blocks.items()}, {}
    return stop, early, [verdict(timing, i, 0.02, 0.95) for i in candidates], left, identical_early


def _wrong(verdicts: list[Verdict], ratios: tuple[float, ...]) -> int:
    right = [Verdict.SLOWER if r > 1.02 else Verdict.FASTER if r < 1 / 1.02 else None for r in ratios]
    return sum(v in DECIDED and v != want for v, want in zip(verdicts, right, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--line", type=float, default=0.10, help="how far from 1 every candidate must be")
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--each", action="store_true", help="each clear candidate leaves (as shipped)")
    parser.add_argument("--first-look", type=int, default=20, help="the first block count the rule is looked at")
    args = parser.parse_args()
    print(
        "time ratios | process sd | block sd | ended early % | median stop | candidates that left while others went on "
        "| wrong early % | wrong fixed % | identical decided early (of all identical)"
    )
    for ratios, process_sd, block_sd in CASES:
        rule = clear(args.line, args.confidence)
        runs = [
            simulate(seed, ratios, process_sd, block_sd, rule, args.each, args.first_look) for seed in range(args.runs)
        ]
        stops = np.array([r[0] for r in runs])
        wrong_early = 100 * sum(_wrong(r[1], ratios) for r in runs) / args.runs
        wrong_fixed = 100 * sum(_wrong(r[2], ratios) for r in runs) / args.runs
        print(
            f"{ratios} | {process_sd} | {block_sd} | {100 * np.mean(stops < LENGTH):.1f} | {np.median(stops):.0f} | "
            f"{sum(r[3] for r in runs)} | {wrong_early:.2f} | {wrong_fixed:.2f} | "
            f"{sum(r[4] for r in runs)} of {args.runs * ratios.count(1.0)}"
        )


if __name__ == "__main__":
    main()
