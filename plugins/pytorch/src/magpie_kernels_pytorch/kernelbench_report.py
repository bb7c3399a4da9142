"""``report.html`` of ``magpie kernelbench run``: the sections, drawn with the report plugin's kit (``page.kit``).

The page is the report plugin's (one self-contained file, the same look as every other run's page); this
module only says what a problem set's page holds: fast_p at KernelBench's thresholds with and without
magpie's verdicts, fast_p per problem, and the problem x solution table. Nothing here imports the report
plugin: without it installed, no page is written and the run is unaffected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the report kind (``write_html`` / ``magpie_report_sections``)
KIND = "kernelbench"


def _share(value: float) -> str:
    return f"{value:.0%}"


def _verdict_tone(row: dict[str, Any]) -> str:
    """good: correct and a FASTER verdict; bad: did not compile or is wrong; warn: correct, no clear win."""
    if not row["compiled"] or not row["correct"]:
        return "bad"
    return "good" if row.get("verdict") == "FASTER" else "warn"


def _interval(row: dict[str, Any]) -> str:
    ci = row.get("speedup_ci95")
    return f"{ci[0]:.3f}-{ci[1]:.3f}" if ci else ""


def _fast_p_figure(kit: Any, summary: dict[str, Any]) -> Any:
    plain, verified = summary["fast_p"], summary["fast_p_verified"]
    keys = list(plain)
    data = [
        {"type": "bar", "name": name, "x": [k.replace("fast_", "p = ") for k in keys], "y": [shares[k] for k in keys]}
        for name, shares in (("KernelBench (point estimate)", plain), ("verified (magpie's interval)", verified))
    ]
    layout = {"barmode": "group", "yaxis": {"title": {"text": "share of problem x solution pairs"}, "range": [0, 1]}}
    return kit.figure(data, layout, title="fast_p", note="correct and faster than p x the reference")


def sections(page: Any) -> list[Any]:
    kit, summary = page.kit, page.report
    rows: list[dict[str, Any]] = summary["rows"]
    plain, verified = summary["fast_p"], summary["fast_p_verified"]
    compiled = sum(r["compiled"] for r in rows)
    correct = sum(r["correct"] for r in rows)
    headline = kit.section(
        "KernelBench problem set",
        kit.banner(
            f"{len(rows)} solution(s) of {len(summary['per_problem'])} problem(s): {compiled} compiled, "
            f"{correct} correct; fast_1 {_share(plain.get('fast_1', 0))} by KernelBench's rule, "
            f"{_share(verified.get('fast_1', 0))} verified",
            "good" if rows and verified.get("fast_1", 0) > 0 else "neutral",
            detail="verified: a speedup counts only when magpie's 95% interval lies above p (and the verdict is "
            "FASTER); KernelBench compares the point estimate",
        ),
        kit.metrics([("results", summary.get("results")), ("compare workspaces", summary.get("output_dir"))]),
        _fast_p_figure(kit, summary) if rows else None,
        kit.table(
            ["p", "fast_p (KernelBench)", "fast_p (verified)"],
            [[key.replace("fast_", ""), _share(plain[key]), _share(verified[key])] for key in plain],
            title="fast_p",
        ),
    )
    per_problem = kit.section(
        "fast_p per problem",
        kit.table(
            ["problem", "solutions", *(f"fast_{k.replace('fast_', '')} (plain / verified)" for k in plain)],
            [
                [
                    name,
                    entry["solutions"],
                    *(f"{_share(entry['fast_p'][k])} / {_share(entry['fast_p_verified'][k])}" for k in plain),
                ]
                for name, entry in summary["per_problem"].items()
            ],
        ),
    )
    table = kit.section(
        "Problem x solution",
        kit.table(
            [
                "problem",
                "solution",
                "compiled",
                "correct",
                "build s",
                "runtime us",
                "reference us",
                "speedup",
                "95% interval",
                "verdict",
                "message",
            ],
            [
                [
                    r["problem"],
                    Path(r["solution"]).name,
                    "yes" if r["compiled"] else "no",
                    "yes" if r["correct"] else "no",
                    r.get("build_s"),
                    r.get("runtime_us"),
                    r.get("ref_runtime_us"),
                    r.get("speedup"),
                    _interval(r),
                    r.get("verdict") or "",
                    kit.short(r.get("message") or "", 160),
                ]
                for r in rows
            ],
            tones=[_verdict_tone(r) for r in rows],
            note="build s: building the solution's inline extensions, apart from its runtime",
        ),
    )
    return [headline, per_problem, table]
