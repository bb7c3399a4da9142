"""``magpie benchmark --compare BASE NEW``: the end-to-end verdict of two benchmark reports.

Exit 0 with a verdict (IMPROVED, REGRESSED or WITHIN NOISE per metric); 1 when the runs are NOT
COMPARABLE; 2 when a report cannot be read. The statistics live in :mod:`magpie_benchmark.stats`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from magpie_core.cli.app import EXIT_CHECKS_FAILED, EXIT_OK, UsageError, console

REPORT_NAME = "benchmark_report.json"
VERDICT_STYLE = {"IMPROVED": "green", "REGRESSED": "red", "WITHIN NOISE": "yellow", "NOT COMPARABLE": "magenta"}


def read_benchmark_report(path: Path) -> dict[str, Any]:
    """A ``benchmark_report.json`` (or the workspace folder holding one) as a dict; UsageError naming the file."""
    from magpie_core.reports import read_report_json

    file = path / REPORT_NAME if path.is_dir() else path
    try:
        data = read_report_json(file)
    except ValueError as exc:
        raise UsageError(f"--compare: {exc}") from exc
    if data.get("mode", "benchmark") != "benchmark":
        raise UsageError(f"--compare: {file} is not a benchmark report")
    return data


def run_compare_cli(
    paths: list[Path],
    *,
    allow_different_workload: bool,
    min_effect: float,
    as_json: bool,
    noise_floor: float | None = None,
) -> int:
    from magpie_benchmark.stats import compare_reports

    if len(paths) != 2:
        raise UsageError(f"--compare takes two reports (BASE NEW), got {len(paths)}")
    base, new = (read_benchmark_report(p) for p in paths)
    result = compare_reports(
        base,
        new,
        base_name=str(paths[0]),
        new_name=str(paths[1]),
        allow_different_workload=allow_different_workload,
        min_effect=min_effect,
        noise_floor=noise_floor,
    )
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_comparison(result)
    return EXIT_OK if result.comparable else EXIT_CHECKS_FAILED


def print_comparison(result: Any) -> None:
    """The verdict table, then the reasons, the workload and system differences."""
    table = Table(title=f"end-to-end: new vs base (repeats {result.repeats[0]} and {result.repeats[1]})")
    for col in ("metric", "base mean ± sd", "new mean ± sd", "change", "95% CI", "verdict"):
        table.add_column(col)
    for m in result.metrics:
        ci = f"{m.ci95_pct[0]:+.1f}% to {m.ci95_pct[1]:+.1f}%" if m.ci95_pct else "-"
        change = f"{m.change_pct:+.1f}%" if m.change_pct is not None else "-"
        style = VERDICT_STYLE.get(m.verdict.value, "")
        table.add_row(m.label, _mean_sd(m.base), _mean_sd(m.new), change, ci, f"[{style}]{m.verdict.value}[/{style}]")
    console.print(table)
    console.print(f"verdict: {result.verdict.value}", markup=False)
    for reason in result.reasons:
        console.print(f"  {reason}", markup=False, soft_wrap=True)
    for m in result.metrics:
        if m.reason and m.verdict.value != "NOT COMPARABLE":
            console.print(f"  {m.metric}: {m.verdict.value}: {m.reason}", markup=False, soft_wrap=True)
    for title, diffs in (("workload differs", result.workload_differences), ("system", result.system_differences)):
        for d in diffs[:20]:
            console.print(f"  {title}: {d['field']}: {_change(d['base'], d['new'])}", markup=False, soft_wrap=True)


def _mean_sd(s: dict[str, Any]) -> str:
    mean = s.get("mean")
    if mean is None or mean != mean:
        return "-"
    sd = s.get("std")
    return f"{mean:.4g} ± {sd:.2g}" if sd is not None else f"{mean:.4g} (1 run)"


def _change(base: Any, new: Any) -> str:
    """``base -> new``; for two lists, only what was removed and added (server arguments)."""
    if isinstance(base, list) and isinstance(new, list):
        import difflib

        ops = difflib.SequenceMatcher(a=[str(x) for x in base], b=[str(x) for x in new]).get_opcodes()
        removed = [x for tag, i1, i2, _, _ in ops if tag in ("replace", "delete") for x in base[i1:i2]]
        added = [x for tag, _, _, j1, j2 in ops if tag in ("replace", "insert") for x in new[j1:j2]]
        return f"removed {_short(removed)}, added {_short(added)}"
    return f"{_short(base)} -> {_short(new)}"


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 3] + "..."
