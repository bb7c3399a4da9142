"""Benchmark: ``magpie gap`` and ``magpie inference`` on every trace shape, against same-run baselines.

Issue 17 asks the speed goals to hold on every trace shape, not only on the MI300 copies of
``benchmarks/trace_gap.py``. This script builds, for each shape below and each ``--sizes`` target (MB),
a plain-JSON Kineto trace of time-shifted copies of a real trace in ``tests/data/traces`` (ids offset per
copy, :func:`trace_gap.build_trace`), then runs in every round, each command in its own subprocess:

- the gap baseline: ``json.load`` + AMD Magpie's category filter and a per-name sum (``trace_gap.BASELINE``);
- ``magpie gap FILE --json`` (whole CLI, workers = cores), and ``magpie -w 1 gap FILE --json`` (one process);
- ``magpie inference FILE --spec SPEC`` (whole CLI, TraceLens tables included);
- with ``--tracelens-python PY``: TraceLens's ``generate_perf_report_pytorch_inference`` on the same file,
  for traces up to ``--tracelens-max-mb`` (it needs ~8x the file size in memory).

Shapes: ``mi300`` (OWLv2 on MI300: Python-function/CPU-op heavy, 130 k events per copy), ``h100`` (Qwen 0.5B on
H100: CPU ops, Python functions and instant events), ``vllm`` (vLLM GPT-OSS decode, CUDA graphs: kernel and
Python-function events), ``sglang`` (SGLang Qwen3-8B decode: kernel-heavy). Every ratio is per round
(baseline / magpie, each in that round); the report gives min-max over rounds and the load average.

Writes ``docs/benchmarks/trace_shapes.md`` and ``.json``. Usage:
``python benchmarks/trace_shapes.py [--sizes 150,550] [--shapes mi300,h100,vllm,sglang] [--rounds 2]
[--work-dir /tmp/magpie-shapes] [--tracelens-python /work/tracelens-venv/bin/python] [--only gap|inference]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("trace_gap", ROOT / "benchmarks" / "trace_gap.py")
trace_gap = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(trace_gap)  # type: ignore[union-attr]

TRACES = ROOT / "tests" / "data" / "traces"
#: shape -> (source trace, GPU spec for ``magpie inference``, what makes it different)
SHAPES: dict[str, tuple[Path, str, str]] = {
    "mi300": (
        TRACES / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz",
        "MI300X",
        "OWLv2 on MI300: 50% Python functions, 19% CPU ops, 3% kernels",
    ),
    "h100": (
        TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "H100",
        "Qwen 0.5B on H100: 23% CPU ops, 23% Python functions, 13% instant events, 8% kernels",
    ),
    "vllm": (
        TRACES / "inference" / "vllm_decode_full" / "graph_execution.json.gz",
        "H200",
        "vLLM decode (CUDA graphs): 49% Python functions, 21% kernels, 23% flows",
    ),
    "sglang": (
        TRACES / "inference" / "sglang_decode" / "sglang_Qwen3-8B_decode.json.gz",
        "H200",
        "SGLang decode: 40% Python functions, 27% kernels, 29% flows",
    ),
}
#: TraceLens's Python API (its ``-m`` entry point imports matplotlib for an agent module), with the tables magpie
#: writes too: kernel summary and short-kernel study
TRACELENS = (
    "import sys; from TraceLens.Reporting.generate_perf_report_pytorch_inference import generate_perf_report_pytorch; "
    "generate_perf_report_pytorch(profile_json_path=sys.argv[1], output_csvs_dir=sys.argv[2], kernel_summary=True, "
    "short_kernel_study=True)"
)


def build(work: Path, shape: str, mb: int) -> tuple[Path, dict[str, Any]]:
    """The trace of ``shape`` at ``mb`` MB under ``work`` (reused when its meta file says it is that one)."""
    path = work / f"{shape}-{mb}mb.pt.trace.json"
    meta = path.with_suffix(".meta")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("target_mb") == mb:
            return path, info
    t = time.perf_counter()
    copies, n_events = trace_gap.build_trace(path, mb, SHAPES[shape][0])
    info = {"target_mb": mb, "copies": copies, "events": n_events, "size_mb": path.stat().st_size / 1e6}
    meta.write_text(json.dumps(info))
    print(f"built {path.name}: {info['size_mb']:.0f} MB, {copies} copies, {n_events} events "
          f"in {time.perf_counter() - t:.0f} s", flush=True)  # fmt: skip
    return path, info


def commands(path: Path, shape: str, work: Path, only: str, tracelens: str | None) -> dict[str, list[str]]:
    py = sys.executable
    magpie = str(Path(py).with_name("magpie"))
    out = work / "out" / path.stem
    cmds: dict[str, list[str]] = {}
    if only in ("all", "gap"):
        cmds["baseline"] = [py, "-c", trace_gap.BASELINE, str(path)]
        cmds["gap"] = [magpie, "gap", str(path), "-o", str(out / "gap"), "--no-rank-csv", "--json"]
        # one process: the CPU a user pays on a busy machine (parts add a second process's work and a merge)
        cmds["gap-w1"] = [magpie, "-w", "1", "gap", str(path), "-o", str(out / "gap"), "--no-rank-csv", "--json"]
        # the same without the compiled trace reader (what an install without a C compiler runs)
        cmds["gap-w1-py"] = ["env", "MAGPIE_TRACE_NATIVE=0", *cmds["gap-w1"]]
    if only in ("all", "inference"):
        spec = SHAPES[shape][1]
        cmds["inference"] = [magpie, "inference", str(path), "--spec", spec, "-o", str(out / "inference")]
        if tracelens:
            cmds["tracelens"] = [tracelens, "-c", TRACELENS, str(path), str(out / "tracelens")]
    return cmds


def _range(values: list[float], fmt: str) -> str:
    if not values:
        return "–"
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo}–{hi}"


def ratios(runs: list[dict[str, Any]], num: str, den: str, f: str = "wall") -> list[float]:
    return [r[num][f] / r[den][f] for r in runs if num in r and den in r]


def report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    stretch = [r[c]["wall"] / r[c]["cpu"] for t in results["traces"].values() for r in t["rounds"]
               for c in ("gap", "inference") if c in r and r[c]["cpu"] > 0]  # fmt: skip
    lines = [
        "# Trace speed on every trace shape",
        "",
        f"Produced by `benchmarks/trace_shapes.py --rounds {args.rounds} --sizes {args.sizes}` on this machine "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}), shared with other "
        f"sessions: 1-minute load average {results['load'][0]:.1f} before and {results['load'][1]:.1f} after. "
        "Each command runs in its own subprocess, every round runs every command once, and each ratio uses its "
        "own round's baseline (ranges are min–max over rounds). Wall seconds; peak RSS is `ru_maxrss` of the "
        "largest process of the tree (from `wait4`). Under such load a niced process gets a varying share of a "
        f"core, so wall ratios swing (magpie's commands took {_range(stretch, '.1f')}x their CPU time); the CPU ratios "
        "(user + system time of each command's whole process tree) are the load-independent comparison, and "
        "understate a multi-process command's wall-clock speed-up on an idle machine.",
        "",
        "Shapes (time-shifted copies of a real trace in `tests/data/traces`, ids offset per copy):",
        "",
    ]
    shapes = {t["shape"] for t in results["traces"].values()}
    lines += [f"- `{k}`: {v[2]}" for k, v in SHAPES.items() if k in shapes]
    lines += [
        "",
        "| shape | MB | events | baseline (s) | `magpie gap` (s) | gap speed-up, wall / CPU (goal >= 20x) | "
        "`magpie -w 1 gap` speed-up, wall / CPU | `MAGPIE_TRACE_NATIVE=0 magpie -w 1 gap` speed-up, wall / CPU | "
        "`magpie inference` (s) | inference MiB | TraceLens (s) | TraceLens MiB | inference speed-up vs TraceLens, "
        "wall / CPU (goal >= 40x) | memory vs TraceLens (goal <= 15%) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for t in results["traces"].values():
        runs = t["rounds"]

        def col(cmd: str, f: str, runs: list[dict[str, Any]] = runs) -> list[float]:
            return [r[cmd][f] for r in runs if cmd in r]

        mem = [r["inference"]["rss"] / r["tracelens"]["rss"] * 100 for r in runs if "tracelens" in r]
        lines.append(
            f"| {t['shape']} | {t['size_mb']:.0f} | {t['events']:,} | {_range(col('baseline', 'wall'), '.2f')} | "
            f"{_range(col('gap', 'wall'), '.2f')} | {_range(ratios(runs, 'baseline', 'gap'), '.1f')}x / "
            f"{_range(ratios(runs, 'baseline', 'gap', 'cpu'), '.1f')}x | "
            f"{_range(ratios(runs, 'baseline', 'gap-w1'), '.1f')}x / "
            f"{_range(ratios(runs, 'baseline', 'gap-w1', 'cpu'), '.1f')}x | "
            f"{_range(ratios(runs, 'baseline', 'gap-w1-py'), '.1f')}x / "
            f"{_range(ratios(runs, 'baseline', 'gap-w1-py', 'cpu'), '.1f')}x | "
            f"{_range(col('inference', 'wall'), '.2f')} | {_range(col('inference', 'rss'), '.0f')} | "
            f"{_range(col('tracelens', 'wall'), '.1f')} | {_range(col('tracelens', 'rss'), '.0f')} | "
            f"{_range(ratios(runs, 'tracelens', 'inference'), '.1f')}x / "
            f"{_range(ratios(runs, 'tracelens', 'inference', 'cpu'), '.1f')}x | {_range(mem, '.0f')}% |"
        )
    lines += ["", "Raw rounds (wall s / CPU s / peak MiB):", ""]
    for key, t in results["traces"].items():
        for cmd in ("baseline", "gap", "gap-w1", "gap-w1-py", "inference", "tracelens"):
            got = [r[cmd] for r in t["rounds"] if cmd in r]
            if got:
                lines.append(f"- {key} {cmd}: " + "; ".join(f"{x['wall']:.2f} / {x['cpu']:.2f} / {x['rss']:.0f}"
                                                             for x in got))  # fmt: skip
    return [*lines, ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="150,550", help="trace sizes in MB, comma-separated")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/magpie-shapes"))
    ap.add_argument("--tracelens-python", default=None)
    ap.add_argument("--tracelens-max-mb", type=int, default=600)
    ap.add_argument("--tracelens-shapes", default=",".join(SHAPES), help="shapes TraceLens runs on")
    ap.add_argument("--only", choices=("all", "gap", "inference"), default="all")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "trace_shapes.md")
    ap.add_argument("--report-only", type=Path, default=None, help="rewrite --out from this run's saved .json")
    args = ap.parse_args()
    if args.report_only is not None:
        args.out.write_text("\n".join(report(json.loads(args.report_only.read_text()), args)))
        return 0
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"traces": {}, "load": [os.getloadavg()[0], 0.0]}
    plan = []
    for shape in args.shapes.split(","):
        for mb in (int(s) for s in args.sizes.split(",")):
            path, info = build(args.work_dir, shape, mb)
            tl_shape = shape in args.tracelens_shapes.split(",")
            tl = args.tracelens_python if mb <= args.tracelens_max_mb and tl_shape else None
            plan.append((f"{shape}-{mb}", path, commands(path, shape, args.work_dir, args.only, tl)))
            results["traces"][plan[-1][0]] = {"shape": shape, **info, "rounds": []}
    trace_gap.measure([str(Path(sys.executable).with_name("magpie")), "--help"])  # writes the bytecode caches
    for i in range(args.rounds):
        for key, _, cmds in plan:
            got: dict[str, dict[str, float]] = {}
            for name, argv in cmds.items():
                try:
                    wall, rss, _, cpu = trace_gap.measure(argv)
                except RuntimeError as exc:  # one failed command (TraceLens out of memory...) is reported, not fatal
                    print(f"round {i + 1} {key} {name}: FAILED {str(exc)[-300:]}", flush=True)
                    continue
                got[name] = {"wall": wall, "rss": rss, "cpu": cpu, "load": os.getloadavg()[0]}
                print(f"round {i + 1} {key} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MiB, "
                      f"load {got[name]['load']:.1f}", flush=True)  # fmt: skip
            results["traces"][key]["rounds"].append(got)
    results["load"][1] = os.getloadavg()[0]
    lines = report(results, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
