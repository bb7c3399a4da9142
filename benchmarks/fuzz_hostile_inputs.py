"""Long fuzz run: 1,000+ seeded hostile inputs through the real ``magpie`` CLI, judged by the error policy.

The generators and the judge are the fuzz suite's (``tests/fuzz/hostile.py``): configs, kernels, traces
for ``gap`` and ``inference``, benchmark YAML, CLI flags, and misbehaving servers (the fake streaming
server told to fail). Seeds ``--first-seed``, ``--first-seed + 1``, ... are run until at least ``--cases``
cases ran. Writes the counts per category, and every case that broke the policy, to
``docs/benchmarks/hostile_inputs.md``.

Usage: ``python benchmarks/fuzz_hostile_inputs.py [--cases 1000] [--first-seed 1000] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.hostile import CATEGORIES, Outcome, generate, run_case  # noqa: E402  (the suite's generators and judge)

ALL = (*CATEGORIES, "server")
COLUMNS = (
    "cases",
    "exit 2",
    "exit 1",
    "exit 0 + warning",
    "tracebacks",
    "internal errors",
    "hangs",
    "silent successes",
    "wrong exit code",
    "message names nothing",
    "slowest (s)",
)


def _tally(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0.0))
    for o in outcomes:
        for cat in (o.case.category, "all"):
            row = rows[cat]
            row["cases"] += 1
            key = {2: "exit 2", 1: "exit 1", 0: "exit 0 + warning"}.get(o.code)  # type: ignore[arg-type]
            if key and not (o.code == 0 and o.problems):
                row[key] += 1
            kinds = " ".join(o.problems)
            row["tracebacks"] += "traceback" in kinds
            row["internal errors"] += "internal error" in kinds
            row["hangs"] += "hang" in kinds
            row["silent successes"] += "silent success" in kinds or "exit 0 without" in kinds
            row["wrong exit code"] += "expected" in kinds
            row["message names nothing"] += "names none" in kinds
            row["slowest (s)"] = max(row["slowest (s)"], o.seconds)
    return rows


def _report(outcomes: list[Outcome], seeds: list[int], elapsed: float) -> str:
    rows = _tally(outcomes)
    lines = [
        "# Hostile inputs: the error policy under fuzzing",
        "",
        "Written by `benchmarks/fuzz_hostile_inputs.py` (generators and judge: `tests/fuzz/hostile.py`). Every case",
        "is a `magpie` command line run in-process through `magpie_core.cli.run`, exactly as typed by a user.",
        "The policy: exit 2 usage/config error, 1 the subject failed, exit 0 only with the warning the case",
        'needs (a trace with some broken events: "… skipped"); the output names the file, field or flag;',
        "no traceback, no internal error, no hang (limit 60 s per case, 90 s against a server).",
        "",
        f"Seeds {seeds[0]}–{seeds[-1]}, {len(outcomes):,} cases in {elapsed:.0f} s on {platform.machine()} "
        f"Python {platform.python_version()} ({time.strftime('%Y-%m-%d')}).",
        "",
        "| category | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for cat in (*ALL, "all"):
        if cat in rows:
            r = rows[cat]
            cells = [f"{r[c]:.1f}" if c == "slowest (s)" else f"{int(r[c]):,}" for c in COLUMNS]
            lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    bad = [o for o in outcomes if not o.ok]
    lines += ["", f"## Cases that broke the policy: {len(bad)}", ""]
    for o in bad[:50]:
        lines.append(f"- {o.case.category} / {o.case.name}: {'; '.join(o.problems)} (exit {o.code})")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "hostile_inputs.md")
    args = ap.parse_args()
    from magpie_benchmark.loadgen.fake_server import running

    outcomes: list[Outcome] = []
    seeds: list[int] = []
    start = time.perf_counter()
    with running(ttft_ms=5, itl_ms=1) as url, tempfile.TemporaryDirectory() as tmp:
        seed = args.first_seed
        while len(outcomes) < args.cases:
            for i, case in enumerate(generate(seed, ALL, server_url=url)):
                limit = 90.0 if case.category == "server" else 60.0
                outcomes.append(run_case(case, Path(tmp) / f"{seed}_{i}", limit_s=limit))
            seeds.append(seed)
            print(f"seed {seed}: {len(outcomes)} cases, {sum(not o.ok for o in outcomes)} broke the policy", flush=True)
            seed += 1
    args.out.write_text(_report(outcomes, seeds, time.perf_counter() - start))
    print(f"wrote {args.out}")
    print(Counter(c for o in outcomes for c in o.problems) or "no policy breaks")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
