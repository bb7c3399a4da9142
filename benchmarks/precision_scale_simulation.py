"""The precision stopping rule with a robust scale, simulated; NOT shipped (issue 28's per-candidate time on CPUs).

    python benchmarks/precision_scale_simulation.py                 # 1000 runs per case, ~2 min
    python benchmarks/precision_scale_simulation.py --report R.json  # and a real compare's blocks, replayed

Why it was tried: `_precise_enough` (magpie_core/pipelines/blocked.py) ends the blocks once every process's level
(a median over blocks) is known to half the spread between processes, its standard error taken from the plain SD of
the process's log ratios to the baseline. On the quiet 2-core VM a few stalled blocks, which the median ignores,
made the worst process's SD 0.36-0.51 against a robust scale (1.4826 MAD) of 0.08-0.10, so a 9-candidate compare
with identical copies among the candidates ran to its budget (83-99 blocks, 19-30 s); with the robust scale it ended
at the 20th block (10.3-10.5 s, 0.86 s per extra candidate, the same verdicts; measured 2026-12-03).

Why it is not shipped: under processes that sit in a 1x or 6.2x state for tens of blocks (each its own, as the
bursty-load runs showed, but switching rarely), the plain SD sees a switch as it begins and keeps the blocks going
until the stall checks can see it; the robust scale stops at the 20th block regardless, and identical work was
called FASTER/SLOWER about twice as often (1000 runs per switch rate, 2026-12-03: per block 0.01: 19 -> 35; 0.02:
7 -> 19; 0.04: 0 -> 9; 0.08: 0 -> 1; 0.2 and quiet: 0 -> 0). A guard (no stop while any process pair had a stalled
block among the last 5) ran to 150 blocks at most rates and still gave 13 and 28 wrong at 0.02 and 0.01. Since
magpie's identical copy always stays in the pooled spread (`pooled_process_spread`'s ``always``, found with this
script): plain SD 7, 3, 0 and robust 17, 9, 3 wrong at 0.01, 0.02, 0.04 (data/precision_scale_2026-12-03/).

Model per run: baseline, its copy (BASELINE_COPY), an identical candidate and an 8x-work one, 2 processes each; a
process offset (5 % SD), load shared by a block (1x or 1.3x), 2 % noise per block, and each process's own two-state
slow-down flipping with the given probability per block (no flips: the quiet case). Looks every 5 blocks from the
20th up to 150, as `time_in_blocks`; verdicts at min_effect 25 % as in the Ray fan-out test ("U" prefix: the run's
stability check called it unstable).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from magpie_core.measurement.stats import desynchronised_blocks
from magpie_core.pipelines import blocked
from magpie_core.pipelines.blocked import BASELINE_COPY, BlockedTiming, BlockPlan, stability
from magpie_core.pipelines.verdicts import noise_floor
from tests.helpers.process_states import two_states

LENGTH = 150
Rule = Callable[[BlockedTiming, BlockPlan], bool]


def _mad_se(log_ratios: np.ndarray) -> float:
    """The level's standard error from the robust scale (1.4826 MAD) instead of the plain SD."""
    return 1.25 * 1.4826 * float(np.median(np.abs(log_ratios - np.median(log_ratios)))) / math.sqrt(len(log_ratios))


@contextmanager
def _level_se(se: Callable[[np.ndarray], float] | None) -> Iterator[None]:
    """The shipped `_precise_enough`, with its level standard error swapped for ``se`` (None: as shipped)."""
    shipped = blocked._level_se
    blocked._level_se = se or shipped
    try:
        yield
    finally:
        blocked._level_se = shipped


def precise(se: Callable[[np.ndarray], float] | None) -> Rule:
    def rule(result: BlockedTiming, plan: BlockPlan) -> bool:
        with _level_se(se):
            return blocked._precise_enough(result, plan)

    return rule


def guarded(result: BlockedTiming, plan: BlockPlan) -> bool:
    """The robust rule, and no process pair with a stalled block among the last 5."""
    if not precise(_mad_se)(result, plan):
        return False
    base = result.process_blocks(result.baseline)
    candidates = [i for i in result.indices() if i != result.baseline and i not in result.decided]
    pairs = ((b, c) for i in candidates for b, c in itertools.product(base, result.process_blocks(i)))
    return not any(desynchronised_blocks(b, c)[-5:].any() for b, c in pairs)


def run(seed: int, switch: float | None, rule: Rule) -> tuple[int, list[str]]:
    """One simulated compare: where the blocks stopped, and the identical and 8x candidates' verdicts there."""
    rng = np.random.default_rng(seed)
    work = {0: 1.0, 1: 1.0, 2: 8.0, BASELINE_COPY: 1.0}
    shared = rng.choice([1.0, 1.0, 1.3], size=LENGTH)
    blocks = {
        (i, p): 53
        * cost
        * shared
        * (1.0 if switch is None else two_states(rng, LENGTH, switch))
        * rng.lognormal(0, 0.02, LENGTH)
        * math.exp(rng.normal(0, 0.05))
        for i, cost in work.items()
        for p in range(2)
    }
    plan, timing, stop = BlockPlan(budget_s=60, min_effect=0.25), BlockedTiming(baseline=0), LENGTH
    for n in range(20, LENGTH + 1, 5):
        timing.blocks = {k: list(v[:n]) for k, v in blocks.items()}
        if rule(timing, plan):
            stop = n
            break
    info = stability(timing, 0.25)
    floor = 0.0 if info["unstable"] else noise_floor(info)
    prefix = "U" if info["unstable"] else ""
    return stop, [prefix + timing.speedup(i, 0.25, floor).verdict.value for i in (1, 2)]


def replay(report: Path) -> None:
    """Per look, whether each rule would have ended a real compare's blocks (from its per-process blocks)."""
    data = json.loads(report.read_text())
    results = data["results"]["kernel_results"]
    base = [r["kernel_id"] for r in results].index(data["baseline_id"])
    blocks = {
        (i, p): b
        for i, r in enumerate(results)
        for p, b in enumerate((r.get("performance") or {}).get("process_blocks_us") or [])
    }
    full = len(blocks[(base, 0)])
    timing = BlockedTiming(baseline=base)
    timing.decided = {k[0]: len(v) for k, v in blocks.items() if len(v) < full}
    for n in range(20, full + 1, 5):
        timing.blocks = {k: v[: min(n, len(v))] for k, v in blocks.items()}
        plan = BlockPlan(budget_s=60, min_effect=0.02)
        plain, robust = precise(None)(timing, plan), precise(_mad_se)(timing, plan)
        print(f"block {n}: plain SD stops {plain}, robust {robust}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--report", type=Path, help="a compare_report.json whose blocks to replay")
    args = parser.parse_args()
    if args.report:
        replay(args.report)
    rules = {"plain SD (shipped)": precise(None), "robust MAD": precise(_mad_se), "robust, guarded": guarded}
    for switch in (0.01, 0.02, 0.04, 0.08, 0.2, None):
        for name, rule in rules.items():
            runs = [run(seed, switch, rule) for seed in range(args.runs)]
            stops = np.array([r[0] for r in runs])
            identical, heavy = Counter(r[1][0] for r in runs), Counter(r[1][1] for r in runs)
            stop = f"median stop {np.median(stops):.0f}"
            print(f"switch {switch} | {name} | {stop} | identical {dict(identical)} | 8x {dict(heavy)}")


if __name__ == "__main__":
    main()
