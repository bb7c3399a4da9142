"""What the hack-proof checks cost a user: compare wall time with them (this checkout) and without (an older one).

    git worktree add /tmp/magpie_old 9b87e25          # the last commit before the referee and the spot checks
    python benchmarks/integrity_cost.py --old /tmp/magpie_old --rounds 3 --out docs/benchmarks/integrity_cost.md

Runs, alternately (old, new, old, new, ...; the order flips each round so drift on a shared machine falls on both),
the README demo compare (``examples/softmax/compare.yaml``) and a KernelBench bed problem (reference, one correct
alternative, one identical copy) through the real command line, and writes the median wall seconds of each and the
same-run ratio new / old. The older checkout is run from this venv with its packages first on ``PYTHONPATH`` (pure
Python: the same interpreter, torch and plugins' entry points). Goal (issue 44): ratio <= 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BED = ROOT / "benchmarks" / "kernelbench_bed"


def _pythonpath(checkout: Path) -> str:
    roots = [checkout, *sorted(checkout.glob("*/src")), *sorted(checkout.glob("plugins/*/src"))]
    return os.pathsep.join(str(p) for p in roots)


def _cases(problem: str) -> dict[str, list[str]]:
    folder = BED / problem
    reference = folder / "reference.py"
    others = sorted(p for p in folder.glob("*.py") if p.name != "reference.py")[:2]
    return {
        "README demo (softmax, 5 variants)": ["compare", "-k", str(ROOT / "examples/softmax/compare.yaml")],
        f"KernelBench {problem} (+{len(others)} solutions)": ["compare", str(reference), *map(str, others)],
    }


def _run(args: list[str], checkout: Path | None, out: Path) -> float:
    env = {**os.environ, "NO_COLOR": "1"}
    if checkout is not None:
        env["PYTHONPATH"] = _pythonpath(checkout)
    start = time.perf_counter()
    # run from outside the repository: ``python -m`` puts the working directory first on sys.path, and the
    # repository's own magpie_core would then shadow the older checkout's
    done = subprocess.run(
        [sys.executable, "-m", "magpie_core", "-o", str(out), *args, "--no-html"],
        cwd=out.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{args}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout without the hack-proof checks")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--problem", default="l1_23_softmax", help="a folder of benchmarks/kernelbench_bed")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in _cases(args.problem).items():
            times: dict[str, list[float]] = {"old": [], "new": []}
            for r in range(args.rounds):
                for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
                    times[side].append(_run(command, args.old if side == "old" else None, Path(tmp) / side))
                    print(f"{name}: {side} {times[side][-1]:.1f} s", flush=True)
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            rows.append(f"| {name} | {old:.1f} | {new:.1f} | {new / old:.2f} | {args.rounds} |")
    head = ["| compare | without (s) | with (s) | with / without | rounds |", "|---|---|---|---|---|"]
    table = "\n".join([*head, *rows])
    print(table)
    if args.out:
        args.out.write_text(f"{table}\n")


if __name__ == "__main__":
    main()
