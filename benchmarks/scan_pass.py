"""Speed of the compiled trace reader's pass alone (``_kineto_scan.scan``), per byte and per event.

For each trace of ``--shapes`` (default: every ``*.pt.trace.json`` in /tmp/magpie-shapes) the event array is cut in
the pieces ``stream_table`` decodes (about ``SCANNER_CHUNK_BYTES`` each, cut at event boundaries) and every piece is
read by one ``scan`` call with one state per file, as ``magpie gap`` does. Timed: the CPU time of that whole pass
(process CPU time, best of ``--repeat``; the cutting and copying of the pieces is not timed), for this checkout's
build and, with ``--reference-python``, for another install's build (e.g. main's), run in alternation in fresh
subprocesses so that both see the same machine load; and ``json.loads`` of the same pieces as the baseline. CPU
time, not wall time, decides: the machine this runs on is shared.

Writes docs/benchmarks/scan_pass.md (MB/s, ns per event, ratios vs the reference and vs ``json.loads``).

Usage: ``python benchmarks/scan_pass.py [--reference-python /work/main/.venv/bin/python] [--repeat 5]
[--shapes a.json b.json] [--out docs/benchmarks/scan_pass.md]``
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHAPES = Path("/tmp/magpie-shapes")
#: one event ends, the next begins (the cut ``stream_table`` uses)
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
CHUNK_BYTES = 2 << 20


def pieces_of(path: Path, chunk_bytes: int = CHUNK_BYTES) -> list[bytes]:
    """The trace's event array as ``[...]`` pieces of about ``chunk_bytes``, cut at event boundaries."""
    data = Path(path).read_bytes()
    m = _EVENTS_KEY.search(data)
    if m is None:
        raise SystemExit(f"{path}: no traceEvents array")
    lo = m.end()
    # the array's end: the last "}" followed by "]" (Kineto writes the event array's closing bracket on its own)
    hi = data.rfind(b"}\n]")
    if hi < 0:
        hi = data.rfind(b"}]")
    if hi < lo:
        raise SystemExit(f"{path}: end of the event array not found")
    hi += 1
    out = []
    while lo < hi:
        b = _BOUNDARY.search(data, lo + chunk_bytes, hi) if hi - lo > chunk_bytes else None
        stop = b.start() + 1 if b else hi
        out.append(b"[" + data[lo:stop] + b"]")
        lo = b.end() - 1 if b else hi
    return out


def _cpu() -> float:
    return time.process_time()


def measure(path: Path, what: str) -> dict[str, Any]:
    """One timed pass over ``path``'s pieces (after one untimed warm-up pass): ``what`` is "scan" or "json"."""
    pieces = pieces_of(path)
    nbytes = sum(len(p) for p in pieces)
    if what == "json":

        def one() -> int:
            n = 0
            for p in pieces:
                n += len(json.loads(p))
            return n
    else:
        from magpie_trace import native
        from magpie_trace_native._kineto_scan import scan

        unescape = native._UNESCAPE

        def one() -> int:
            state: list[Any] = []
            n = 0
            for p in pieces:
                raw = scan(p, unescape, state)
                if raw is None:
                    raise SystemExit(f"{path}: a piece was not handled by the compiled reader")
                n += raw["n"]
            return n

    one()  # warm-up: page faults of the column buffers, the allocator's arenas
    c0, w0 = _cpu(), time.perf_counter()
    n = one()
    return {"cpu_s": _cpu() - c0, "wall_s": time.perf_counter() - w0, "events": n, "bytes": nbytes}


def run_worker(python: str, path: Path, what: str) -> dict[str, Any]:
    got = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", what, str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",  # so that the interpreter imports its own install's magpie_core, not this checkout's
    )
    if got.returncode != 0:
        raise SystemExit(f"{python} on {path} ({what}) failed: {got.stderr[-1500:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def bench(shapes: list[Path], ref: str | None, repeat: int, baseline_repeat: int) -> list[dict[str, Any]]:
    rows = []
    for path in shapes:
        best: dict[str, dict[str, Any]] = {}
        runners = [("this", sys.executable, "scan")] + ([("reference", ref, "scan")] if ref else [])
        for r in range(repeat):
            baseline = [("json.loads", sys.executable, "json")] if r < baseline_repeat else []
            for label, python, what in runners + baseline:
                got = run_worker(python, path, what)
                if label not in best or got["cpu_s"] < best[label]["cpu_s"]:
                    best[label] = got
                print(f"{path.name} {label}: cpu {got['cpu_s']:.3f} s wall {got['wall_s']:.3f} s", file=sys.stderr)
        rows.append({"trace": path.name, **{k: v for k, v in best.items()}})
    return rows


def _mbs(r: dict[str, Any]) -> float:
    return r["bytes"] / r["cpu_s"] / 1e6


def _ns(r: dict[str, Any]) -> float:
    return r["cpu_s"] / r["events"] * 1e9


def write(rows: list[dict[str, Any]], out: Path, ref: str | None, repeat: int) -> None:
    lines = [
        "# The compiled reader's pass alone (`_kineto_scan.scan`)",
        "",
        "Written by `benchmarks/scan_pass.py`: each trace's event array cut in the ~2 MiB pieces",
        "`stream_table` decodes, every piece read by one `scan` call (one state per file, as `magpie gap` does).",
        f"CPU time of the whole pass, best of {repeat} runs in fresh subprocesses, this checkout and the reference",
        f"(`{ref or 'none'}`) in alternation; baseline: `json.loads` of the same pieces. The machine is shared:",
        "CPU time decides, wall time is not shown.",
        "",
        "| trace | MB | events | this MB/s | this ns/event | reference MB/s | reference ns/event | this vs reference "
        "| json.loads MB/s | this vs json.loads |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        t, r, j = row["this"], row.get("reference"), row.get("json.loads")
        cells = [
            row["trace"],
            f"{t['bytes'] / 1e6:.0f}",
            f"{t['events']}",
            f"{_mbs(t):.0f}",
            f"{_ns(t):.0f}",
            f"{_mbs(r):.0f}" if r else "-",
            f"{_ns(r):.0f}" if r else "-",
            f"{r['cpu_s'] / t['cpu_s']:.2f}x" if r else "-",
            f"{_mbs(j):.0f}" if j else "-",
            f"{j['cpu_s'] / t['cpu_s']:.1f}x" if j else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    out.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, metavar=("WHAT", "TRACE"), help=argparse.SUPPRESS)
    ap.add_argument("--reference-python", help="another install's interpreter (e.g. main's .venv/bin/python)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per trace and build (best is kept)")
    ap.add_argument("--baseline-repeat", type=int, default=2, help="timed json.loads runs per trace (slow)")
    ap.add_argument("--shapes", nargs="*", type=Path, help="traces (default: every trace in /tmp/magpie-shapes)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "scan_pass.md")
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(measure(Path(a.worker[1]), a.worker[0])))
        return 0
    shapes = a.shapes or sorted(SHAPES.glob("*.pt.trace.json"))
    if not shapes:
        raise SystemExit(f"no traces: pass --shapes or build them in {SHAPES}")
    rows = bench(shapes, a.reference_python, a.repeat, a.baseline_repeat)
    write(rows, a.out, a.reference_python, a.repeat)
    print(a.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
