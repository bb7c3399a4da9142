"""Reproduce the open problem of verdicts under CPU overload: block medians quantized at scheduler time slices.

Runs the compare of tests/test_ranking.py (single, double and identical "single_again" work) under the test's
injected load and prints each verdict, the stability block and the per-block medians. Start extra CPU hogs first
(e.g. three ``python3 -c "while 1: pass" &`` on a 2-core machine) to reach the regime where identical work was
once called FASTER/SLOWER (2 of 4 test runs, 2026-11-30).
Usage: ``.venv/bin/python benchmarks/verdict_time_slices_probe.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magpie_core.pipelines.compare import compare
from tests.helpers.load_injector import injected_load
from tests.test_ranking import KERNELS, known_costs_file


def main() -> None:
    with injected_load():
        out = Path(tempfile.mkdtemp())
        report = compare(known_costs_file(), config_dir=KERNELS, output_dir=out, baseline="single", min_effect=0.25)
    for entry in report.ranking:
        print(entry.kernel_id, entry.verdict, entry.speedup, entry.verdict_reason)
    print({k: v for k, v in (report.stability or {}).items() if k != "message"})
    blocks = {r.kernel_id: np.array(r.performance.block_medians_us) for r in report.results.kernel_results}
    print("single / single_again per block:", np.round(blocks["single"] / blocks["single_again"], 2).tolist())
    for kid, medians in blocks.items():
        print(kid, np.round(medians).tolist())


if __name__ == "__main__":
    main()
