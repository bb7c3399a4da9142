"""Wall and CPU time of ``magpie --help`` and ``magpie gap <bundled trace>``, against another install in the same run.

Issue 30 removed the core's start-up tricks (its own entry-point discovery, a rich-free table printer, the BLAS
thread hook, a pluggy override, the report_base split, the exit that skipped the interpreter's teardown) unless
one costs a user more than 100 ms. This script measures what a user sees, this install against
``--reference-python``'s (``main``'s, which has them), and splits the difference per trick where an environment
variable or an entry point switches one off in the same install:

- ``magpie --help``; ``magpie -w 1 gap TRACE -o DIR`` (the table printed to a pipe, the CSV/JSON files and
  report.html written) and ``magpie -w 1 gap TRACE --json --no-rank-csv`` on the bundled traces
  ``tests/data/traces/inference/vllm_decode_full`` (33 KiB) and ``tests/data/traces/h100`` (1.6 MB);
- variants of the gap table run on the small trace: the reference's CLI through ``python -c "...run(argv)"`` (the
  interpreter's own exit: what its ``cli.leave`` saved), the reference with ``OPENBLAS_NUM_THREADS`` = the CPU
  count (numpy's BLAS threads as without its BLAS hook), and this install with ``OPENBLAS_NUM_THREADS=1`` (what
  the hook gave). "this with 1 BLAS thread − reference with the interpreter's exit" is then what the other
  removed tricks cost together.

Each case runs once to warm the caches, then ``--rounds`` interleaved rounds; the minimum wall and CPU (user+sys)
seconds are kept. ``PYTHONDONTWRITEBYTECODE`` is removed for the children (bytecode cached, as for a user).
Writes ``docs/benchmarks/cli_startup.md``.

Usage: ``python benchmarks/cli_startup.py --reference-python /work/main/.venv/bin/python [--rounds 9]``
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = {
    "vllm_decode_full (33 KiB)": ROOT / "tests/data/traces/inference/vllm_decode_full/graph_execution.json.gz",
    "h100 Qwen (1.6 MB)": ROOT / "tests/data/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
}
OUT = ROOT / "docs" / "benchmarks" / "cli_startup.md"
#: the CLI run with the interpreter's own exit (no teardown shortcut)
NORMAL_EXIT = "import sys; from magpie_core.cli import run; run(sys.argv[1:])"


#: a case: argv, and variables to set in its environment
Case = tuple[list[str], dict[str, str]]


def cost(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one run (its exit code must be 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-1500:]!r}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cases(python: str, out: Path) -> dict[str, list[str]]:
    magpie = str(Path(python).with_name("magpie"))
    found = {"python -c pass": [python, "-c", "pass"], "magpie --help": [magpie, "--help"]}
    for label, trace in TRACES.items():
        found[f"magpie gap, table ({label})"] = [magpie, "-w", "1", "gap", str(trace), "-o", str(out)]
        found[f"magpie gap --json ({label})"] = [
            magpie, "-w", "1", "-o", str(out), "gap", str(trace), "--json", "--no-rank-csv",
        ]  # fmt: skip
    return found


SMALL_TABLE = f"magpie gap, table ({next(iter(TRACES))})"
OWN_EXIT = "gap table (small), the interpreter's own exit"
BLAS_CPUS = "gap table (small), OPENBLAS_NUM_THREADS=CPU count"
BLAS_ONE = "gap table (small), OPENBLAS_NUM_THREADS=1"


def variants(python: str, out: Path, reference: bool) -> dict[str, Case]:
    """The per-trick variants of the small gap table run (see the module docstring)."""
    argv = cases(python, out)[SMALL_TABLE]
    if not reference:
        return {BLAS_ONE: (argv, {"OPENBLAS_NUM_THREADS": "1"})}
    return {
        OWN_EXIT: ([python, "-c", NORMAL_EXIT, *argv[1:]], {}),
        BLAS_CPUS: (argv, {"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)}),
    }


def measure(runs: dict[str, Case], rounds: int, env: dict[str, str], cwd: Path) -> dict[str, tuple[float, float]]:
    for argv, extra in runs.values():
        cost(argv, {**env, **extra}, cwd)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for name, (argv, extra) in runs.items():
            wall, cpu = cost(argv, {**env, **extra}, cwd)
            old = best.get(name, (wall, cpu))
            best[name] = (min(old[0], wall), min(old[1], cpu))
    return best


def _diff(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"{(a[0] - b[0]) * 1000:+.0f} ms | {(a[1] - b[1]) * 1000:+.0f} ms"


def report(this: dict[str, tuple[float, float]], ref: dict[str, tuple[float, float]], args: argparse.Namespace) -> str:
    lines = [
        "# `magpie` start-up: this install against a reference install, same run",
        "",
        f"`benchmarks/cli_startup.py --rounds {args.rounds} --reference-python {args.reference_python}`; "
        f"{args.label_this} is this install, {args.label_ref} the reference. Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, 1-minute load {os.getloadavg()[0]:.1f} at the end (other work shared the "
        f"machine). Minimum over {args.rounds} interleaved rounds after a warm-up run, wall and user+sys CPU "
        "seconds of the whole process.",
        "",
        f"| case | {args.label_this} wall s | {args.label_ref} wall s | this − reference, wall | CPU | "
        f"{args.label_this} CPU s | {args.label_ref} CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, (wall, cpu) in this.items():
        if name in ref:
            lines.append(f"| {name} | {wall:.3f} | {ref[name][0]:.3f} | {_diff(this[name], ref[name])} | "
                         f"{cpu:.3f} | {ref[name][1]:.3f} |")  # fmt: skip
    small = SMALL_TABLE
    lines += [
        "",
        "## Per trick (the small gap table run)",
        "",
        "| removed | how it is isolated | wall | CPU |",
        "| --- | --- | ---: | ---: |",
        f"| `cli.leave` (skip the interpreter's teardown) | {args.label_ref}: own exit − `magpie` | "
        f"{_diff(ref[OWN_EXIT], ref[small])} |",
        f"| `cli/blas.py` (numpy's BLAS with one thread) | {args.label_ref}: BLAS threads = CPUs − `magpie` | "
        f"{_diff(ref[BLAS_CPUS], ref[small])} |",
        f"| `cli/blas.py`, seen from this install | {args.label_this}: `magpie` − 1 BLAS thread | "
        f"{_diff(this[small], this[BLAS_ONE])} |",
        "| the others together (`distributions.py`, `cli/plain.py`, the pluggy override, `report_base`, "
        f"pydantic's plugin lookup) | {args.label_this} with 1 BLAS thread − {args.label_ref} with its own exit | "
        f"{_diff(this[BLAS_ONE], ref[OWN_EXIT])} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-python", required=True, help="another install's python (its magpie is measured)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--label-this", default="this branch")
    parser.add_argument("--label-ref", default="reference")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "COLUMNS")}
    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        cwd = Path(tmp)
        runs: dict[str, Case] = {}
        for who, python in (("this", sys.executable), ("ref", args.reference_python)):
            out = cwd / who
            runs.update({f"{who}|{name}": (argv, {}) for name, argv in cases(python, out).items()})
            runs.update({f"{who}|{name}": case for name, case in variants(python, out, who == "ref").items()})
        best = measure(runs, args.rounds, env, cwd)  # interleaved: each round runs every case of both installs
    this = {k.split("|", 1)[1]: v for k, v in best.items() if k.startswith("this|")}
    ref = {k.split("|", 1)[1]: v for k, v in best.items() if k.startswith("ref|")}
    text = report(this, ref, args)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
