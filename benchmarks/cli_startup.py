"""CPU cost of starting ``magpie`` for the trace commands, against baselines run in the same script.

Measures user+sys CPU seconds (best of ``--rounds``, rounds interleaved so load hits every case alike) of:

- floors: ``python -c pass``, ``python -c "import numpy"`` (the trace library needs numpy), the libraries a gap
  run cannot do without (numpy, pydantic's ``BaseModel`` for the report models, typer) and those ``--help``
  cannot (no numpy: help reads no trace; pydantic, typer and ``typer.rich_utils``, which typer imports to draw
  any help: rich, markdown-it);
- ``magpie gap --help`` and ``magpie -w 1 gap <50 KB trace> --json --no-rank-csv``, each two ways:
  **lazy** (the real CLI: the command's module and its plugin only) and **eager** (the previous way, kept
  reachable in this script: every core command module, every plugin's commands and what the plugin entry
  modules used to import at start-up — the serving stack with httpx, the benchmark and kernel config models,
  the YAML config loader, rich, numpy (through the trace package) — imported first, then the same CLI run);
- ``magpie -w 1 gap <250-event trace> -o DIR`` as a user runs it (the table printed, CSV/JSON and report.html
  written): as installed, and with ``OPENBLAS_NUM_THREADS`` set to the CPU count (numpy's BLAS threads as they
  were before ``magpie`` loaded numpy with one; see ``magpie_core/cli/blas.py``);
- with ``--shape TRACE`` (repeatable; e.g. ``/tmp/magpie-shapes/vllm-150mb.pt.trace.json``): ``magpie gap TRACE
  -o DIR`` as a user runs it on that trace (default workers, the table printed to a pipe, report.html written);
- with ``--reference-python PY``: the same commands with another install's ``magpie`` (e.g. ``main``'s), and
  "reference ÷ this" for each.

Wall seconds are listed too (best of the rounds; on a shared machine they move with the load, CPU much less).

Python writes no bytecode cache when ``PYTHONDONTWRITEBYTECODE`` is set (it is in some sandboxes), which
would add the compile time of every module to every run; the script removes it for its children and warms
each case once, so the runs measure what a user's installed ``magpie`` costs.
Also lists the ``-X importtime`` top 15 packages of the lazy gap run. Writes ``docs/benchmarks/cli_startup.md``.

Usage: ``nice -n 10 python benchmarks/cli_startup.py [--rounds 5] [--reference-python /work/main/.venv/bin/python]
[--shape TRACE ...]``
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "traces" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"
OUT = ROOT / "docs" / "benchmarks" / "cli_startup.md"
#: the tiny trace's source: its first 50 kernel/memcpy events and its first 200 events make a 250-event trace
TINY_SOURCE = ROOT / "tests" / "data" / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"

RUN_LIBS = "python -c 'import numpy, typer; from pydantic import BaseModel' (a gap run's libraries)"
HELP_LIBS = "python -c 'import typer, typer.rich_utils; from pydantic import BaseModel' (--help's libraries)"

#: the previous start-up: everything every command could need, imported before the CLI runs
EAGER = """
import importlib, sys
import magpie_core.cli as cli
from magpie_core.cli.commands import add_plugin_commands
from magpie_core.cli.lazy import CORE_COMMANDS
for module in dict.fromkeys(CORE_COMMANDS.values()):
    importlib.import_module(module)
for module in ("magpie_benchmark.serving.prometheus", "magpie_benchmark.offline", "magpie_core.config.kernel",
               "magpie_benchmark.config", "magpie_core.config.loader", "rich.console", "rich.table", "numpy"):
    importlib.import_module(module)
