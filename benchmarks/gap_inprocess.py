"""Benchmark: ``magpie gap``'s own work, in-process, against the same-run baseline (issue 17, without start-up).

``benchmarks/trace_shapes.py`` times the whole ``magpie gap`` command, whose fixed start-up (~0.55 s CPU: imports,
plugin discovery, config validation, report page) is most of the CPU on a 150 MB trace. This script separates the
trace work: for each shape and size (the traces ``trace_shapes.py`` builds, reused from ``--work-dir``) it runs, each
in its own subprocess,

- the gap baseline (``json.load`` + AMD Magpie's category filter and per-name sum, ``trace_gap.BASELINE``): CPU s;
- a probe that imports magpie, then reads the trace with ``stream_table`` and runs the gap analysis
  (``analyze_table``) ``--repeat`` times in one process (one worker, the compiled reader as installed): the CPU
  seconds of each part, best of the repeats; with ``--reference-python`` the same probe under another install
  (say main's), in alternation, so both see the same machine load;
- ``magpie -w 1 gap`` on a small bundled trace: the command's fixed cost (start-up, report), CPU s.

Ratios: baseline CPU / in-process CPU (``stream_table`` + analysis). Writes ``docs/benchmarks/gap_inprocess.md`` and
``.json``. Usage: ``python benchmarks/gap_inprocess.py [--sizes 150,550] [--shapes mi300,h100,vllm,sglang]
[--repeat 3] [--reference-python /work/main/.venv/bin/python]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


trace_gap = _load("trace_gap")
trace_shapes = _load("trace_shapes")

#: run by each install's Python: CPU seconds of stream_table and of the analysis, best of ``repeat``
PROBE = r"""
import gc, json, sys, time
from pathlib import Path
from magpie_core.config.benchmark import GapAnalysisConfig
from magpie_core.trace.columns import category_matcher, stream_table
from magpie_gap_analysis.analysis import analyze_table
from magpie_gap_analysis.pipeline import _options

path, repeat = Path(sys.argv[1]), int(sys.argv[2])
options = _options(GapAnalysisConfig(), None, None)
gc.disable()  # as analyze_file does
best = {"read": float("inf"), "analysis": float("inf")}
for _ in range(repeat):
    t0 = time.process_time()
    table = stream_table(path, category_matcher(options.categories, options.ignore_categories))
    t1 = time.process_time()
    analyze_table(table, 0, "rank-0", options)
    t2 = time.process_time()
    best["read"] = min(best["read"], t1 - t0)
    best["analysis"] = min(best["analysis"], t2 - t1)
    del table
print(json.dumps(best))
"""

SMALL_TRACE = ROOT / "tests" / "data" / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def probe(python: str, path: Path, repeat: int) -> dict[str, float]:
    # -P: no current directory on sys.path, so each Python imports its own install's magpie, not this checkout's
    argv = [python, "-P", "-c", PROBE, str(path), str(repeat)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fixed_cost(python: str) -> float:
    """CPU s of ``magpie -w 1 gap`` on a 445 KB bundled trace: start-up, report writing, no trace work to speak of."""
    magpie = str(Path(python).with_name("magpie"))
    with tempfile.TemporaryDirectory() as out:
        return trace_gap.measure([magpie, "-w", "1", "gap", str(SMALL_TRACE), "-o", out, "--json", "--no-rank-csv"])[3]


def report(results: dict[str, Any], ref: bool) -> list[str]:
    lines = [
        "# `magpie gap`'s trace work in-process vs the baseline",
        "",
        f"Produced by `benchmarks/gap_inprocess.py` on this machine ({platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}), shared with other sessions: 1-minute load average "
        f"{results['load_before']:.1f} before and {results['load_after']:.1f} after. CPU seconds (user + system); the "
        f"in-process columns are the best of {results['repeat']} runs in one process (one worker), the baseline one "
        "run in its own subprocess. `magpie -w 1 gap`'s fixed cost (start-up, report writing) on a 445 KB trace: "
        + ", ".join(f"{c:.2f}" for c in results["fixed_cpu"])
        + " s CPU"
        + (
            " (this checkout); reference: " + ", ".join(f"{c:.2f}" for c in results["ref_fixed_cpu"]) + " s"
            if ref
            else ""
        )
        + ".",
        "",
    ]
    head = "| trace | baseline CPU s | `stream_table` CPU s | analysis CPU s | ratio, in-process |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if ref:
        head += " reference `stream_table` + analysis CPU s | reference ratio |"
        rule += " ---: | ---: |"
    lines += [head, rule]
    for name, r in results["traces"].items():
        mine = r["probe"]["read"] + r["probe"]["analysis"]
        row = (
            f"| {name} | {r['baseline_cpu']:.2f} | {r['probe']['read']:.3f} | {r['probe']['analysis']:.3f} | "
            f"{r['baseline_cpu'] / mine:.1f}x |"
        )
        if ref:
            theirs = r["ref"]["read"] + r["ref"]["analysis"]
            row += f" {theirs:.3f} | {r['baseline_cpu'] / theirs:.1f}x |"
        lines.append(row)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="150,550")
    ap.add_argument("--shapes", default=",".join(trace_shapes.SHAPES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/magpie-shapes"))
    ap.add_argument("--reference-python", default=None, help="another install's Python (e.g. main's), same probe")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "gap_inprocess.md")
    args = ap.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"load_before": os.getloadavg()[0], "repeat": args.repeat, "traces": {}}
    results["fixed_cpu"] = [fixed_cost(sys.executable) for _ in range(3)]
    if args.reference_python:
        results["ref_fixed_cpu"] = [fixed_cost(args.reference_python) for _ in range(3)]
    for shape in args.shapes.split(","):
        for mb in (int(s) for s in args.sizes.split(",")):
            path, _ = trace_shapes.build(args.work_dir, shape, mb)
            r: dict[str, Any] = {
                "baseline_cpu": trace_gap.measure([sys.executable, "-c", trace_gap.BASELINE, str(path)])[3]
            }
            r["probe"] = probe(sys.executable, path, args.repeat)
            if args.reference_python:
                r["ref"] = probe(args.reference_python, path, args.repeat)
            results["traces"][f"{shape}-{mb}"] = r
            print(f"{shape}-{mb}: {json.dumps(r)}", flush=True)
    results["load_after"] = os.getloadavg()[0]
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    args.out.write_text("\n".join(report(results, bool(args.reference_python))) + "\n")
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
