"""Repeat the Ray fan-out test's local compare (an identical copy, an 8x-work candidate) under bursty load.

    python benchmarks/bursty_load_verdicts_probe.py --runs 100 --spinners 3 --jsonl rows.jsonl

Each row: every candidate's verdict, speedup and interval, its processes' levels and block medians, and the
run's stability block. The load: ``--spinners`` processes, each busy 60 % of random 50-500 ms periods (what a
parallel test suite next door looks like). Results: docs/benchmarks/kernelbench_bed.md, "Bursty load".
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _spin(seed: int) -> None:
    rng = random.Random(seed)
    while True:
        end = time.time() + rng.uniform(0.05, 0.5)
        if rng.random() < 0.6:
            while time.time() < end:
                pass
        else:
            time.sleep(max(0.0, end - time.time()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--spinners", type=int, default=3)
    parser.add_argument("--jsonl", type=Path, default=None)
    args = parser.parse_args()
    from magpie_core.pipelines.compare import compare
    from plugins.ray.tests.test_ray_environment import KERNELS, _fanout_file

    spinners = [mp.Process(target=_spin, args=(i,), daemon=True) for i in range(args.spinners)]
    for p in spinners:
        p.start()
    out = args.jsonl.open("a") if args.jsonl else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                start = time.time()
                report = compare(
                    _fanout_file(Path(tmp) / f"barrier{run}", 1),
                    config_dir=KERNELS,
                    output_dir=Path(tmp) / f"out{run}",
                    environment="local",
                    min_effect=0.25,
                )
                row: dict = {"run": run, "s": round(time.time() - start, 1), "stab": report.stability or {}}
                for entry in report.ranking:
                    perf = next(r for r in report.results.kernel_results if r.kernel_id == entry.kernel_id).performance
                    row[entry.kernel_id] = {
                        "v": entry.verdict,
                        "med": entry.median_us,
                        "s": entry.speedup,
                        "ci": entry.speedup_ci95,
                        "why": entry.verdict_reason,
                        "levels": perf.process_levels,
                        "blocks": perf.block_medians_us,
                    }
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                verdicts = {k: (v["v"], round(v["s"], 3)) for k, v in row.items() if isinstance(v, dict) and "v" in v}
                print(run, row["s"], verdicts, flush=True)
    finally:
        for p in spinners:
            p.terminate()


if __name__ == "__main__":
    main()