add_plugin_commands(cli.app)
cli.run(sys.argv[1:])
"""


#: a case: argv, and variables to set in its environment
Case = tuple[list[str], dict[str, str]]


def tiny_trace(folder: Path) -> Path:
    """A 250-event trace: the first 50 kernel/memcpy events of TINY_SOURCE, then its first 200 events."""
    data = json.loads(gzip.decompress(TINY_SOURCE.read_bytes()))
    events = data["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")][:50]
    path = folder / "tiny.json"
    path.write_text(json.dumps({**data, "traceEvents": gpu + events[:200]}))
    return path


def child_cost(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """User+sys CPU seconds and wall seconds of one run of ``argv`` (its exit code must be 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-1500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


#: the table run on the 250-event trace (its name in the report)
TABLE_RUN = "gap table run (tiny trace, report.html)"
#: a case run with the reference install is named "<case>, reference install"
REFERENCE = ", reference install"


def cases(python: str, reference: str | None, out: Path, tiny: Path, shapes: list[Path]) -> dict[str, Case]:
    magpie = str(Path(python).with_name("magpie"))
    gap_help = ["gap", "--help"]
    gap_run = ["-w", "1", "-o", str(out), "gap", str(TRACE), "--json", "--no-rank-csv"]
    table_run = ["-w", "1", "gap", str(tiny), "-o", str(out)]
    blas_before = {"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)}
    argvs = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import numpy'": [python, "-c", "import numpy"],
        RUN_LIBS: [python, "-c", "import numpy, typer; from pydantic import BaseModel"],
        HELP_LIBS: [python, "-c", "import typer, typer.rich_utils; from pydantic import BaseModel"],
        "gap --help, eager (previous)": [python, "-c", EAGER, *gap_help],
        "gap --help, lazy": [magpie, *gap_help],
        "gap run, eager (previous)": [python, "-c", EAGER, *gap_run],
        "gap run, lazy": [magpie, *gap_run],
        TABLE_RUN: [magpie, *table_run],
    }
    found: dict[str, Case] = {name: (argv, {}) for name, argv in argvs.items()}
    found["gap table run, BLAS threads as before"] = ([magpie, *table_run], blas_before)
    shape_runs = {f"gap table run ({s.name.split('.')[0]})": ["gap", str(s), "-o", str(out)] for s in shapes}
    found.update({name: ([magpie, *argv], {}) for name, argv in shape_runs.items()})
    if reference:
        other = str(Path(reference).with_name("magpie"))
        found["gap --help, lazy" + REFERENCE] = ([other, *gap_help], {})
        found["gap run, lazy" + REFERENCE] = ([other, *gap_run], {})
        found[TABLE_RUN + REFERENCE] = ([other, *table_run], {})
        found.update({name + REFERENCE: ([other, *argv], {}) for name, argv in shape_runs.items()})
    return found


def measure(runs: dict[str, Case], rounds: int, env: dict[str, str], cwd: Path) -> dict[str, tuple[float, float]]:
    """Best CPU and best wall seconds of each case over ``rounds`` interleaved rounds."""
    for argv, extra in runs.values():  # warm-up: bytecode caches written, files in the page cache
        child_cost(argv, {**env, **extra}, cwd)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for name, (argv, extra) in runs.items():
            cpu, wall = child_cost(argv, {**env, **extra}, cwd)
            old_cpu, old_wall = best.get(name, (cpu, wall))
            best[name] = (min(old_cpu, cpu), min(old_wall, wall))
    return best


def importtime_top(python: str, argv: list[str], env: dict[str, str], cwd: Path, n: int = 15) -> list[tuple[str, int]]:
    """The ``n`` packages with the most import self time (microseconds, each module's min over 3 runs)."""
    best: dict[str, int] = {}
    for _ in range(3):
        err = subprocess.run(
            [python, "-X", "importtime", "-m", "magpie_core", *argv], env=env, cwd=cwd, capture_output=True, text=True
        ).stderr
        for line in err.splitlines():
            parts = line.removeprefix("import time:").split("|")
            if len(parts) != 3 or not parts[0].strip().isdigit():
                continue
            name, us = parts[2].strip(), int(parts[0])
            best[name] = min(best.get(name, us), us)
    groups: collections.Counter[str] = collections.Counter()
    for name, us in best.items():
        top = name.split(".")[0]
        groups[".".join(name.split(".")[:2]) if top == "magpie_core" else top] += us
    return groups.most_common(n)


def report(
    costs: dict[str, tuple[float, float]], top: list[tuple[str, int]], rounds: int, reference: str | None
) -> str:
    best = {name: cpu for name, (cpu, _) in costs.items()}
    floor = best["python -c pass"]
    numpy_floor = best["python -c 'import numpy'"]
    lines = [
        "# `magpie` start-up CPU for the trace commands",
        "",
        f"`benchmarks/cli_startup.py --rounds {rounds}`"
        + (f" `--reference-python {reference}`" if reference else "")
        + f"; Python {platform.python_version()}, {os.cpu_count()} CPUs, 1-minute load "
        f"{os.getloadavg()[0]:.1f} at the end. User+sys CPU seconds of the whole process, best of {rounds} "
        "interleaved rounds after a warm-up run (bytecode cached). Trace: "
        f"`{TRACE.relative_to(ROOT)}` ({TRACE.stat().st_size / 1024:.0f} KiB). **eager (previous)** imports what "
        "every `magpie` command imported before the lazy CLI (all core command modules, every plugin's commands, "
        "the serving stack with httpx, the benchmark/kernel config models, the YAML loader, rich, numpy), then runs "
        "the same command; **lazy** is the installed `magpie`.",
        "",
        "| case | CPU s | wall s | eager ÷ this | above its libraries | reference ÷ this (CPU, wall) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, cpu in best.items():
        kind = "gap --help" if name.startswith("gap --help") else "gap run" if name.startswith("gap run") else ""
        eager = best.get(f"{kind}, eager (previous)") if kind else None
        vs = f"{eager / cpu:.2f}x" if eager and "eager" not in name else ""
        above = f"{cpu - best[HELP_LIBS if kind == 'gap --help' else RUN_LIBS]:+.3f}" if kind else ""
        ref = costs.get(name + REFERENCE)
        vs_ref = f"{ref[0] / cpu:.2f}x, {ref[1] / costs[name][1]:.2f}x" if ref else ""
        lines.append(f"| {name} | {cpu:.3f} | {costs[name][1]:.3f} | {vs} | {above} | {vs_ref} |")
    lines += [
        "",
        f"Python itself: {floor:.3f} s; `import numpy`: {numpy_floor:.3f} s. What the lazy gap run spends above "
        f"the libraries it cannot avoid ({best['gap run, lazy'] - best[RUN_LIBS]:.3f} s here) is plugin discovery "
        "(every installed plugin's entry module is imported and registered with pluggy), the command's own modules, "
        "and the run itself: pydantic building the report models' schemas on first use, the kernel-name parsers' "
        "regexes, report.html. `--help` imports no numpy; most of its cost is typer drawing help with rich.",
        "",
        "The table run is `magpie -w 1 gap tiny.json -o DIR` as a user types it: it prints the table (to a pipe "
        "here: drawn without rich, the same bytes) and writes the CSV/JSON files and report.html (with plotly.js, "
        '~5 MB); a shape run is `magpie gap TRACE -o DIR` on that trace. "BLAS threads as before" '
        "sets `OPENBLAS_NUM_THREADS` to the CPU count, as numpy's OpenBLAS chose before magpie loaded it with one "
        "thread: its extra CPU is those threads spinning.",
        "",
        "## `-X importtime` top 15 packages, lazy `magpie -w 1 gap ... --json --no-rank-csv`",
        "",
        "Import self time summed per package (`magpie_core.<module>` per module), each module's minimum over 3 "
        "runs, in ms (`-X importtime` itself inflates these; read them as shares).",
        "",
        "| package | ms |",
        "| --- | ---: |",
        *(f"| {name} | {us / 1000:.1f} |" for name, us in top),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reference-python", help="another install's python (its magpie is measured too)")
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--shape", type=Path, action="append", default=[], help="a trace for a `magpie gap` run too")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        cwd = Path(tmp)
        runs = cases(sys.executable, args.reference_python, cwd / "out", tiny_trace(cwd), args.shape)
        best = measure(runs, args.rounds, env, cwd)
        gap_run = ["-w", "1", "-o", str(cwd / "out"), "gap", str(TRACE), "--json", "--no-rank-csv"]
        top = importtime_top(sys.executable, gap_run, env, cwd)
    text = report(best, top, args.rounds, args.reference_python)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
