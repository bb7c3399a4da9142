"""``magpie gap TRACE_DIR``: gap analysis of PyTorch profiler traces.

Flags match AMD Magpie's ``benchmark --trace-dir`` gap analysis; list flags
accept several values after one flag (``--categories kernel gpu``), repeated
flags, or a comma list.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from magpie_core.cli.app import STATE, NotAvailable, app, handle_errors
from magpie_core.config.loader import validate

if TYPE_CHECKING:  # imported where used: building the config models costs every command ~0.07 s at start-up
    from magpie_core.config.benchmark import GapAnalysisConfig

#: options that take several values, AMD Magpie (argparse nargs="*") style
MULTI_VALUE_OPTIONS = ("--categories", "--ignore-categories", "--kernel-source-repos")


def expand_multi_value_options(argv: list[str], names: tuple[str, ...] = MULTI_VALUE_OPTIONS) -> list[str]:
    """Rewrite ``--categories a b`` into ``--categories a --categories b`` (values stop at the next ``-x``).

    ``--categories=a`` and a value that looks like an option stay as they are;
    everything after ``--`` is left alone.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        out.append(arg)
        i += 1
        if arg in names:
            first = True
            while i < len(argv) and not argv[i].startswith("-"):
                if not first:
                    out.append(arg)
                out.append(argv[i])
                first = False
                i += 1
    return out


def split_list(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [part for value in values for part in value.split(",") if part]


def gap_config_from_flags(
    *,
    top_k: int,
    start_pct: float,
    end_pct: float,
    min_duration_us: float,
    categories: list[str] | None,
    ignore_categories: list[str] | None,
    no_rank_csv: bool,
    find_kernel_sources: bool,
    kernel_source_repos: list[str] | None,
    window_annotation: str | None = None,
    start_us: float | None = None,
    end_us: float | None = None,
    clone: bool = False,
    workers: int | None = None,
    repos_base_dir: str | None = None,
) -> GapAnalysisConfig:
    data: dict[str, object] = {
        "enabled": True,
        "top_k": top_k,
        "trace_start_pct": start_pct,
        "trace_end_pct": end_pct,
        "min_duration_us": min_duration_us,
        "no_rank_csv": no_rank_csv,
        "find_kernel_sources": find_kernel_sources,
        "window_annotation": window_annotation,
        "window_start_us": start_us,
        "window_end_us": end_us,
        "clone_repos": clone,
        "workers": workers,
        "repos_base_dir": repos_base_dir,
    }
    if categories is not None:
        data["categories"] = split_list(categories)
    if ignore_categories is not None:
        data["ignore_categories"] = split_list(ignore_categories)
    if kernel_source_repos is not None:
        data["kernel_source_repos"] = split_list(kernel_source_repos)
    from magpie_core.config.benchmark import GapAnalysisConfig

    return validate(GapAnalysisConfig, data, "command line")


class GapFlags:
    """Typer option declarations shared by ``gap`` and ``benchmark --trace-dir``."""

    top_k = typer.Option(20, "--top-k", min=1, help="kernels to show")
    start_pct = typer.Option(0.0, "--start-pct", min=0, max=100, help="window start, % of trace")
    end_pct = typer.Option(100.0, "--end-pct", min=0, max=100, help="window end, % of trace")
    min_duration_us = typer.Option(0.0, "--min-duration-us", min=0, help="ignore shorter events")
    categories = typer.Option(None, "--categories", help="event categories to keep (default: kernel gpu)")
    ignore_categories = typer.Option(None, "--ignore-categories", help="event categories to drop")
    no_rank_csv = typer.Option(False, "--no-rank-csv", help="skip per-rank CSVs")
    find_kernel_sources = typer.Option(False, "--find-kernel-sources", help="map kernels to source files")
    kernel_source_repos = typer.Option(None, "--kernel-source-repos", help="local checkouts to search")
    window_annotation = typer.Option(
        None, "--window-annotation", help="only inside record_function/user-annotation ranges of this name (* globs)"
    )
    start_us = typer.Option(None, "--start-us", min=0, help="window start, us from the trace's first event")
    end_us = typer.Option(None, "--end-us", min=0, help="window end, us from the trace's first event")
    as_json = typer.Option(False, "--json", help="print the JSON summary instead of the table")
    clone = typer.Option(False, "--clone", help="source finder may clone known upstream repos (network)")
    repos_base_dir = typer.Option(None, "--repos-dir", help="cache folder of checkouts for the source finder")
    workers = typer.Option(
        None, "--workers", min=1, help="processes for ranks; idle ones split a big JSON trace (default: CPU count)"
    )


def run_gap_pipeline(trace_dir: Path, config: GapAnalysisConfig, output_dir: Path | None, **extra: object) -> int:
    try:
        from magpie_core.pipelines.gap import run_gap_analysis
    except ImportError as exc:
        raise NotAvailable(f"gap analysis is not available in this build ({exc})") from exc
    return run_gap_analysis(trace_dir, config, output_dir, **extra)


@app.command("gap")
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
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", help="default: <trace_dir>/../gap_analysis"),
    window_annotation: str | None = GapFlags.window_annotation,
    start_us: float | None = GapFlags.start_us,
    end_us: float | None = GapFlags.end_us,
    as_json: bool = GapFlags.as_json,
    clone: bool = GapFlags.clone,
    repos_base_dir: str | None = GapFlags.repos_base_dir,
    workers: int | None = GapFlags.workers,
) -> None:
    """Kernel time tables, GPU idle gaps and launch-bound indicators from profiler traces."""
    config = gap_config_from_flags(
        top_k=top_k,
        start_pct=start_pct,
        end_pct=end_pct,
        min_duration_us=min_duration_us,
        categories=categories,
        ignore_categories=ignore_categories,
        no_rank_csv=no_rank_csv,
        find_kernel_sources=find_kernel_sources,
        kernel_source_repos=kernel_source_repos,
        window_annotation=window_annotation,
        start_us=start_us,
        end_us=end_us,
        clone=clone,
        workers=workers or STATE.workers,
        repos_base_dir=repos_base_dir,
    )
    raise typer.Exit(run_gap_pipeline(trace_dir, config, output_dir or STATE.output_dir, as_json=as_json))
