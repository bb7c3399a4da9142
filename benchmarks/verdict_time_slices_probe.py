"""Verdicts under CPU overload, where block medians sit at scheduler time slices: counts over repeated compares.

Runs the compare of tests/test_ranking.py (single, double and identical "single_again" work) under the test's
injected load, ``--runs`` times, and prints each run's verdicts, its stability block and per-block medians,
then the verdict counts. Start extra CPU hogs first (e.g. three ``python3 -c "while 1: pass" &`` on a 2-core
machine, killed afterwards) to reach the regime where a launch waits whole scheduler time slices: block
medians jump ~9x at a time (0.18, 1.7, 15, 40 ms) and a process keeps that state over adjacent blocks.

Before the desynchronised-block and time-slice-drift rules (docs/kernel-evaluation.md, step 6) identical work
was called FASTER/SLOWER in 2 of 4 test runs and in 3 of 17 of these compares (2026-11-30); with them, every
verdict of such a run is UNSTABLE (counts: docs/benchmarks/verdicts_under_load.md, "Overload").
Usage: ``.venv/bin/python benchmarks/verdict_time_slices_probe.py [--runs N] [--quiet]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.kernel_reports import CompareReport
from tests.helpers.load_injector import injected_load
from tests.test_ranking import KERNELS, known_costs_file


def one_compare() -> CompareReport:
    with injected_load():
        out = Path(tempfile.mkdtemp())
        return compare(known_costs_file(), config_dir=KERNELS, output_dir=out, baseline="single", min_effect=0.25)


def show(report: CompareReport) -> None:
    for entry in report.ranking:
        print(entry.kernel_id, entry.verdict, entry.speedup, entry.verdict_reason)
    print({k: v for k, v in (report.stability or {}).items() if k != "message"})
    blocks = {r.kernel_id: np.array(r.performance.block_medians_us) for r in report.results.kernel_results}
    n = min(len(blocks["single"]), len(blocks["single_again"]))  # a decided candidate leaves the blocks early
    print("single / single_again per block:", np.round(blocks["single"][:n] / blocks["single_again"][:n], 2).tolist())
    for kid, medians in blocks.items():
        print(kid, np.round(medians).tolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quiet", action="store_true", help="only the verdicts per run and the counts")
    args = parser.parse_args()
    counts: dict[str, Counter[str]] = {"single_again": Counter(), "double": Counter()}
    for run in range(args.runs):
        report = one_compare()
        verdicts = {e.kernel_id: e.verdict or "-" for e in report.ranking}
        stable = report.stability or {}
        print(f"run {run + 1}: {verdicts} unstable={stable.get('unstable')} drift={stable.get('drift_pct', 0):.0f}%")
        if not args.quiet:
            show(report)
        for kid, counter in counts.items():
            counter[verdicts.get(kid, "unranked")] += 1
    wrong = counts["single_again"]["FASTER"] + counts["single_again"]["SLOWER"] + counts["double"]["FASTER"]
    print({kid: dict(c) for kid, c in counts.items()}, "confident wrong verdicts:", wrong)


if __name__ == "__main__":
    main()
