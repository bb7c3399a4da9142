"""Issue 45: where a compare's seconds go, phase by phase, in a real ``magpie kernelbench run`` (or ``compare``).

    python benchmarks/compare_phases.py -- kernelbench run PROBLEMS --solutions SOLUTIONS -o OUT --no-html
    python benchmarks/compare_phases.py --json phases.json -- compare ref.py cand.py

Runs magpie's CLI in this process with the compare pipeline's steps wrapped in timers (no change to magpie): the fork
server's warm-up, the checks in each kernel's first worker process, the further worker processes (started and
checked), their preparation, the interleaved blocks, KernelBench's single synchronized calls
(``performance.call_trials``) and the workers' closing. Prints the seconds per phase summed over every compare of the
run, their share of the compares' wall time, and how many times each ran. Where the seconds beyond the blocks go is
the per-solution overhead issue 45 asks to bring down to the timing budget's own floor.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

PHASES = {
    "fork server warm-up": "warm_fork_server",
    "checks (first process per kernel)": "check_first_processes",
    "more processes (start + check)": "check_more_processes",
    "prepare inputs": "prepare_all",
    "interleaved blocks": "time_in_blocks",
    "KernelBench's calls": "_per_call",
}


def wrap(totals: dict[str, list[float]]) -> None:
    """Time the compare pipeline's steps where compare.py calls them (its module's names)."""
    from magpie_core.measurement.worker_client import TimingWorker
    from magpie_core.pipelines import compare
    from magpie_core.pipelines.instances import Instances

    def timed(label: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals.setdefault(label, []).append(time.perf_counter() - start)

        return run

    for label, name in PHASES.items():
        setattr(compare, name, timed(label, getattr(compare, name)))
    compare.compare = timed("whole compare", compare.compare)
    TimingWorker.prepare = timed("prepare: one process", TimingWorker.prepare)
    Instances.close_all = timed("close workers", Instances.close_all)
    Instances.stop_all = timed("stop workers", Instances.stop_all)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the phases here too")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="magpie's arguments, after --")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    totals: dict[str, list[float]] = {}
    wrap(totals)
    from magpie_core.cli import run

    start = time.perf_counter()
    try:
        run(argv)  # the magpie executable's own entry, plugin commands included
    except SystemExit:
        pass
    wall = time.perf_counter() - start
    whole = sum(totals.get("whole compare", [])) or wall
    phases = {
        label: {"s": round(sum(times), 3), "share": round(sum(times) / whole, 3), "calls": len(times)}
        for label, times in totals.items()
    }
    result = {"wall_s": round(wall, 3), "compares_s": round(whole, 3), "phases": phases}
    print(json.dumps(result, indent=1), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
