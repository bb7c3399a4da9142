"""Wall and CPU time of ``magpie --help`` and ``magpie gap <bundled trace>``, against another install in the same run.

Issue 30 removed the core's start-up tricks (its own entry-point discovery, a rich-free table printer, the BLAS
thread hook, a pluggy override, the report_base split) unless one costs a user more than 100 ms. This script
measures what a user sees, this install against ``--reference-python``'s (e.g. ``main``'s, which has them):

- ``magpie --help``;
- ``magpie -w 1 gap TRACE -o DIR`` (the table printed to a pipe, the CSV/JSON files and report.html written) on
  the bundled traces ``tests/data/traces/inference/vllm_decode_full`` (33 KiB) and ``tests/data/traces/h100``
  (a 1.6 MB Qwen trace);
- ``magpie -w 1 gap TRACE --json --no-rank-csv`` (nothing printed through rich);
- with ``--exit-variant``: the gap table run through ``python -c "...run(argv)"`` with the interpreter's normal
  exit, next to the executable (which, before issue 30, skipped the interpreter's teardown).

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


def cases(python: str, out: Path, exit_variant: bool) -> dict[str, list[str]]:
    magpie = str(Path(python).with_name("magpie"))
    found = {"python -c pass": [python, "-c", "pass"], "magpie --help": [magpie, "--help"]}
    for label, trace in TRACES.items():
        found[f"magpie gap, table ({label})"] = [magpie, "-w", "1", "gap", str(trace), "-o", str(out)]
        found[f"magpie gap --json ({label})"] = [
            magpie, "-w", "1", "-o", str(out), "gap", str(trace), "--json", "--no-rank-csv",
        ]  # fmt: skip
    if exit_variant:
        trace = next(iter(TRACES.values()))
        found["gap table, interpreter's own exit"] = [python, "-c", NORMAL_EXIT, "-w", "1", "gap", str(trace)]
        found["gap table, interpreter's own exit"] += ["-o", str(out)]
    return found


def measure(runs: dict[str, list[str]], rounds: int, env: dict[str, str], cwd: Path) -> dict[str, tuple[float, float]]:
    for argv in runs.values():
        cost(argv, env, cwd)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for name, argv in runs.items():
            wall, cpu = cost(argv, env, cwd)
            old = best.get(name, (wall, cpu))
            best[name] = (min(old[0], wall), min(old[1], cpu))
    return best


def report(this: dict[str, tuple[float, float]], ref: dict[str, tuple[float, float]], args: argparse.Namespace) -> str:
    lines = [
        "# `magpie` start-up: this install against a reference install, same run",
        "",
        f"`benchmarks/cli_startup.py --rounds {args.rounds} --reference-python {args.reference_python}`"
        + (" --exit-variant" if args.exit_variant else "")
        + f"; Python {platform.python_version()}, {os.cpu_count()} CPUs, 1-minute load {os.getloadavg()[0]:.1f} at "
        f"the end. Minimum over {args.rounds} interleaved rounds after a warm-up run, wall and user+sys CPU seconds "
        f"of the whole process. {args.label_this} is this install, {args.label_ref} the reference.",
        "",
        f"| case | {args.label_this} wall s | {args.label_ref} wall s | wall: this − reference | "
        f"{args.label_this} CPU s | {args.label_ref} CPU s | CPU ratio this ÷ reference |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, (wall, cpu) in this.items():
        if name not in ref:
            lines.append(f"| {name} | {wall:.3f} | | | {cpu:.3f} | | |")
            continue
        rwall, rcpu = ref[name]
        lines.append(
            f"| {name} | {wall:.3f} | {rwall:.3f} | {(wall - rwall) * 1000:+.0f} ms | {cpu:.3f} | {rcpu:.3f} | "
            f"{cpu / rcpu:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-python", required=True, help="another install's python (its magpie is measured)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--exit-variant", action="store_true", help="also the gap run with the interpreter's exit")
    parser.add_argument("--label-this", default="this branch")
    parser.add_argument("--label-ref", default="reference")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "COLUMNS")}
    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        cwd = Path(tmp)
        mine = cases(sys.executable, cwd / "this", args.exit_variant)
        theirs = cases(args.reference_python, cwd / "ref", args.exit_variant)
        both = {**{("this", k): v for k, v in mine.items()}, **{("ref", k): v for k, v in theirs.items()}}
        # interleave: each round runs every case of both installs
        best = measure({f"{who}|{name}": argv for (who, name), argv in both.items()}, args.rounds, env, cwd)
    this = {k.split("|", 1)[1]: v for k, v in best.items() if k.startswith("this|")}
    ref = {k.split("|", 1)[1]: v for k, v in best.items() if k.startswith("ref|")}
    text = report(this, ref, args)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
