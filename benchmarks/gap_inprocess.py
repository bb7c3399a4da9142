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
[--repeat 3] [--reference-python /work/main/.venv/bin/python] [--split-parts 2 --out docs/benchmarks/X.md]``

``--split-parts N`` adds the threaded read of one large file: wall and CPU seconds of ``split_table(path, selected,
N)`` in-process (best of ``--repeat``, gc off, the probe run twice per install in alternation with the reference's),
and ``magpie gap``'s wall seconds end to end (best of 2, alternating), against the baseline's wall seconds.
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
from magpie_gap_analysis.config import GapAnalysisConfig
from magpie_trace.columns import category_matcher, stream_table
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

#: run by each install's Python with ``--split-parts``: wall and CPU seconds of ``split_table``, best of ``repeat``
SPLIT_PROBE = r"""
import gc, json, sys, time
from pathlib import Path
from magpie_gap_analysis.config import GapAnalysisConfig
from magpie_trace.columns import category_matcher, split_table
from magpie_gap_analysis.pipeline import _options

path, parts, repeat = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
options = _options(GapAnalysisConfig(), None, None)
gc.disable()
best = {"wall": float("inf"), "cpu": float("inf")}
for _ in range(repeat):
    w0, c0 = time.perf_counter(), time.process_time()
    table = split_table(path, category_matcher(options.categories, options.ignore_categories), parts)
    w1, c1 = time.perf_counter(), time.process_time()
    assert table is not None, "a part could not be read"
    best = {"wall": min(best["wall"], w1 - w0), "cpu": min(best["cpu"], c1 - c0)}
    del table
print(json.dumps(best))
"""

SMALL_TRACE = ROOT / "tests" / "data" / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def probe(python: str, path: Path, repeat: int) -> dict[str, float]:
    # -P: no current directory on sys.path, so each Python imports its own install's magpie, not this checkout's
    argv = [python, "-P", "-c", PROBE, str(path), str(repeat)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def split_probe(python: str, path: Path, parts: int, repeat: int) -> dict[str, float]:
    argv = [python, "-P", "-c", SPLIT_PROBE, str(path), str(parts), str(repeat)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def gap_wall(python: str, path: Path) -> float:
    """Wall seconds of ``magpie gap`` on ``path`` (default workers), end to end."""
    magpie = str(Path(python).with_name("magpie"))
    with tempfile.TemporaryDirectory() as out:
        return trace_gap.measure([magpie, "gap", str(path), "-o", out, "--json"])[0]


def split_rounds(pythons: dict[str, str], path: Path, parts: int, repeat: int) -> dict[str, Any]:
    """Each install's best split read and ``magpie gap`` wall, the installs in alternation (same machine load)."""
    got: dict[str, Any] = {k: {"wall": float("inf"), "cpu": float("inf"), "gap_wall": float("inf")} for k in pythons}
    for _ in range(2):
        for key, python in pythons.items():
            one = split_probe(python, path, parts, repeat)
            got[key]["wall"] = min(got[key]["wall"], one["wall"])
            got[key]["cpu"] = min(got[key]["cpu"], one["cpu"])
    for _ in range(2):
        for key, python in pythons.items():
            got[key]["gap_wall"] = min(got[key]["gap_wall"], gap_wall(python, path))
    return got


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
    if results.get("split_parts"):
        lines += split_report(results, ref)
    return lines


def split_report(results: dict[str, Any], ref: bool) -> list[str]:
    parts = results["split_parts"]
    lines = [
        "",
        f"## One file read on {parts} threads (`split_table(path, selected, {parts})`), and `magpie gap` end to end",
        "",
        f"Wall and CPU seconds of `split_table` in-process (best of {results['repeat']} runs in one process, the "
        "probe run twice per install, alternating"
        + (" with the reference" if ref else "")
        + "), and `magpie gap`'s wall seconds (default workers, best of 2, alternating); the gap speed-up is the "
        "baseline's wall seconds over `magpie gap`'s (goal >= 20x).",
        "",
    ]
    head = "| trace | baseline wall s | `split_table` wall / CPU s | `magpie gap` wall s | gap speed-up, wall |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if ref:
        head += " reference `split_table` wall / CPU s | reference `magpie gap` wall s | reference speed-up |"
        rule += " ---: | ---: | ---: |"
    lines += [head, rule]
    for name, r in results["traces"].items():
        mine, base = r["split"]["mine"], r["baseline_wall"]
        row = (
            f"| {name} | {base:.2f} | {mine['wall']:.3f} / {mine['cpu']:.3f} | {mine['gap_wall']:.2f} | "
            f"{base / mine['gap_wall']:.1f}x |"
        )
        if ref:
            theirs = r["split"]["ref"]
            row += (
                f" {theirs['wall']:.3f} / {theirs['cpu']:.3f} | {theirs['gap_wall']:.2f} |"
                f" {base / theirs['gap_wall']:.1f}x |"
            )
        lines.append(row)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="150,550")
    ap.add_argument("--shapes", default=",".join(trace_shapes.SHAPES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/magpie-shapes"))
    ap.add_argument("--reference-python", default=None, help="another install's Python (e.g. main's), same probe")
    ap.add_argument("--split-parts", type=int, default=0, help="also time split_table on this many threads")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "gap_inprocess.md")
    args = ap.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "load_before": os.getloadavg()[0],
        "repeat": args.repeat,
        "split_parts": args.split_parts,
        "traces": {},
    }
    results["fixed_cpu"] = [fixed_cost(sys.executable) for _ in range(3)]
    if args.reference_python:
        results["ref_fixed_cpu"] = [fixed_cost(args.reference_python) for _ in range(3)]
    for shape in args.shapes.split(","):
        for mb in (int(s) for s in args.sizes.split(",")):
            path, _ = trace_shapes.build(args.work_dir, shape, mb)
            baseline = trace_gap.measure([sys.executable, "-c", trace_gap.BASELINE, str(path)])
            r: dict[str, Any] = {"baseline_cpu": baseline[3], "baseline_wall": baseline[0]}
            r["probe"] = probe(sys.executable, path, args.repeat)
            if args.reference_python:
                r["ref"] = probe(args.reference_python, path, args.repeat)
            if args.split_parts:
                pythons = {"mine": sys.executable}
                if args.reference_python:
                    pythons["ref"] = args.reference_python
                r["split"] = split_rounds(pythons, path, args.split_parts, args.repeat)
            results["traces"][f"{shape}-{mb}"] = r
            print(f"{shape}-{mb}: {json.dumps(r)}", flush=True)
    results["load_after"] = os.getloadavg()[0]
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    args.out.write_text("\n".join(report(results, bool(args.reference_python))) + "\n")
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
