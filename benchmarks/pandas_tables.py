"""pandas for the trace analyzers' group-by tables (issue 33): same outputs? what does it cost the commands?

The candidates are the hand-written group-bys of ``magpie gap`` and ``magpie inference``, each rewritten as a
pandas user would write it (a frame, ``groupby(sort=False).agg``, ``sort_values``, ``cumsum``):

- ``magpie gap``: the per-kernel-name statistics of a rank (``magpie_gap_analysis.analysis._kernel_stats``:
  calls, total, sum of squares, min, max, first event per name, from ``np.bincount`` / ``np.minimum.at``);
- ``magpie inference``: the TraceLens summary tables (``magpie_inference_analysis.tl_summaries``:
  ``ops_summary``, ``ops_by_category``, ``kernel_summary``, ``short_kernels``: dict-of-lists accumulation, then
  hand-made sums, means, percentages and cumulative percentages).

Every command runs through this file (``--child VARIANT -- ARGV``), so the variants differ only in what they
import and which functions build the tables:

- ``numpy``: the analyzers as they are;
- ``import``: as they are, plus ``import pandas`` first (the least any pandas table costs a command);
- ``pandas``: the candidates below patched over the analyzers' functions.

First every variant's output folder is compared with the ``numpy`` one (``trace_outputs_equal.compare``: CSV text
exactly, JSON values exactly but timings). Then ``--rounds`` interleaved rounds (numpy, import, pandas, numpy, ...
per trace and command) time each run (wall and user+sys CPU of the child); the report gives medians, min-max and the
ratios to ``numpy`` of the same round. Writes ``docs/benchmarks/pandas_tables_run.md`` (and ``.json``).

Usage: ``python benchmarks/pandas_tables.py [--rounds 7] [--trace BIG.json ...]`` (the bundled traces of
``tests/data/traces`` are always measured; ``--build-mb 150`` adds time-shifted copies of the MI300 and SGLang
traces of that size, made with ``trace_gap.build_trace`` under ``--work``).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"
#: the measured table (docs/benchmarks/pandas_tables.md reads it and says what follows from it)
OUT = ROOT / "docs" / "benchmarks" / "pandas_tables_run.md"
VARIANTS = ("numpy", "import", "pandas")
COMMANDS = ("gap", "inference")
LIMIT = 1.10  # issue 33: no more than 10 % slower


def _sibling(name: str) -> ModuleType:
    """Another script of benchmarks/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# -- the pandas candidates ------------------------------------------------------------------------------------------


