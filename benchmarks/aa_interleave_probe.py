"""A/A interleaved benchmarks of the vLLM CPU server under load that comes and goes: how often is one called?

    python benchmarks/aa_interleave_probe.py --runs 20 --spinners 2 --busy-ms 1000 6000 --idle-ms 500 4000 \
        --jsonl rows.jsonl

The test suite's A/A pair (``vllm_aa_reports`` in the root conftest: one config measured against itself in 5
interleaved rounds against one shared server) was twice called IMPROVED in a full ``make test``, where the other
pytest worker's tests load the 2-core machine in bursts of seconds. This probe starts the same server once, runs the
same warm-up, then ``--runs`` interleaved A/A runs while ``--spinners`` load processes alternate busy and idle phases
of the given lengths (tests/helpers/load_injector.py). Each row: every metric's verdict, change, interval and the
paired per-round values, so a false call can be read round by round. Results: docs/benchmarks/benchmark_noise.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.load_injector import injected_load  # noqa: E402
from tests.helpers.vllm_cpu import (  # noqa: E402
    benchmark_block,
    make_tiny_llama,
    run_benchmark_cli,
    run_interleaved_cli,
    running_vllm,
)


def _row(run: int, seconds: float, reports: list[Path]) -> dict:
    comparison = json.loads((reports[0].parents[1] / "comparison.json").read_text())
    metrics = {
        m["metric"]: {
            "verdict": m["verdict"],
            "change_pct": m["change_pct"],
            "ci95_pct": m["ci95_pct"],
            "base": m["base"]["values"],
            "new": m["new"]["values"],
        }
        for m in comparison["metrics"]
    }
    return {"run": run, "s": round(seconds, 1), "verdict": comparison["verdict"], "metrics": metrics}


def false_call_rate(paths: list[Path], draws: int = 20000, rounds: int = 5, seed: int = 0) -> dict:
    """How often the paired rule calls an A/A run built from ``rounds`` rounds drawn from the measured ones."""
    import numpy as np
    from magpie_benchmark.stats import E2E_METRICS, compare_paired_metric

    ratios = []
    for path in paths:
        for line in path.read_text().splitlines():
            metrics = json.loads(line)["metrics"]
            names = sorted(metrics)
            for i in range(len(metrics[names[0]]["base"])):
                ratios.append([metrics[k]["new"][i] / metrics[k]["base"][i] for k in names])
    table, by_name = np.asarray(ratios), {m.name: m for m in E2E_METRICS}
    rng, called = np.random.default_rng(seed), {k: 0 for k in names}
    runs_called = 0
    for _ in range(draws):
        sample = table[rng.integers(0, len(table), rounds)]
        verdicts = {
            k: compare_paired_metric(by_name[k], [1.0] * rounds, list(sample[:, j]), family=len(names)).verdict.value
            for j, k in enumerate(names)
        }
        hits = [k for k, v in verdicts.items() if v != "WITHIN NOISE"]
        runs_called += bool(hits)
        for k in hits:
            called[k] += 1
    return {
        "rounds_measured": len(table),
        "draws": draws,
        "runs_called": runs_called / draws,
        "per_metric": {k: v / draws for k, v in called.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--analyse", type=Path, nargs="+", help="rows files to estimate the false-call rate from")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per A/A run (the tests use 5)")
    parser.add_argument("--spinners", type=int, default=2, help="load processes (0: a quiet machine)")
    parser.add_argument("--busy-ms", type=int, nargs=2, default=(1000, 6000))
    parser.add_argument("--idle-ms", type=int, nargs=2, default=(500, 4000))
    parser.add_argument("--jsonl", type=Path)
    args = parser.parse_args()
    if args.analyse:
        print(json.dumps(false_call_rate(args.analyse), indent=1))
        return
    if args.jsonl is None:
        parser.error("--jsonl is required to measure")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = make_tiny_llama(work / "model")
        with running_vllm(model, work) as url:
            block = benchmark_block(model, run_mode="external", base_url=url)
            run_benchmark_cli(block, work / "warmup", "--repeats", "3")
            load = injected_load(args.spinners, 3600, busy_ms=tuple(args.busy_ms), idle_ms=tuple(args.idle_ms))
            with load if args.spinners else contextlib.nullcontext():
                for run in range(args.runs):
                    start = time.monotonic()
                    reports = run_interleaved_cli(block, block, work / f"aa{run}", "--repeats", str(args.repeats))
                    row = _row(run, time.monotonic() - start, reports)
                    with args.jsonl.open("a") as out:
                        out.write(json.dumps(row) + "\n")
                    called = [k for k, m in row["metrics"].items() if m["verdict"] != "WITHIN NOISE"]
                    print(run, row["verdict"], row["s"], called, flush=True)


if __name__ == "__main__":
    main()
