"""``magpie gap TRACE_DIR``: gap analysis of PyTorch profiler traces.

Flags match AMD Magpie's ``benchmark --trace-dir`` gap analysis; list flags
accept several values after one flag (``--categories kernel gpu``), repeated
flags, or a comma list.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from magpie_core.cli.kit import STATE, UsageError, check_output_dir, console, err_console, escape, handle_errors
from magpie_core.cli.output import (
    TABLE_FORMATS,
    check_format,
    format_option,
    no_html_option,
    print_rows,
    say,
    shorten,
    write_html,
)
from magpie_core.runtime.workspace import run_folder
from magpie_gap_analysis.options import GapFlags, gap_config_from_flags

if TYPE_CHECKING:
    from rich.table import Table

    from magpie_gap_analysis.config import GapAnalysisConfig
    from magpie_gap_analysis.models import GapAnalysisResult

__all__ = ["gap_command", "print_summary", "register", "run_gap_analysis"]


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _short(name: str, width: int = 72) -> str:
    """Shortened from the middle for a terminal (the kernel's name and its last template arguments, where kernels
    of one name differ, both stay); whole when the output goes to a pipe or a file."""
    return shorten(name, width) if console.is_terminal else name


KERNEL_COLUMNS = ("#", "kernel", "category", "calls", "total (us)", "avg (us)", "% total", "% busy")


def _kernel_rows(result: GapAnalysisResult, top_k: int, full_names: bool) -> list[list[str]]:
    """The top-k rows: the parsed function name (shortened on a terminal), or the full kernel name (CSV/JSON, and
    wherever two shown rows share a function name: ``elementwise_kernel`` x4 told nobody which was which)."""
    shown = result.top_kernels[:top_k]
    functions = Counter(k.function or k.name for k in shown)
    return [
        [
            str(i),
            k.name if full_names or functions[k.function or k.name] > 1 else (k.function or k.name),
            k.category,
            str(k.calls),
            _fmt(k.self_cuda_total_us),
            _fmt(k.avg_time_us),
            _fmt(k.pct_total),
            _fmt(k.pct_gpu_busy),
        ]
        for i, k in enumerate(shown, 1)
    ]


def _title(result: GapAnalysisResult, top_k: int) -> str:
    return f"top {min(top_k, len(result.top_kernels))} kernels ({result.num_ranks} rank(s))"


#: the columns printed right-justified (numbers)
_RIGHT = [col not in ("kernel", "category") for col in KERNEL_COLUMNS]


def _kernel_table(result: GapAnalysisResult, top_k: int, rows: list[list[str]]) -> Table:
    from rich.table import Table

    table = Table(title=_title(result, top_k))
    for col, right in zip(KERNEL_COLUMNS, _RIGHT, strict=True):
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for row in rows:
        table.add_row(row[0], _short(row[1]), *row[2:])
    return table


def _print_plain(title: str, rows: list[list[str]]) -> None:
    """The kernel table for a pipe or a file: aligned columns, numbers right-justified, the kernel's full name
    last (so no line is padded to the longest name)."""
    order = [0, *range(2, len(KERNEL_COLUMNS)), 1]
    cells = [[row[i] for i in order] for row in [list(KERNEL_COLUMNS), *rows]]
    widths = [max(len(r[c]) for r in cells) for c in range(len(order) - 1)]
    typer.echo(title)
    for r in cells:
        aligned = (
            v.rjust(w) if _RIGHT[order[c]] else v.ljust(w) for c, (v, w) in enumerate(zip(r[:-1], widths, strict=True))
        )
        typer.echo("  ".join([*aligned, r[-1]]))


def _print_devices(result: GapAnalysisResult) -> None:
    """One line per device of each readable rank, and its largest gap."""
    for r in result.ranks:
        if not r.ok:
            continue
        for d in r.devices:
            flag = "; launch-bound: many short waits for the host's next launch" if d.launch_bound else ""
            if d.host_stalls:
                ms = sorted(g / 1000 for g in d.host_stalls)
                span = f"{ms[0]:.1f}" if len(ms) == 1 else f"{ms[0]:.1f}-{ms[-1]:.1f}"
                after = d.host_stalls_after or "host work"
                flag = f"; {len(ms)} host stall(s) of {span} ms (after {after}) are most of it, not launches"
            say(
                f"rank {r.rank} device {d.device}: busy {_fmt(d.busy_us)} us, idle {_fmt(d.idle_us)} us "
                f"({d.idle_pct:.1f}% of active span, {d.host_bound_idle_pct:.0f}% of it waiting on the host), "
                f"{d.num_gaps} gaps{flag}"
            )
            if d.largest_gaps:
                g = d.largest_gaps[0]
                say(
                    f"  largest gap {_fmt(g.duration_us)} us at +{_fmt(g.start_us)} us; CPU op: "
                    f"{g.cpu_op or '-'}; next: {_short(g.after, 60)}",
                    markup=False,
                )


def print_summary(result: GapAnalysisResult, top_k: int) -> None:
    """The top-k kernel table (none when no trace could be read), a line per device, the errors (on stderr: a rank
    that could not be read makes the exit code 1), the warnings and where the files are (to a pipe or a file:
    every column and full names)."""
    if result.num_ranks:
        rows = _kernel_rows(result, top_k, full_names=False)
        table = _kernel_table(result, top_k, rows)
        if console.is_terminal:
            console.print(table)
        else:  # a pipe or a file: plain columns, never cut at 80, the full kernel name last
            _print_plain(_title(result, top_k), rows)
    _print_devices(result)
    for err in result.errors:
        err_console.print(f"[red]error:[/red] {escape(err)}", soft_wrap=True)
    for warning in result.warnings:
        say(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    say(f"wrote {result.csv_path} and {result.json_path}", markup=False)


def run_gap_analysis(
    trace_dir: Path,
    config: GapAnalysisConfig,
    output_dir: Path | None,
    as_json: bool = False,
    fmt: str = "table",
    no_html: bool = False,
) -> int:
    """Run into a new ``gap_<trace>_<timestamp>/`` folder under ``output_dir`` (default: beside the traces), print
    (table, ``--format csv|json`` rows or ``as_json``; ``xlsx``: the table, and a workbook of every table written
    into the run folder), write ``report.html`` unless ``no_html``, return the exit code (0 ok, 1 some rank
    failed); nothing to analyze (no rank read) is a :class:`~magpie_core.cli.kit.UsageError` (exit 2), and its run
    folder is removed."""
    from magpie_gap_analysis.pipeline import default_output_dir, gap_analysis

    trace_dir = Path(trace_dir)
    if not trace_dir.exists():
        raise UsageError(f"trace path not found: {trace_dir}")
    # a new run folder each time: a second run never overwrites or mixes with the first
    out = output_dir or STATE.output_dir or default_output_dir(trace_dir) or STATE.resolve_output_dir(None)
    with run_folder(out, "gap", trace_dir.name.split(".")[0]) as run_dir:
        result = gap_analysis(trace_dir, config, run_dir)
        if result.output_dir is None or not any(r.ok for r in result.ranks):
            shutil.rmtree(run_dir, ignore_errors=True)  # made just now, for this run: nothing in it is worth keeping
            raise UsageError("; ".join(result.errors) or f"nothing to analyze in {trace_dir}")
    if fmt == "xlsx":
        from magpie_gap_analysis.output import write_workbook

        workbook = write_workbook(result)
    if as_json:
        print(json.dumps(json.loads(result.model_dump_json()), indent=2))
    elif fmt in ("csv", "json"):
        print_rows(KERNEL_COLUMNS, _kernel_rows(result, config.top_k, full_names=True), fmt)
    else:
        print_summary(result, config.top_k)
    if fmt == "xlsx" and not as_json:
        say(f"workbook: {workbook}", markup=False, soft_wrap=True)
    write_html("gap", result, result.output_dir, skip=no_html, quiet=as_json or fmt in ("csv", "json"))
    failed = [r for r in result.ranks if not r.ok]
    return 1 if failed or result.num_ranks == 0 else 0


@handle_errors
def gap_command(
    trace_dir: Path = typer.Argument(..., help="a trace file, a folder of rank traces, or a benchmark workspace"),
    top_k: int = GapFlags.top_k,
    start_pct: float = GapFlags.start_pct,
    end_pct: float = GapFlags.end_pct,
    min_duration_us: float = GapFlags.min_duration_us,
    categories: list[str] | None = GapFlags.categories,
    ignore_categories: list[str] | None = GapFlags.ignore_categories,
    no_rank_csv: bool = GapFlags.no_rank_csv,
    find_kernel_sources: bool = GapFlags.find_kernel_sources,
    kernel_source_repos: list[str] | None = GapFlags.kernel_source_repos,
    output_dir: Path | None = typer.Option(
        None,
        "--output-dir",
        "-o",
        help="where each run's gap_<trace>_<time>/ goes; default <trace_dir>/../gap_analysis",
        callback=check_output_dir,
    ),
    window_annotation: str | None = GapFlags.window_annotation,
    start_us: float | None = GapFlags.start_us,
    end_us: float | None = GapFlags.end_us,
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary instead of the table"),
    fmt: str = format_option(formats=TABLE_FORMATS),
    no_html: bool = no_html_option(),
    clone: bool = GapFlags.clone,
    repos_base_dir: str | None = GapFlags.repos_base_dir,
    workers: int | None = GapFlags.workers,
) -> None:
    """Kernel time tables, GPU idle gaps and launch-bound indicators from profiler traces."""
    check_format(fmt, TABLE_FORMATS)
    config = gap_config_from_flags(
        {
            "top_k": top_k,
            "start_pct": start_pct,
            "end_pct": end_pct,
            "min_duration_us": min_duration_us,
            "categories": categories,
            "ignore_categories": ignore_categories,
            "no_rank_csv": no_rank_csv,
            "find_kernel_sources": find_kernel_sources,
            "kernel_source_repos": kernel_source_repos,
        },
        window_annotation=window_annotation,
        start_us=start_us,
        end_us=end_us,
        clone=clone,
        workers=workers or STATE.workers,
        repos_base_dir=repos_base_dir,
    )
    out = output_dir or STATE.output_dir
    raise typer.Exit(run_gap_analysis(trace_dir, config, out, as_json=as_json, fmt=fmt, no_html=no_html))


def register(cli: typer.Typer) -> None:
    """Add ``gap`` to the command line ``cli``."""
    cli.command("gap")(gap_command)
