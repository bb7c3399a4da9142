"""``magpie inference TRACE``: stage split and per-op roofline of an inference profiler trace.

Added to the ``magpie`` command line by this plugin's ``magpie_register_commands`` hook; the
command calls the ``inference`` trace analyzer through the plugin manager, as any other
caller would.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import typer

from magpie_core.cli.kit import STATE, NotAvailable, UsageError, check_output_dir, console, escape, handle_errors
from magpie_core.cli.output import (
    TABLE_FORMATS,
    check_format,
    format_option,
    no_html_option,
    print_rows,
    shorten,
    write_html,
)
from magpie_core.runtime.workspace import run_folder

ANALYZER = "inference"


def default_output_dir(trace: Path) -> Path | None:
    """``tracelens/`` in a benchmark workspace (given as the workspace, its ``torch_trace/`` or a trace in it),
    else None: magpie's run root (``./magpie_runs``, or the config's ``output.directory``), never next to traces."""
    base = trace if trace.is_dir() else trace.parent
    for workspace in (base, base.parent):
        if (workspace / "torch_trace").is_dir() and base in (workspace, workspace / "torch_trace"):
            return workspace / "tracelens"
    return None


def run_inference_analysis(trace: Path, options: dict[str, object], output_dir: Path) -> dict[str, object]:
    """Call the installed ``inference`` analyzer; a missing plugin is :class:`NotAvailable`, bad input a UsageError."""
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        analyzer = get_plugin_manager().get("trace_analyzer", ANALYZER)
    except UnknownComponentError as exc:
        raise NotAvailable(str(exc)) from exc
    try:
        return analyzer.analyze(trace, options, output_dir)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc


def print_ops(roofline_csv: str, top: int) -> None:
    """A stage's ``top`` ops by kernel time with their place on the roofline, as TraceLens's ops table shows them
    (every op: the CSV, whose path follows)."""
    from rich.table import Table

    with open(roofline_csv, newline="") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda r: -float(r.get("kernel_time_ms_sum") or 0))
    columns = ("op", "input dims", "calls", "time ms", "%", "TFLOP/s", "TB/s", "bound", "% of roof")
    table = Table(*columns, box=None, pad_edge=False)
    for r in rows[:top]:
        cells = (r.get(k) or "" for k in ("achieved_tflops_mean", "achieved_tbps_mean"))
        table.add_row(
            shorten(r.get("op_name") or "?", 40), shorten((r.get("input_dims") or "").replace(" ", ""), 32),
            r.get("operation_count") or "", _num(r.get("kernel_time_ms_sum")),
            _num(r.get("time_pct"), 1), *(_num(c) for c in cells), r.get("roofline_bound") or "-",
            _num(r.get("pct_roofline_mean"), 1),
        )  # fmt: skip
    console.print(table)
    console.print(f"    all {len(rows)} ops: {roofline_csv}", markup=False, soft_wrap=True)


def _num(text: str | None, digits: int = 3) -> str:
    try:
        return f"{float(text):.{digits}f}" if text not in (None, "") else "-"
    except ValueError:
        return str(text)


def print_summary(summary: dict[str, Any], top: int = 10) -> None:
    """The human-readable lines: per trace, its stages with their top ops, notes and errors, and the summary."""
    for tr in summary.get("traces", []):
        console.print(
            f"{tr['trace_file']}: {tr['iterations']} iterations {tr['phases']} ({tr['phase_source']})", markup=False
        )
        for st in tr["stages"].values():
            console.print(
                f"  {st['label']}: window {len(st['window_iterations'])}/{st['iterations']} iterations, "
                f"kernel time {st['kernel_time_us'] / 1000:.3f} ms, {st['modelled_kernel_time_pct']}% of it in ops "
                "with a FLOPs/bytes model (placed on the roofline)"
            )
            print_ops(st["roofline_csv"], top)
        for note in tr["notes"]:
            console.print(f"  note: {note}", markup=False)
    for warning in summary.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    for err in summary.get("errors", []):
        console.print(f"[red]error:[/red] {escape(err)}", soft_wrap=True)
    if summary.get("workbook"):
        console.print(f"workbook: {summary['workbook']}", markup=False, soft_wrap=True)
    console.print(f"summary: {Path(str(summary['output_dir'])) / 'inference_summary.json'}", markup=False)


STAGE_COLUMNS = ["trace", "stage", "window iterations", "iterations", "kernel time (ms)", "modelled %", "roofline csv"]


def stage_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """One row per stage of each trace (``--format csv|json``)."""
    return [
        [tr["trace_file"], name, len(st["window_iterations"]), st["iterations"], st["kernel_time_us"] / 1000,
         st["modelled_kernel_time_pct"], st["roofline_csv"]]
        for tr in summary.get("traces", [])
        for name, st in tr["stages"].items()
    ]  # fmt: skip


@handle_errors
def inference_command(
    trace: Path = typer.Argument(..., help="a trace file, a folder of traces, or a benchmark workspace"),
    stages: str = typer.Option("all", "--stages", help="all | prefilldecode | decode | prefill"),
    spec: str | None = typer.Option(None, "--spec", help="GPU spec name (MI300X, H200, ...) or a JSON file"),
    capture_traces: Path | None = typer.Option(
        None, "--capture-traces", help="folder of graph-capture traces (default: capture_traces/ next to the trace)"
    ),
    label_suffix: str = typer.Option("", "--label-suffix", help="appended to output names, e.g. _ISL1024_OSL512"),
    output_dir: Path | None = typer.Option(
        None,
        "--output-dir",
        "-o",
        help="where each run's inference_<trace>_<time>/ goes; default <trace folder>/../tracelens",
        callback=check_output_dir,
    ),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary"),
    window: str = typer.Option(
        "auto", "--window", help="auto (steady state) | all (no window) | FIRST:LAST iteration indices"
    ),
    include_unlinked: bool = typer.Option(
        False, "--include-unlinked-kernels", help="TraceLens tables: also kernels without a launch record"
    ),
    world_size: int | None = typer.Option(None, "--world-size", min=1, help="ranks, for collectives' bus bandwidth"),
    tracelens_tables: bool = typer.Option(
        True, "--tracelens-tables/--no-tracelens-tables", help="also write TraceLens's tables (unified_perf_summary...)"
    ),
    fmt: str = format_option(formats=TABLE_FORMATS),
    no_html: bool = no_html_option(),
) -> None:
    """Prefill/decode stage split, steady-state window, kernel table and per-op roofline."""
    check_format(fmt, TABLE_FORMATS)
    if not trace.exists():
        raise UsageError(f"{trace}: no such file or folder")
    target = trace / "torch_trace" if trace.is_dir() and (trace / "torch_trace").is_dir() else trace
    options: dict[str, object] = {"stages": stages, "label_suffix": label_suffix, "window": window}
    if include_unlinked:
        options["include_unlinked_kernels"] = True
    if world_size:
        options["world_size"] = world_size
    if not tracelens_tables:
        options["tracelens_tables"] = False
    if spec:
        options["spec"] = spec
    if capture_traces is not None:
        options["capture_traces"] = str(capture_traces)
    if fmt == "xlsx":
        options["export_format"] = "excel"
    out = output_dir or STATE.output_dir or default_output_dir(trace) or STATE.resolve_output_dir(None)
    with run_folder(out, "inference", trace.name.split(".")[0]) as run_dir:  # a new folder every run
        summary = run_inference_analysis(target, options, run_dir)
    if as_json:
        console.print_json(json.dumps(summary, default=str))
    elif fmt in ("csv", "json"):
        print_rows(STAGE_COLUMNS, stage_rows(summary), fmt)
    else:
        print_summary(summary)
    write_html("inference", summary, summary.get("output_dir"), skip=no_html, quiet=as_json or fmt in ("csv", "json"))
    raise typer.Exit(1 if summary.get("errors") else 0)


def register(cli: typer.Typer) -> None:
    """Add ``magpie inference`` to the root command line ``cli``."""
    cli.command("inference")(inference_command)
