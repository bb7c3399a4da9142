"""Verdicts and seconds of `magpie compare` on the KernelBench bed, repeated: the guarantees and the speed goal.

For every problem of benchmarks/kernelbench_bed (or --problems), runs its compare --rounds times
(reference, identical copy, correct alternative, >= 3x slower variant, wrong variant) and tabulates each
variant's verdicts, the wall time of each compare, and the identical copy of the baseline that magpie
times by itself. Writes JSON and a markdown table.

    python benchmarks/kernelbench_verdicts.py --rounds 3 --out docs/benchmarks/kernelbench_bed_cpu
    MAGPIE_BED_SIZE=kernelbench python benchmarks/kernelbench_verdicts.py --out ...   # KernelBench's sizes (GPU)

Expected: identical never FASTER/SLOWER; slow always SLOWER on a quiet machine (never FASTER); wrong never
ranked. The alternative's verdict is whatever it is (some are real wins, some real losses).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.kernel_files import load_kernel_file

BED = Path(__file__).resolve().parent / "kernelbench_bed"
VARIANTS = ("identical", "alternative", "slow", "wrong")


def one_compare(problem: str, skip: set[str], out: Path) -> dict:
    file = load_kernel_file(BED / problem / "compare.yaml")
    file = file.model_copy(update={"kernels": [k for k in file.kernels if f"{problem}:{k.id}" not in skip]})
    start = time.perf_counter()
    report = compare(file, config_dir=BED / problem, output_dir=out)
    wall = time.perf_counter() - start
    verdicts = {e.kernel_id: e.verdict for e in report.ranking}
    for u in report.unranked:
        verdicts[u["kernel_id"]] = "REJECTED" if u["reason"].startswith("correctness") else "UNRANKED"
    speedups = {e.kernel_id: [e.speedup, *(e.speedup_ci95 or ())] for e in report.ranking}
    stability = report.stability or {}
    return {
        "problem": problem,
        "wall_s": round(wall, 2),
        "verdicts": verdicts,
        "speedups": speedups,
        "copy": [stability.get("aa_speedup"), stability.get("aa_verdict")],
        "process_spread_pct": stability.get("process_spread_pct"),
        "message": stability.get("message"),
    }


def summary(runs: list[dict]) -> str:
    lines = [
        "| problem | identical | alternative | slow | wrong | magpie's own copy | compare s (min-max) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for problem in sorted({r["problem"] for r in runs}):
        mine = [r for r in runs if r["problem"] == problem]
        cells = []
        for variant in VARIANTS:
            counts = Counter(r["verdicts"].get(variant, "-") for r in mine)
            cells.append(", ".join(f"{v} {n}" for v, n in counts.most_common()))
        copies = Counter(str(r["copy"][1]) for r in mine)
        walls = [r["wall_s"] for r in mine]
        lines.append(
            f"| {problem} | {' | '.join(cells)} | {', '.join(f'{v} {n}' for v, n in copies.most_common())} | "
            f"{min(walls):.1f}-{max(walls):.1f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--skip", nargs="*", default=[], help="problem:variant pairs to leave out")
    parser.add_argument("--out", type=Path, required=True, help="output path without suffix (.json and .md)")
    args = parser.parse_args()
    problems = args.problems or sorted(p.name for p in BED.iterdir() if (p / "compare.yaml").exists())
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            for problem in problems:
                result = one_compare(problem, set(args.skip), Path(tmp) / f"{problem}-{round_no}")
                runs.append(result)
                print(json.dumps(result), flush=True)
    meta = {
        "size": os.environ.get("MAGPIE_BED_SIZE", "cpu"),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "python": sys.version.split()[0],
        "rounds": args.rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
    table = summary(runs)
    args.out.with_suffix(".md").write_text(f"# KernelBench bed verdicts\n\n{json.dumps(meta)}\n\n{table}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