def gap_kernel_stats(table: Any, options: Any, window: Any, launches: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """``analysis._kernel_stats`` as one pandas group-by per kernel name (in order of first appearance)."""
    import pandas as pd
    from magpie_gap_analysis import analysis

    sel = table["sel"]
    keep = sel["dur"] >= options.min_duration_us
    if not window.full:
        keep &= window.members(sel, launches) >= 0
    rows = np.flatnonzero(keep)
    if not len(rows):
        return {}, {}
    d = sel["dur"][rows]
    codes, name_ids = pd.factorize(sel["name"][rows])  # codes number the names in order of first appearance
    agg = (
        pd.DataFrame({"name": codes, "d": d, "d2": d * d, "row": rows})
        .groupby("name")
        .agg(
            calls=("d", "size"),
            total=("d", "sum"),
            sumsq=("d2", "sum"),
            lo=("d", "min"),
            hi=("d", "max"),
            first=("row", "first"),
        )
    )
    stats: dict[str, Any] = {}
    first_row: dict[str, int] = {}
    for name_id, r in zip(name_ids.tolist(), agg.to_dict("records"), strict=True):  # records: Python numbers
        name = table.names[name_id]
        stats[name] = analysis.KernelStat(name, r["calls"], r["total"], r["sumsq"], r["lo"], r["hi"])
        first_row[name] = r["first"]
    analysis._add_shapes(table, sel["ext"][rows], codes, list(stats.values()))
    return stats, first_row


def _percentages(df: Any, time_col: str) -> list[dict[str, Any]]:
    """``tl_summaries.with_percentages``: longest first, share of the total and running share; as rows."""
    df = df.sort_values(time_col, ascending=False, kind="stable")
    total = df[time_col].sum()
    df["Percentage (%)"] = 100.0 * df[time_col] / total if total else 0.0
    df["Cumulative Percentage (%)"] = df["Percentage (%)"].cumsum()
    return df.to_dict("records")


def ops_summary(unified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import pandas as pd
    from magpie_inference_analysis.tl_summaries import KT

    df = (
        pd.DataFrame(unified)
        .groupby("name", sort=False)
        .agg(
            total_direct_kernel_time_sum=(f"{KT}_sum", "sum"),
            Count=("operation_count", "sum"),
            Categories=("op category", lambda c: repr(list(c.unique()))),
        )
        .reset_index()
    )
    df["total_direct_kernel_time_ms"] = df["total_direct_kernel_time_sum"] / 1000.0
    return _percentages(df, "total_direct_kernel_time_sum")


def ops_by_category(unified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import pandas as pd
    from magpie_inference_analysis.tl_summaries import KT

    df = (
        pd.DataFrame(unified)
        .groupby("op category", sort=False)
        .agg(Count=("operation_count", "sum"), total_direct_kernel_time_ms=(f"{KT}_sum", "sum"))
        .reset_index()
    )
    df["total_direct_kernel_time_ms"] /= 1000.0
    return _percentages(df, "total_direct_kernel_time_ms")


def _kernel_frame(st: Any, ops: list[Any], **per_op: Any) -> Any:
    """One row per kernel of ``ops``: its name and duration, and ``per_op`` columns (a function of the op each)."""
    import pandas as pd

    idx = np.array([i for op in ops for i in op.kernels], np.int64)
    reps = [len(op.kernels) for op in ops]
    cols = {k: np.repeat(np.array([f(op) for op in ops], object), reps) for k, f in per_op.items()}
    names = np.array(st.kernel_names.values, object)
    return pd.DataFrame({**cols, "Kernel name": names[st.k_name[idx]], "d": st.k_dur[idx]})


def kernel_summary(st: Any, ops: list[Any]) -> list[dict[str, Any]]:
    keys = ["Parent op category", "Parent cpu_op", "Kernel name"]
    df = _kernel_frame(st, ops, **{keys[0]: lambda op: op.category, keys[1]: lambda op: op.name})
    p = "Kernel duration (µs)_"
    out = df.groupby(keys, sort=False)["d"].agg(["sum", "count", "mean", "min", "max"]).add_prefix(p).reset_index()
    out["Percent of kernels time (%)"] = 100.0 * out[f"{p}sum"] / out[f"{p}sum"].sum()
    return out.sort_values(f"{p}sum", ascending=False, kind="stable").to_dict("records")


def short_kernels(st: Any, ops: list[Any], fmt_args: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from magpie_inference_analysis import tl_summaries as tls

    keys = ["Parent cpu_op", "Input dims", "Input strides", "Concrete Inputs", "Kernel name"]
    fields = {"Input dims": "input_dims", "Input strides": "strides", "Concrete Inputs": "concrete"}

    def arg(field: str) -> Any:
        return lambda op: fmt_args(getattr(op.args, field)) if op.args is not None else ""

    df = _kernel_frame(st, ops, **{"Parent cpu_op": lambda op: op.name}, **{c: arg(f) for c, f in fields.items()})
    total = float(st.k_dur.sum()) or 1.0
    p = "Short Kernel "
    out = df[df["d"] < tls.SHORT_US].groupby(keys, sort=False)["d"].agg(["sum", "size", "mean"]).reset_index()
    out.columns = [*keys, f"{p}duration (µs) sum", f"{p}count", f"{p}duration (µs) mean"]
    out[f"{p}duration (µs) percent of total time"] = 100.0 * out[f"{p}duration (µs) sum"] / total
    rows = out.sort_values(f"{p}duration (µs) sum", ascending=False, kind="stable").to_dict("records")
    _, hist = NUMPY["short_kernels"](st, [], fmt_args)  # the histogram: the analyzer's own (numpy's already)
    return rows, hist


#: the analyzers' functions the ``pandas`` variant replaced, by name
NUMPY: dict[str, Any] = {}


def patch(variant: str) -> None:
    """Make this process's analyzers the ``variant``'s (see the module docstring)."""
    if variant == "numpy":
        return
    import pandas  # noqa: F401  (the import is what the ``import`` variant measures)

    if variant == "pandas":
        from magpie_gap_analysis import analysis
        from magpie_inference_analysis import tl_summaries

        analysis._kernel_stats = gap_kernel_stats
        for f in (ops_summary, ops_by_category, kernel_summary, short_kernels):
            NUMPY[f.__name__] = getattr(tl_summaries, f.__name__)
            setattr(tl_summaries, f.__name__, f)


# -- the runs -------------------------------------------------------------------------------------------------------


def argv(variant: str, command: str, trace: Path, out: Path) -> list[str]:
    """``magpie COMMAND TRACE -o OUT`` (the table printed to a pipe, every file written) through this file."""
    return [sys.executable, __file__, "--child", variant, "--", command, str(trace), "-o", str(out)]


def child(variant: str, rest: list[str]) -> None:
    patch(variant)
    from magpie_core.cli import main

    sys.argv = ["magpie", *rest]
    main()


def numeric_change(a: Path, b: Path) -> tuple[int, int, float]:
    """Over the CSV files of two output folders: how many numeric cells there are, how many differ, and the largest
    relative difference among those (files matched by name, run folders' time stamps aside)."""
    equal = _sibling("trace_outputs_equal")
    files_b = {equal._text(str(p.relative_to(b)), b): p for p in b.rglob("*.csv")}
    cells = changed = 0
    worst = 0.0
    for fa in a.rglob("*.csv"):
        fb = files_b.get(equal._text(str(fa.relative_to(a)), a))
        if fb is None:
            continue
        with fa.open(newline="") as ta, fb.open(newline="") as tb:
            for x, y in zip(
                itertools.chain.from_iterable(csv.reader(ta)),
                itertools.chain.from_iterable(csv.reader(tb)),
                strict=False,
            ):
                try:
                    fx, fy = float(x), float(y)
                except ValueError:
                    continue
                cells += 1
                if x != y:
                    changed += 1
                    worst = max(worst, abs(fx - fy) / max(abs(fx), abs(fy)))
    return cells, changed, worst


def check(traces: list[Path], work: Path) -> dict[str, dict[str, Any]]:
    """Per trace, command and variant: the differences of its output folder from the ``numpy`` variant's (files),
    and how much the numbers of their CSV files differ."""
    equal = _sibling("trace_outputs_equal")
    cost = _sibling("cli_startup").cost
    found: dict[str, dict[str, Any]] = {}
    for trace in traces:
        for command in COMMANDS:
            outs = {v: work / "check" / f"{trace.name}-{command}-{v}" for v in VARIANTS}
            for v, out in outs.items():
                cost(argv(v, command, trace, out), ENV, work)
            for v in VARIANTS[1:]:
                cells, changed, worst = numeric_change(outs["numpy"], outs[v])
                found[f"{trace.name} {command} {v}"] = {
                    "files": equal.compare(outs["numpy"], outs[v]),
                    "numeric_cells": cells,
                    "changed_cells": changed,
                    "max_relative_change": worst,
                }
    return found


def _outputs(d: dict[str, Any] | None) -> str:
    """The report's "outputs" cell: same, or which files differ and by how much."""
    if d is None:
        return "–"
    if not d["files"]:
        return "same"
    names = sorted({f.split(":")[0].rsplit("/", 1)[-1] for f in d["files"]})
    return (
        f"differ: {d['changed_cells']} of {d['numeric_cells']} CSV numbers, up to {d['max_relative_change']:.1e} "
        f"relative ({', '.join(names)})"
    )


#: Python's default: bytecode cached (this machine's shell sets PYTHONDONTWRITEBYTECODE=1)
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "COLUMNS")}


def measure(traces: list[Path], rounds: int, work: Path) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of every run, per ``trace|command|variant``, after one warm-up run each."""
    cost = _sibling("cli_startup").cost
    keys = [(t, c, v) for t in traces for c in COMMANDS for v in VARIANTS]
    for t, c, v in keys:
        cost(argv(v, c, t, work / "timed"), ENV, work)
    times: dict[str, list[tuple[float, float]]] = {}
    for n in range(rounds):
        for t, c, v in keys:
            times.setdefault(f"{t.name}|{c}|{v}", []).append(cost(argv(v, c, t, work / "timed"), ENV, work))
        print(f"round {n + 1}/{rounds} done", flush=True)
    return times


def _mb(path: Path) -> str:
    size = path.stat().st_size
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
    return shown + (" gz" if path.suffix == ".gz" else "")


def report(traces: list[Path], times: dict[str, list[tuple[float, float]]], diffs: dict[str, dict[str, Any]],
           args: argparse.Namespace) -> str:  # fmt: skip
    lines = [
        "# pandas for the trace analyzers' group-by tables: what it costs `magpie gap` and `magpie inference`",
        "",
        f"Produced by `benchmarks/pandas_tables.py --rounds {args.rounds}` (Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, shared with other work: 1-minute load {os.getloadavg()[0]:.1f} at the end). Each "
        "command runs as its own process through the script; the variants (`numpy`: the analyzers as they are, "
        "`import`: the same after `import pandas`, `pandas`: the group-by tables built with pandas) run "
        "interleaved, one after another per trace and command in every round. Ratios are variant / `numpy` of the "
        "same round; median and min-max over rounds.",
        "",
        "| trace | command | variant | wall s, median (min-max) | CPU s, median | wall / numpy, median (min-max) "
        "| CPU / numpy, median | outputs |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for t in traces:
        for c in COMMANDS:
            base = times[f"{t.name}|{c}|numpy"]
            for v in VARIANTS:
                runs = times[f"{t.name}|{c}|{v}"]
                walls, cpus = [w for w, _ in runs], [u for _, u in runs]
                wr = [w / b[0] for (w, _), b in zip(runs, base, strict=True)]
                cr = [u / b[1] for (_, u), b in zip(runs, base, strict=True)]
                same = _outputs(diffs.get(f"{t.name} {c} {v}"))
                lines.append(
                    f"| {t.name} ({_mb(t)}) | {c} | {v} | {statistics.median(walls):.3f} ({min(walls):.3f}-"
                    f"{max(walls):.3f}) | {statistics.median(cpus):.3f} | {statistics.median(wr):.2f}x "
                    f"({min(wr):.2f}-{max(wr):.2f}) | {statistics.median(cr):.2f}x | {same} |"
                )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--trace", type=Path, action="append", default=[], help="another trace to measure")
    ap.add_argument("--build-mb", type=int, default=0, help="add MI300 and SGLang copies of this size (MB)")
    ap.add_argument("--work", type=Path, default=None, help="where built traces are kept (default: a temp folder)")
    ap.add_argument("--output", type=Path, default=OUT)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.rest[1:] if args.rest[:1] == ["--"] else args.rest)
        return 0
    traces = [
        TRACES / "inference" / "vllm_decode_full" / "graph_execution.json.gz",
        TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        TRACES / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz",
        *(t.resolve() for t in args.trace),
    ]
    with tempfile.TemporaryDirectory(prefix="pandas_tables_") as tmp:
        work = args.work or Path(tmp)
        if args.build_mb:
            shapes = _sibling("trace_shapes")
            traces += [shapes.build(work, shape, args.build_mb)[0] for shape in ("mi300", "sglang")]
        diffs = check(traces, Path(tmp))
        for k, d in diffs.items():
            print(f"{k}: {_outputs(d)}", flush=True)
        times = measure(traces, args.rounds, Path(tmp))
    text = report(traces, times, diffs, args)
    args.output.write_text(text)
    args.output.with_suffix(".json").write_text(json.dumps({"times": times, "diffs": diffs}, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
