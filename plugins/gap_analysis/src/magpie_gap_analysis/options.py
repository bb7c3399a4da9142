"""Command-line options of the gap analysis settings (:class:`~magpie_gap_analysis.config.GapAnalysisConfig`).

``magpie gap`` takes them. Other distributions do not import this module: ``magpie benchmark --trace-dir`` spells
its few flags itself and validates them with this plugin's model, looked up as the ``gap_analysis`` config block.
Importing this module registers no command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from magpie_core.cli.argv import split_list
from magpie_core.config.validation import validate

if TYPE_CHECKING:
    from magpie_gap_analysis.config import GapAnalysisConfig

__all__ = ["GapFlags", "gap_config_from_flags"]


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
    """The ``gap_analysis:`` block the flags describe; list flags may hold comma lists. Two ways of choosing
    the window at once (``--start-pct/--end-pct``, ``--start-us/--end-us``, ``--window-annotation``) is a
    usage error: one would silently win."""
    _one_window(start_pct != 0.0 or end_pct != 100.0, start_us is not None or end_us is not None, window_annotation)
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
    from magpie_gap_analysis.config import GapAnalysisConfig

    return validate(GapAnalysisConfig, data, "command line")


def _one_window(by_pct: bool, by_us: bool, annotation: str | None) -> None:
    from magpie_core.cli.app import UsageError

    chosen = [
        flags
        for flags, given in (
            ("--start-pct/--end-pct", by_pct),
            ("--start-us/--end-us", by_us),
            ("--window-annotation", annotation is not None),
        )
        if given
    ]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} both choose the analysis window: give only one of them")


class GapFlags:
    """Typer option declarations shared by ``benchmark --trace-dir`` and the gap plugin's ``gap``."""

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
    clone = typer.Option(False, "--clone", help="source finder may clone known upstream repos (network)")
    repos_base_dir = typer.Option(None, "--repos-dir", help="cache folder of checkouts for the source finder")
    workers = typer.Option(
        None, "--workers", min=1, help="processes for ranks; idle ones split a big JSON trace (default: CPU count)"
    )
