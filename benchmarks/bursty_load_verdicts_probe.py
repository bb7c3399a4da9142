"""Repeat the Ray fan-out test's local compare (an identical copy, an 8x-work candidate) under bursty load.

    python benchmarks/bursty_load_verdicts_probe.py --runs 100 --spinners 3 --jsonl rows.jsonl
    python benchmarks/bursty_load_verdicts_probe.py --runs 10 --env OMP_NUM_THREADS=1   # 1-thread kernels

Each row: every candidate's verdict, speedup and interval, its processes' levels and block medians, and the
run's stability block. The load: ``--spinners`` processes of the tests' load injector
(tests/helpers/load_injector.py: busy 200-700 ms, idle 100-500 ms, ~60 % busy). Results:
docs/benchmarks/kernelbench_bed.md, "Bursty load".
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.load_injector import injected_load  # noqa: E402


def _row(run: int, seconds: float, report: Any) -> dict[str, Any]:
    """One compare: the run's stability block and, per ranked candidate, its verdict and processes."""
    row: dict[str, Any] = {"run": run, "s": round(seconds, 1), "stab": report.stability or {}}
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
            "process_blocks": perf.process_blocks_us,
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--spinners", type=int, default=3)
    parser.add_argument("--jsonl", type=Path, default=None)
    parser.add_argument("--busy-ms", type=int, nargs=2, default=(200, 700), help="each spinner's busy periods")
    parser.add_argument("--idle-ms", type=int, nargs=2, default=(100, 500), help="and its idle ones")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="added to every kernel's env")
    args = parser.parse_args()
    from magpie_core.pipelines.compare import compare
    from plugins.ray.tests.test_ray_environment import KERNELS, _fanout_file

    out = args.jsonl.open("a") if args.jsonl else None
    load = injected_load(args.spinners, 24 * 3600, busy_ms=tuple(args.busy_ms), idle_ms=tuple(args.idle_ms))
    with load, tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            start = time.time()
            file = _fanout_file(Path(tmp) / f"barrier{run}", 1)
            for kernel in file.kernels:
                kernel.env.update(item.split("=", 1) for item in args.env)
            report = compare(
                file,
                config_dir=KERNELS,
                output_dir=Path(tmp) / f"out{run}",
                environment="local",
                min_effect=0.25,
            )
            row = _row(run, time.time() - start, report)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
            verdicts = {k: (v["v"], round(v["s"], 3)) for k, v in row.items() if k not in ("run", "s", "stab")}
            print(run, row["s"], verdicts, flush=True)


if __name__ == "__main__":
    main()
