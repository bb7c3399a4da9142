"""How long `magpie compare` makes its users wait: the README demo compare, and seconds per extra candidate.

    python benchmarks/compare_speed.py --out docs/benchmarks/compare_speed_cpu          # 2-core CPU box
    python benchmarks/compare_speed.py --gpu --out docs/benchmarks/compare_speed_h200   # on the H200

Measures, in one run, wall seconds of:
- `magpie compare -k examples/softmax/compare.yaml` (CPU; the README's demo), or
  `examples/softmax/compare_gpu.yaml` with --gpu, through the real command line;
- compares of a KernelBench bed problem with 1 and with 9 candidates (by default a mix of identical copies, the
  correct alternative and the slow variant; ``--pool`` picks others), in-process, with the time of each phase
  from the progress messages; the marginal cost of a candidate is (t9 - t1) / 8.
Goals (issue 28): demo <= 25 s on a quiet 2-core machine; 9 candidates <= 30 s on the H200; <= 1 s (CPU) /
<= 2 s (H200) per candidate after the first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magpie_core.measurement import worker_client as timing_workers
from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.kernel_files import load_kernel_file

ROOT = Path(__file__).resolve().parent.parent
BED = ROOT / "benchmarks" / "kernelbench_bed"


def demo_compare(gpu: bool, out: Path) -> dict:
    config = "examples/softmax/compare_gpu.yaml" if gpu else "examples/softmax/compare.yaml"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "magpie_core", "-o", str(out), "compare", "-k", config],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    tail = (done.stdout + done.stderr).splitlines()[-20:]
    return {"config": config, "wall_s": round(time.perf_counter() - start, 2), "exit": done.returncode, "tail": tail}


class WorkerClock:
    """Where a compare's worker processes spend their time: each TimingWorker call, timed from outside."""

    CALLS = ("__init__", "check", "prepare", "sample", "close")

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = {name: [] for name in self.CALLS}
        self.start = time.perf_counter()

    def __enter__(self) -> WorkerClock:
        self.saved = {name: getattr(timing_workers.TimingWorker, name) for name in self.CALLS}
        for name, original in self.saved.items():
            setattr(timing_workers.TimingWorker, name, self._timed(name, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self.saved.items():
            setattr(timing_workers.TimingWorker, name, original)

    def _timed(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spans[name].append((began - self.start, time.perf_counter() - began))

        return call

    def summary(self) -> dict:
        """Per call: how many, total and longest seconds, and the wall span from the first start to the last end."""
        out = {}
        for name, spans in self.spans.items():
            if spans:
                out[name] = {
                    "n": len(spans),
                    "sum_s": round(sum(d for _, d in spans), 2),
                    "max_s": round(max(d for _, d in spans), 3),
                    "first_s": round(min(s for s, _ in spans), 2),
                    "last_end_s": round(max(s + d for s, d in spans), 2),
                }
        return out


def candidates_compare(problem: str, count: int, out: Path, pool: list[str]) -> dict:
    """The problem's reference against ``count`` candidates taken in turn from ``pool``, with the phases' start
    times."""
    file = load_kernel_file(BED / problem / "compare.yaml")
    by_id = {k.id: k for k in file.kernels}
    kernels = [by_id["reference"]]
    for i in range(count):
        kernel = by_id[pool[i % len(pool)]]
        kernels.append(kernel.model_copy(update={"id": f"{kernel.id}_{i}"}))
    file = file.model_copy(update={"kernels": kernels})
    marks: list[tuple[float, str]] = []
    start = time.perf_counter()
    with WorkerClock() as clock:
        report = compare(
            file,
            config_dir=BED / problem,
            output_dir=out,
            progress=lambda message: marks.append((round(time.perf_counter() - start, 2), message)),
        )
    wall = time.perf_counter() - start
    return {
        "problem": problem,
        "candidates": count,
        "wall_s": round(wall, 2),
        "phases": marks,
        "worker_calls": clock.summary(),
        "verdicts": {e.kernel_id: e.verdict for e in report.ranking},
        "blocks": (report.stability or {}).get("blocks"),
        "message": (report.stability or {}).get("message"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--problem", default="l1_19_relu")
    parser.add_argument("--out", type=Path, required=True, help="output path without suffix (.json)")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo compare")
    parser.add_argument(
        "--counts",
        type=int,
        nargs="+",
        default=[1, 9, 1, 9],
        help="candidates per compare, in order (the per-candidate cost is taken from the last 1 and the last 9)",
    )
    parser.add_argument(
        "--pool",
        nargs="+",
        default=["alternative", "slow", "identical"],
        help="the bed's variants the candidates are taken from, in turn",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results: dict = {"meta": {"cpus": os.cpu_count(), "load_before": load_before, "gpu": args.gpu, "pool": args.pool}}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_demo:
            results["demo"] = demo_compare(args.gpu, Path(tmp) / "demo")
            print(json.dumps(results["demo"]), flush=True)
        # a first compare warms the fork server; the second of each pair is what a loop or server sees
        for count in args.counts:
            run = candidates_compare(args.problem, count, Path(tmp) / f"c{count}", args.pool)
            results.setdefault("candidates", []).append(run)
            print(json.dumps({k: run[k] for k in ("candidates", "wall_s", "blocks")}), flush=True)
    last = {r["candidates"]: r["wall_s"] for r in results["candidates"]}
    if 1 in last and 9 in last:
        results["per_extra_candidate_s"] = round((last[9] - last[1]) / 8, 2)
    results["meta"]["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(json.dumps({"demo_s": results.get("demo", {}).get("wall_s"), "last": last}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
