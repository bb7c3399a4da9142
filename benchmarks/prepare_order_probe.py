"""Which worker processes of a compare come out slow, and whether it follows the order they were prepared in.

    python benchmarks/prepare_order_probe.py l1_19_relu --runs 8
    python benchmarks/prepare_order_probe.py l2_40_matmul_scale_residual --runs 40 \
        --keep reference identical slow --jsonl levels.jsonl   # the bed test's compare, one JSON row per run

Runs the bed problem's compare ``--runs`` times and prints, per run, the three processes prepared first, every
process's batch size, and every process's level (its median log time relative to the baseline's blocks, in %;
kernel -1 is magpie's identical copy of the baseline, 0 the baseline, then the bed's variants in file order).
Found with it (docs/benchmarks/kernelbench_bed.md): on the 2-core VM the process prepared first often ran 10-30 %
slower than its twin, and when the order was fixed that was always the identical copy; hence the counterbalanced
warm-up order of :func:`magpie_core.pipelines.instances.counterbalanced`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import magpie_core.pipelines.blocked as blocked
import magpie_core.pipelines.compare as compare_module
import magpie_core.pipelines.instances as instances_module
from magpie_core.pipelines.kernel_files import load_kernel_file

BED = Path(__file__).resolve().parent / "kernelbench_bed"


class Spy:
    """Records the prepare order, the batch sizes and the blocks of the compare it is installed in."""

    def __init__(self) -> None:
        self.order: list[Any] = []
        self.batches: dict[Any, Any] = {}
        self.timing: blocked.BlockedTiming | None = None

    def install(self) -> None:
        counterbalanced = instances_module.counterbalanced

        def prepare_order(keys: list[Any]) -> list[Any]:
            self.order = counterbalanced(keys)
            return self.order

        instances_module.counterbalanced = prepare_order
        slots, blocks = blocked._samples_per_slot, compare_module.time_in_blocks

        def samples_per_slot(live: dict, plan: blocked.BlockPlan, result: blocked.BlockedTiming) -> dict:
            self.batches = {key: worker.info.get("batch_size") for key, worker in live.items()}
            return slots(live, plan, result)

        def time_in_blocks(workers: dict, baseline: int, plan: blocked.BlockPlan) -> blocked.BlockedTiming:
            self.timing = blocks(workers, baseline, plan)
            return self.timing

        blocked._samples_per_slot = samples_per_slot
        compare_module.time_in_blocks = time_in_blocks


def levels_pct(timing: blocked.BlockedTiming) -> dict[str, list[float]]:
    return {str(i): [round(100 * v, 1) for v in timing.levels(i)] for i in timing.indices()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--keep", nargs="+", help="the bed's kernel ids to compare (default: all of them)")
    parser.add_argument("--processes", type=int, help="performance.processes (default: magpie's choice)")
    parser.add_argument("--jsonl", type=Path, help="also write one JSON row per run here")
    args = parser.parse_args()
    spy = Spy()
    spy.install()
    for run in range(args.runs):
        file = load_kernel_file(BED / args.problem / "compare.yaml")
        if args.keep:
            file = file.model_copy(update={"kernels": [k for k in file.kernels if k.id in args.keep]})
        if args.processes:
            performance = file.performance.model_copy(update={"processes": args.processes})
            file = file.model_copy(update={"performance": performance})
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            report = compare_module.compare(file, config_dir=BED / args.problem, output_dir=Path(tmp))
        assert spy.timing is not None
        batches = {f"{k[0]},{k[1]}": b for k, b in sorted(spy.batches.items())}
        print(run, "prepared first:", spy.order[:3], "batch sizes:", batches)
        aa = spy.timing.speedup(blocked.BASELINE_COPY, 0.02).value
        print(run, "blocks", spy.timing.block_count, "levels %:", levels_pct(spy.timing), f"copy {aa:.3f}x", flush=True)
        if args.jsonl:
            row = {
                "run": run,
                "wall_s": round(time.monotonic() - start, 2),
                "order": [f"{k[0]},{k[1]}" for k in spy.order],
                "batches": batches,
                "levels_pct": levels_pct(spy.timing),
                "stability": report.stability,
                "ranking": [[e.kernel_id, e.verdict, e.speedup, e.speedup_ci95] for e in report.ranking],
            }
            with args.jsonl.open("a") as out:
                out.write(json.dumps(row, default=str) + "\n")


if __name__ == "__main__":
    main()
