"""Why a compare's blocks run to the budget: at each precision check, how precisely each process's level is known.

    python benchmarks/blocks_precision_probe.py --candidates 9 [--problem l1_23_softmax]

Runs one compare of a KernelBench bed problem (as benchmarks/compare_speed.py does) and, at every precision check
of the blocks (every PRECISION_CHECK_EVERY blocks), prints: blocks, seconds, whether the stopping rule held, the
spread between processes (sd, %), and the four processes whose level has the largest standard error (%). The rule
stops once every process's standard error is within half the spread (magpie_core.pipelines.blocked._precise_enough).
Used for the GOMP_SPINCOUNT finding in docs/benchmarks/compare_speed.md (2026-12-02).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from compare_speed import candidates_compare

from magpie_core.pipelines import blocked


def _standard_errors(result: blocked.BlockedTiming) -> dict[str, float]:
    reference = np.log(result.baseline_blocks())
    errors = {}
    for key, values in result.blocks.items():
        d = np.log(values[: result.block_count]) - reference
        errors[str(key)] = round(100 * 1.25 * float(np.std(d, ddof=1)) / math.sqrt(len(d)), 2)
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=9)
    parser.add_argument("--problem", default="l1_23_softmax")
    args = parser.parse_args()
    rule = blocked._precise_enough
    checks: list[tuple[Any, ...]] = []

    def probed(result: blocked.BlockedTiming, plan: blocked.BlockPlan) -> bool:
        held = rule(result, plan)
        if result.block_count % blocked.PRECISION_CHECK_EVERY == 0:
            spread = result.spread()
            sd = math.sqrt(spread.variance) if spread.df >= blocked.MIN_SPREAD_DF else 0.0
            worst = sorted(_standard_errors(result).items(), key=lambda kv: -kv[1])[:4]
            checks.append((result.block_count, round(result.elapsed_s, 1), held, round(100 * sd, 2), worst))
        return held

    blocked._precise_enough = probed
    with tempfile.TemporaryDirectory() as tmp:
        run = candidates_compare(args.problem, args.candidates, Path(tmp))
    print(f"wall {run['wall_s']} s, {run['blocks']} blocks")
    print("blocks, seconds, rule held, process spread sd %, largest standard errors % (candidate, process)")
    for check in checks:
        print(check)


if __name__ == "__main__":  # the fork server's children import this module by name
    main()
