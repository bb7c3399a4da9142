"""Join ``magpie kernelbench run``'s rows with ``kernelbench_rule.py``'s and print a markdown table (issue 29).

Rows are matched on (problem, solution file name). Correctness agrees when both say the same; the speed reading
agrees when magpie's verdict points the way KernelBench's point speedup does (FASTER and > 1, SLOWER and < 1),
and magpie's SAME/UNSTABLE is "noise" (KernelBench's single mean ratio has no interval to say so).

    python benchmarks/kernelbench_leaderboard_compare.py --magpie magpie.jsonl --rule rule.jsonl \\
        --manifest benchmarks/kernelbench_leaderboard/manifest.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

Key = tuple[str, str]


def read(path: Path | None) -> dict[Key, dict[str, Any]]:
    if path is None or not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["problem"], Path(r["solution"]).name): r for r in rows}


def models(manifest: Path | None) -> dict[Key, dict[str, Any]]:
    if manifest is None or not manifest.is_file():
        return {}
    data = json.loads(manifest.read_text())
    return {(s["problem"], Path(s["solution"]).name): s for s in data["solutions"]}


def yes_no(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def speed_agreement(kb: dict[str, Any], mg: dict[str, Any]) -> str:
    if not (kb.get("correct") and mg.get("correct")) or kb.get("speedup") is None or not mg.get("verdict"):
        return "n/a"
    verdict, speedup = mg["verdict"], kb["speedup"]
    if verdict in ("SAME", "UNSTABLE"):
        return f"noise ({verdict})"
    return "agree" if (verdict == "FASTER") == (speedup > 1) else "DISAGREE"


def magpie_speed(mg: dict[str, Any]) -> str:
    if mg.get("speedup") is None:
        return "-"
    ci = mg.get("speedup_ci95")
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{mg['speedup']:.2f}{interval} {mg.get('verdict') or ''}".strip()


def table(rule: dict[Key, dict], magpie: dict[Key, dict], manifest: dict[Key, dict]) -> list[str]:
    lines = [
        "| problem | solution | model | KB correct | magpie correct | max abs diff | KB speedup | "
        "magpie speedup [95% CI] verdict | leaderboard (L40S) | correct agree | speed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    counts = {"pairs": 0, "both ran": 0, "correct agree": 0, "speed agree": 0, "speed disagree": 0}
    for key in sorted(set(rule) | set(magpie) | set(manifest)):
        kb, mg, info = rule.get(key, {}), magpie.get(key, {}), manifest.get(key, {})
        counts["pairs"] += 1
        agree = "-"
        if kb and mg:
            counts["both ran"] += 1
            same = bool(kb.get("correct")) == bool(mg.get("correct"))
            counts["correct agree"] += same
            agree = "yes" if same else "NO"
        speed = speed_agreement(kb, mg) if kb and mg else "-"
        counts["speed agree"] += speed == "agree"
        counts["speed disagree"] += speed == "DISAGREE"
        lines.append(
            f"| {key[0]} | {key[1]} | {info.get('model', '-')} | {yes_no(kb.get('correct')) if kb else 'not run'} | "
            f"{yes_no(mg.get('correct')) if mg else 'not run'} | {num(kb.get('max_abs_diff'), 6)} | "
            f"{num(kb.get('speedup'))} | {magpie_speed(mg)} | {num(info.get('leaderboard_speedup_L40S'))} | "
            f"{agree} | {speed} |"
        )
    lines += ["", ", ".join(f"{k}: {v}" for k, v in counts.items())]
    errors = [(k, r.get("error") or r.get("message")) for src in (rule, magpie) for k, r in sorted(src.items())]
    failures = [f"- {k[0]}/{k[1]}: {str(e).splitlines()[0][:200]}" for k, e in errors if e]
    if failures:
        lines += ["", "Messages (KernelBench rule first, then magpie):", *failures]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--magpie", type=Path, required=True, help="magpie kernelbench run --results JSONL")
    parser.add_argument("--rule", type=Path, required=True, help="kernelbench_rule.py --out JSONL")
    parser.add_argument("--manifest", type=Path, help="the set's manifest.json (models, leaderboard speedups)")
    opts = parser.parse_args(argv)
    print("\n".join(table(read(opts.rule), read(opts.magpie), models(opts.manifest))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
