"""The noise ``magpie benchmark --interleave`` measures on the vLLM CPU server, and the verdicts it gives.

Three interleaved comparisons with the tiny Llama (tests/helpers/make_tiny_llama.py), each through the real CLI:

* ``aa_lifetimes``: one config against itself, ``run_mode: local``: every run of every round starts and stops its
  own vLLM server (the between-lifetime noise, measured);
* ``aa_shared``: one config against itself, both sides against one running server (``--base-url``);
* ``max_num_seqs_1``: the default server against one started with ``--max-num-seqs 1`` (batching taken away).

Writes docs/benchmarks/benchmark_noise.md (and .json): per comparison and metric the change, its joint 95%
interval, the between-round sd and the verdict, with the machine's load average. Needs ``.venv-vllm``
(scripts/setup_vllm_cpu.sh or MAGPIE_VLLM_PYTHON). Usage: python benchmarks/benchmark_noise.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magpie_benchmark.stats import paired_log_interval  # noqa: E402

from tests.helpers.vllm_cpu import benchmark_block, make_tiny_llama, run_interleaved_cli, running_vllm  # noqa: E402


def _between_round_sd(metric: dict[str, Any]) -> float | None:
    """The sd of the per-round log ratios (the noise the verdict's interval was built on)."""
    base, new = metric["base"]["values"], metric["new"]["values"]
    if len(base) < 2 or len(base) != len(new):
        return None
    return paired_log_interval(base, new)[3]


def _run(name: str, base: dict[str, Any], new: dict[str, Any], out: Path, rounds: int) -> dict[str, Any]:
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    reports = run_interleaved_cli(base, new, out / name, "--repeats", str(rounds))
    comparison = json.loads((reports[0].parent.parent / "comparison.json").read_text())
    return {
        "name": name,
        "wall_s": round(time.monotonic() - t0, 1),
        "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "noise": comparison["noise"],
        "rounds": comparison["rounds"],
        "verdict": comparison["verdict"],
        "metrics": [
            {
                "metric": m["metric"],
                "change_pct": m["change_pct"],
                "ci_pct": m["ci95_pct"],
                "between_round_sd_pct": None if (sd := _between_round_sd(m)) is None else 100 * sd,
                "verdict": m["verdict"],
            }
            for m in comparison["metrics"]
        ],
    }


def _markdown(results: list[dict[str, Any]], rounds: int) -> str:
    lines = [
        "# Benchmark noise, measured: `magpie benchmark --interleave` on the vLLM CPU server",
        "",
        f"`python benchmarks/benchmark_noise.py --rounds {rounds}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs;"
        " tiny Llama, concurrency 8, ISL 64, OSL 16, 16 requests per run; `max_num_seqs_1`: concurrency 32, 64"
        " requests). Each comparison is `--interleave BASE.yaml NEW.yaml`: rounds alternate the order; the interval"
        " is the joint 95% t interval over the metrics from the rounds' paired differences"
        ' (docs/optimization-loop.md, "Measured noise").',
        "",
    ]
    for r in results:
        lines += [
            f"## {r['name']}: {r['verdict']} ({r['rounds']} rounds, noise {r['noise']}, {r['wall_s']} s, "
            f"load average {r['load_avg_1m'][0]} -> {r['load_avg_1m'][1]})",
            "",
            "| metric | change | joint 95% CI | between-round sd | verdict |",
            "|---|---|---|---|---|",
        ]
        for m in r["metrics"]:
            ci = f"{m['ci_pct'][0]:+.1f}% to {m['ci_pct'][1]:+.1f}%" if m["ci_pct"] else "-"
            sd = f"{m['between_round_sd_pct']:.1f}%" if m["between_round_sd_pct"] is not None else "-"
            lines.append(f"| {m['metric']} | {m['change_pct']:+.1f}% | {ci} | {sd} | {m['verdict']} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip", nargs="*", default=[], help="comparisons to leave out")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "benchmark_noise")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = make_tiny_llama(work / "tiny_llama")
        local = benchmark_block(model)
        if "aa_lifetimes" not in args.skip:
            results.append(_run("aa_lifetimes", local, local, work, args.rounds))
        with running_vllm(model, work) as url:
            shared = benchmark_block(model, run_mode="external", base_url=url)
            if "aa_shared" not in args.skip:
                results.append(_run("aa_shared", shared, shared, work, args.rounds))
            if "max_num_seqs_1" not in args.skip:
                heavy = {**shared, "envs": {**shared["envs"], "CONC": 32, "NUM_PROMPTS": 64}}
                with running_vllm(model, work, ["--max-num-seqs", "1"]) as one_seq:
                    results.append(_run("max_num_seqs_1", heavy, {**heavy, "base_url": one_seq}, work, args.rounds))
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(_markdown(results, args.rounds))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
