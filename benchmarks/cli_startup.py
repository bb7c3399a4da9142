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
- with ``--reference-python PY``: the same two commands with another install's ``magpie`` (e.g. ``main``'s).

Python writes no bytecode cache when ``PYTHONDONTWRITEBYTECODE`` is set (it is in some sandboxes), which
would add the compile time of every module to every run; the script removes it for its children and warms
each case once, so the runs measure what a user's installed ``magpie`` costs.
Also lists the ``-X importtime`` top 15 packages of the lazy gap run. Writes ``docs/benchmarks/cli_startup.md``.

Usage: ``nice -n 10 python benchmarks/cli_startup.py [--rounds 5] [--reference-python /work/main/.venv/bin/python]``
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "traces" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"
OUT = ROOT / "docs" / "benchmarks" / "cli_startup.md"

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
for module in ("magpie_core.serving.prometheus", "magpie_core.pipelines.offline", "magpie_core.config.kernel",
               "magpie_core.config.benchmark", "magpie_core.config.loader", "rich.console", "rich.table", "numpy"):
    importlib.import_module(module)
add_plugin_commands(cli.app)
cli.run(sys.argv[1:])
"""


def child_cpu(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """User+sys CPU seconds of one run of ``argv`` (its exit code must be 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-1500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cases(python: str, reference: str | None, out: Path) -> dict[str, list[str]]:
    magpie = str(Path(python).with_name("magpie"))
    gap_help = ["gap", "--help"]
    gap_run = ["-w", "1", "-o", str(out), "gap", str(TRACE), "--json", "--no-rank-csv"]
    found = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import numpy'": [python, "-c", "import numpy"],
        RUN_LIBS: [python, "-c", "import numpy, typer; from pydantic import BaseModel"],
        HELP_LIBS: [python, "-c", "import typer, typer.rich_utils; from pydantic import BaseModel"],
        "gap --help, eager (previous)": [python, "-c", EAGER, *gap_help],
        "gap --help, lazy": [magpie, *gap_help],
        "gap run, eager (previous)": [python, "-c", EAGER, *gap_run],
        "gap run, lazy": [magpie, *gap_run],
    }
    if reference:
        other = str(Path(reference).with_name("magpie"))
        found["gap --help, reference install"] = [other, *gap_help]
        found["gap run, reference install"] = [other, *gap_run]
    return found


def measure(runs: dict[str, list[str]], rounds: int, env: dict[str, str], cwd: Path) -> dict[str, float]:
    for argv in runs.values():  # warm-up: bytecode caches written, files in the page cache
        child_cpu(argv, env, cwd)
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, argv in runs.items():
            cpu = child_cpu(argv, env, cwd)
            best[name] = min(best.get(name, cpu), cpu)
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


def report(best: dict[str, float], top: list[tuple[str, int]], rounds: int, reference: str | None) -> str:
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
        "| case | CPU s | eager ÷ this | above its libraries |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, cpu in best.items():
        kind = "gap --help" if name.startswith("gap --help") else "gap run" if name.startswith("gap run") else ""
        eager = best.get(f"{kind}, eager (previous)") if kind else None
        vs = f"{eager / cpu:.2f}x" if eager and "eager" not in name else ""
        above = f"{cpu - best[HELP_LIBS if kind == 'gap --help' else RUN_LIBS]:+.3f}" if kind else ""
        lines.append(f"| {name} | {cpu:.3f} | {vs} | {above} |")
    lines += [
        "",
        f"Python itself: {floor:.3f} s; `import numpy`: {numpy_floor:.3f} s. What the lazy gap run spends above "
        f"the libraries it cannot avoid ({best['gap run, lazy'] - best[RUN_LIBS]:.3f} s here) is plugin discovery "
        "(every installed plugin's entry module is imported, with the report models), the command's own modules, "
        "and the run itself: pydantic building the report models' schemas on first use, the kernel-name parsers' "
        "regexes, report.html. `--help` imports no numpy; most of its cost is typer drawing help with rich.",
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
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        cwd = Path(tmp)
        best = measure(cases(sys.executable, args.reference_python, cwd / "out"), args.rounds, env, cwd)
        gap_run = ["-w", "1", "-o", str(cwd / "out"), "gap", str(TRACE), "--json", "--no-rank-csv"]
        top = importtime_top(sys.executable, gap_run, env, cwd)
    text = report(best, top, args.rounds, args.reference_python)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
