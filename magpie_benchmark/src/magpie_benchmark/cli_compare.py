"""``magpie benchmark --compare BASE NEW`` and ``--interleave BASE.yaml NEW.yaml``: end-to-end verdicts.

Exit 0 with a verdict (IMPROVED, REGRESSED or WITHIN NOISE per metric); 1 when the runs are NOT
COMPARABLE (or, interleaved, a side measured nothing); 2 when a report or config cannot be read. The
statistics live in :mod:`magpie_benchmark.stats`, the rounds in :mod:`magpie_benchmark.interleave`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from magpie_core.cli.kit import EXIT_CHECKS_FAILED, EXIT_OK, UsageError, console

if TYPE_CHECKING:
    from magpie_benchmark.run_config import RunOverrides

REPORT_NAME = "benchmark_report.json"
#: how the output names where the verdict's noise came from (``E2EComparison.noise``)
NOISE_SOURCE = {
    "interleaved": "measured: the spread of the interleaved rounds' differences",
    "restarted": "measured: every repeat had its own server lifetime",
    "assumed": "assumed (fixed floors): see the reasons",
}
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


#: rounds of ``--interleave`` when ``--repeats`` is not given. The metrics' intervals hold jointly, so with 3
#: rounds the t quantile for nine metrics is 13.4 and only huge changes are called; with 5 it is 5.4 (a 15%
#: change at 2% noise per run is called; 10% needs about 8 rounds, docs/optimization-loop.md "Measured noise")
DEFAULT_ROUNDS = 5


def run_interleave_cli(
    configs: list[Path], overrides: RunOverrides, output_dir: Path, *, min_effect: float, as_json: bool
) -> int:
    """``--interleave BASE.yaml NEW.yaml``: both configs with the same command-line overrides, ``--repeats``
    alternating rounds (one repeat per run inside a round), then the paired verdict."""
    from magpie_benchmark.interleave import run_interleaved
    from magpie_benchmark.run_config import apply_overrides, load_benchmark_config

    rounds = overrides.repeats or DEFAULT_ROUNDS
    per_run = replace(overrides, repeats=None, restart_between_repeats=None)
    loaded = {}
    for side, path in zip(("base", "new"), configs, strict=True):
        config = apply_overrides(load_benchmark_config(path), None, per_run, from_file=True)
        if config.repeats != 1 or config.restart_between_repeats:
            console.print(
                f"note: {path}: benchmark.repeats / restart_between_repeats apply inside each round's run; "
                f"--repeats {rounds} sets the rounds",
                markup=False,
                soft_wrap=True,
            )
        loaded[side] = config
    folder, result = run_interleaved(loaded, rounds, output_dir, min_effect=min_effect)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_comparison(result)
        console.print(f"reports: {folder / 'base'} and {folder / 'new'}; verdict: {folder / 'comparison.json'}")
    measured = all(result.repeats) and result.rounds
    return EXIT_OK if result.comparable and measured else EXIT_CHECKS_FAILED


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
    console.print(f"noise: {NOISE_SOURCE.get(result.noise, result.noise)}", markup=False, soft_wrap=True)
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
