"""Check that a speed change left the trace analyses' outputs unchanged.

Runs ``magpie gap`` and ``magpie inference`` with two installs (this checkout's, and a reference checkout's
interpreter, e.g. a worktree of ``main`` made with ``make setup``) on every trace of ``tests/data/traces``
(plus any ``--trace`` given) and compares every CSV and JSON file they write: CSV text exactly, JSON values
exactly except timing fields (``elapsed_s``) and the output folder's own path; report.html and what ``magpie gap``
prints (its table, to a pipe) as text, except the output folder's path and time stamps. Exit 1 on any difference.

Usage: ``python benchmarks/trace_outputs_equal.py --reference-python /path/to/main/.venv/bin/python
[--trace BIG.json ...] [--workers 1,2]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"
#: keys whose values are timings or say where the run went, not what it found
VOLATILE = {"elapsed_s", "started_at", "finished_at", "timestamp"}
#: the time stamp in a run folder's name (``gap_<trace>_20261130_113458``)
_STAMP = re.compile(r"_\d{8}_\d{6}")
#: when a report page was written (its footer: ``magpie 0.1.0 · 2026-11-30 13:52``)
_WRITTEN = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")


def _text(text: str, out: Path) -> str:
    return _WRITTEN.sub("<written>", _STAMP.sub("_<stamp>", text.replace(str(out), "<out>")))


#: the runs compared: ``gap --json``, ``gap`` printing its table, ``inference``
COMMANDS = ("gap", "gap table", "inference")


def run(python: str, command: str, trace: Path, out: Path, workers: int) -> str:
    """Run ``command`` into ``out``; what it printed, as compared (the folder's path and stamps normalized)."""
    magpie = str(Path(python).with_name("magpie"))
    argv = [magpie, "--workers", str(workers), command.split()[0], str(trace), "-o", str(out)]
    if command == "gap":
        argv.append("--json")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    got = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if got.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({got.returncode}): {got.stderr[-1500:]}")
    return _text(got.stdout, out) if command == "gap table" else ""


def _normal(value: Any, out: str) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v, out) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normal(v, out) for v in value]
    if isinstance(value, str):
        return _text(value, Path(out))
    return value


def compare(a: Path, b: Path) -> list[str]:
    """Differences between the files under ``a`` and ``b`` (relative names, first difference of each)."""
    diffs = []
    files_a = {_text(str(p.relative_to(a)), a): p for p in a.rglob("*") if p.is_file()}
    files_b = {_text(str(p.relative_to(b)), b): p for p in b.rglob("*") if p.is_file()}
    for rel in sorted(files_a.keys() ^ files_b.keys()):
        diffs.append(f"{rel}: only in {'reference' if rel in files_a else 'this checkout'}")
    for rel in sorted(files_a.keys() & files_b.keys()):
        ta, tb = files_a[rel].read_text(errors="replace"), files_b[rel].read_text(errors="replace")
        if rel.endswith(".json"):
            ja, jb = _normal(json.loads(ta), str(a)), _normal(json.loads(tb), str(b))
            if ja != jb:
                both = isinstance(ja, dict) and isinstance(jb, dict)
                keys = sorted(k for k in ja.keys() | jb.keys() if ja.get(k) != jb.get(k)) if both else []
                diffs.append(f"{rel}: JSON differs {keys[:8]}")
        elif _text(ta, a) != _text(tb, b):
            la, lb = ta.splitlines(), tb.splitlines()
            k = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
            diffs.append(f"{rel}: line {k + 1} differs ({len(la)} vs {len(lb)} lines)")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference-python", required=True)
    ap.add_argument("--trace", type=Path, action="append", default=[])
    ap.add_argument("--workers", default="1,2", help="worker counts to run this checkout with")
    args = ap.parse_args()
    traces = sorted(TRACES.rglob("*.json.gz")) + args.trace
    bad = 0
    with tempfile.TemporaryDirectory(prefix="magpie-equal-") as tmp:
        for n, trace in enumerate(traces):
            for command in COMMANDS:
                for w in (int(x) for x in args.workers.split(",")):
                    ref = Path(tmp) / f"{n}-{command.replace(' ', '-')}-ref-w{w}"  # same workers: the JSON says
                    printed_ref = run(args.reference_python, command, trace, ref, w)
                    mine = Path(tmp) / f"{n}-{command.replace(' ', '-')}-w{w}"
                    printed = run(sys.executable, command, trace, mine, w)
                    diffs = compare(ref, mine)
                    if printed != printed_ref:
                        diffs.append("printed output differs")
                    bad += bool(diffs)
                    status = "same" if not diffs else "DIFFERENT: " + "; ".join(diffs[:6])
                    print(f"{trace.name} {command} workers={w}: {status}", flush=True)
    print("all outputs equal" if not bad else f"{bad} runs differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
