"""Benchmark: the floor under any ``magpie gap`` that starts Python and imports numpy, against issue 17's 20x budget.

For each trace shape of ``benchmarks/trace_shapes.py`` (built there, reused here) at one size, every round measures
in its own subprocess: the gap baseline (``json.load`` + a per-name sum, ``trace_gap.BASELINE``), whose twentieth is
the budget; ``python -c pass``; and one process that times, with ``time.perf_counter``, ``import numpy``, the import
of the trace library and the compiled two-thread read of the file (``split_table`` in 2 parts, as ``magpie gap``
reads it on two cores). The floor is python start + those three steps: what is paid before an option is parsed, a
plugin discovered, anything analyzed or a file written. Ranges are min-max over rounds.

Writes ``docs/benchmarks/gap_floor.md`` and ``.json``. Usage: ``python benchmarks/gap_floor.py [--size 150]
[--shapes mi300,h100,vllm,sglang] [--rounds 3] [--work-dir /tmp/magpie-shapes]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# the shapes and their builder; trace_shapes loads trace_gap (baseline, measure) and keeps it as an attribute
_spec = importlib.util.spec_from_file_location("trace_shapes", ROOT / "benchmarks" / "trace_shapes.py")
trace_shapes = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(trace_shapes)  # type: ignore[union-attr]
trace_gap = trace_shapes.trace_gap

#: one process: the steps after the interpreter started, each timed in it (seconds, as JSON)
STEPS = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
from magpie_trace.columns import category_matcher, split_table
t2 = time.perf_counter()
table = split_table(sys.argv[1], category_matcher(["kernel", "gpu"], ["gpu_user_annotation", "user_annotation"]), 2)
t3 = time.perf_counter()
assert table is not None and table.num_events > 0
print(json.dumps({"numpy": t1 - t0, "library": t2 - t1, "read": t3 - t2}))
"""


def _steps(path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", STEPS, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _range(values: list[float], scale: float = 1.0) -> str:
    lo, hi = min(values) * scale, max(values) * scale
    return f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=150, help="trace size in MB")
    ap.add_argument("--shapes", default=",".join(trace_shapes.SHAPES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/magpie-shapes"))
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "gap_floor.md")
    args = ap.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0], 0.0]
    results: dict[str, dict[str, list[float]]] = {}
    for shape in args.shapes.split(","):
        path, _ = trace_shapes.build(args.work_dir, shape, args.size)
        got: dict[str, list[float]] = {k: [] for k in ("baseline", "python", "numpy", "library", "read", "floor")}
        for _ in range(args.rounds):
            got["baseline"].append(trace_gap.measure([sys.executable, "-c", trace_gap.BASELINE, str(path)])[0])
            got["python"].append(trace_gap.measure([sys.executable, "-c", "pass"])[0])
            steps = _steps(path)
            for key, value in steps.items():
                got[key].append(value)
            got["floor"].append(got["python"][-1] + sum(steps.values()))
        results[shape] = got
        print(shape, {k: _range(v) for k, v in got.items()}, flush=True)
    load[1] = os.getloadavg()[0]
    lines = [
        f"# The floor under `magpie gap` at {args.size} MB (issue 17)",
        "",
        f"Produced by `benchmarks/gap_floor.py --size {args.size} --rounds {args.rounds}` on this machine "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}), 1-minute load average "
        f"{load[0]:.1f} before and {load[1]:.1f} after. Seconds, min-max over rounds. The budget is the baseline "
        "(`json.load` + a per-name sum, in its own process) divided by 20. The floor is what any command that starts "
        "Python, imports numpy and reads the trace with magpie's compiled reader on two threads pays before it parses "
        "an option, loads a plugin, analyzes anything or writes a file: `python -c pass` + `import numpy` + the trace "
        "library's import + the read (each step timed inside one process). Floor above budget: 20x cannot be met "
        "by such a command on that shape, whatever comes after the read.",
        "",
        "| shape | baseline | 20x budget | `python -c pass` | `import numpy` | trace library | 2-thread read | floor | "
        "floor / budget |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for shape, got in results.items():
        ratios = [f / (b / 20) for f, b in zip(got["floor"], got["baseline"], strict=True)]
        lines.append(
            f"| {shape} | {_range(got['baseline'])} | {_range(got['baseline'], 1 / 20)} | {_range(got['python'])} | "
            f"{_range(got['numpy'])} | {_range(got['library'])} | {_range(got['read'])} | {_range(got['floor'])} | "
            f"{min(ratios):.2f}-{max(ratios):.2f} |"
        )
    args.out.write_text("\n".join([*lines, ""]))
    raw = {"load": load, "size_mb": args.size, "results": results}
    args.out.with_suffix(".json").write_text(json.dumps(raw, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
