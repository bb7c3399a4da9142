"""Benchmark: what checking every event's ``ts``/``dur`` costs the trace readers (same-run A/B).

The readers now skip and count complete events without a believable ``ts``/``dur``
(:mod:`magpie_trace.validity`). This times, in alternating subprocesses, this checkout and a
reference checkout without the checks (``--ref-python``: the python of that checkout's venv) on the
same trace (tests/data/traces/mi300 replicated to ``--target-mb``, as ``benchmarks/trace_gap.py``
builds it):

* ``gap``: :func:`magpie_trace.columns.load_table` (the gap analyzer's reader), one process;
* ``inference``: the inference analyzer's ``events.load`` (its own streaming sink), one process.

Writes the medians and the ratio this/reference to ``--out`` (a section of
docs/benchmarks/hostile_inputs.md by default: ``--out -`` prints it). Usage:
``python benchmarks/trace_validity_overhead.py --ref-python /path/to/reference/.venv/bin/python``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trace_gap import build_trace, measure  # the trace builder and timer of the gap benchmark

#: each reader runs LOADS times in its process; the process reports its fastest (first-run effects and load
#: spikes only add time)
LOADS = 3
_TIMED = (
    "import sys, time\n{setup}\nbest = float('inf')\nfor _ in range({loads}):\n"
    "    t = time.perf_counter(); n = {load}; best = min(best, time.perf_counter() - t)\nprint(best, n)\n"
)
READERS = {
    "gap": _TIMED.format(
        setup="from magpie_trace.columns import load_table, category_matcher",
        load="load_table(sys.argv[1], category_matcher(['kernel', 'gpu'], [])).num_events",
        loads=LOADS,
    ),
    "inference": _TIMED.format(
        setup="from magpie_inference_analysis import events", load="events.load(sys.argv[1], 1).num_events", loads=LOADS
    ),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref-python", required=True, help="python of a checkout without the checks")
    ap.add_argument("--target-mb", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    out = None if args.out == "-" else Path(args.out).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        # ``python -c`` puts the working folder first on sys.path: run from a neutral one, or the reference
        # python would import this checkout's magpie_core when started from it
        os.chdir(tmp)
        trace = Path(tmp) / "big.json"
        copies, n_events = build_trace(trace, args.target_mb)
        size_mb = trace.stat().st_size / 1e6
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for reader, code in READERS.items():
                for side, py in (("this", sys.executable), ("reference", args.ref_python)):
                    _, _, line, _ = measure([py, "-c", code, str(trace)])
                    times.setdefault((reader, side), []).append(float(line.split()[0]))
    lines = [
        f"Trace: {size_mb:.0f} MB plain JSON, {n_events:,} events ({copies} copies of the mi300 test trace); "
        f"{args.rounds} alternating rounds; each a process reading it {LOADS} times, its fastest read counted "
        "(median, min–max over rounds).",
        "",
        "| reader | reference (s) | with checks (s) | ratio of medians | ratio of minima |",
        "|---|---|---|---|---|",
    ]
    for reader in READERS:
        ref, this = times[(reader, "reference")], times[(reader, "this")]
        lines.append(
            f"| {reader} | {statistics.median(ref):.2f} ({min(ref):.2f}–{max(ref):.2f}) | "
            f"{statistics.median(this):.2f} ({min(this):.2f}–{max(this):.2f}) | "
            f"{statistics.median(this) / statistics.median(ref):.3f} | {min(this) / min(ref):.3f} |"
        )
    lines += [
        "",
        "On a machine shared with other jobs the minimum is the steadier estimate (load only adds time);",
        "read a ratio within the rounds' spread as no measurable difference.",
    ]
    text = "\n".join(lines) + "\n"
    if out is None:
        print(text)
    else:
        out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
