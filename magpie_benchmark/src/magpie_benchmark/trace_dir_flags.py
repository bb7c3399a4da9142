"""AMD Magpie's ``benchmark --trace-dir`` flags: one spelling for every command that takes them.

``magpie benchmark --trace-dir`` takes exactly these; the gap plugin's ``magpie gap`` takes them too and adds
its own (``magpie_gap_analysis.options.GapFlags`` extends :class:`TraceDirFlags`), so a flag, its default and its
help read the same in both. Each sets a key of the gap plugin's ``gap_analysis`` block (:func:`trace_dir_block`);
that plugin's model checks the values. Only typer is imported here: ``magpie gap`` loads nothing of the benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

__all__ = ["LIST_FLAGS", "TraceDirFlags", "trace_dir_block"]


class TraceDirFlags:
    """Typer option declarations, one per flag (the parameter name is the flag's name in :func:`trace_dir_block`)."""

    top_k = typer.Option(20, "--top-k", min=1, help="kernels to show")
    start_pct = typer.Option(0.0, "--start-pct", min=0, max=100, help="window start, % of trace")
    end_pct = typer.Option(100.0, "--end-pct", min=0, max=100, help="window end, % of trace")
    min_duration_us = typer.Option(0.0, "--min-duration-us", min=0, help="ignore shorter events")
    categories = typer.Option(None, "--categories", help="event categories to keep (default: kernel gpu)")
    ignore_categories = typer.Option(None, "--ignore-categories", help="event categories to drop")
    no_rank_csv = typer.Option(False, "--no-rank-csv", help="skip per-rank CSVs")
    find_kernel_sources = typer.Option(False, "--find-kernel-sources", help="map kernels to source files")
    kernel_source_repos = typer.Option(None, "--kernel-source-repos", help="local checkouts to search")


#: flags that take a list; each value may also be a comma list
LIST_FLAGS = ("categories", "ignore_categories", "kernel_source_repos")


def trace_dir_block(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gap_analysis:`` keys the :class:`TraceDirFlags` values in ``flags`` (by parameter name) set; a list
    flag that was not given sets nothing, so the block's own default applies."""
    from magpie_core.cli.argv import split_list

    data: dict[str, Any] = {
        "enabled": True,
        "top_k": flags["top_k"],
        "trace_start_pct": flags["start_pct"],
        "trace_end_pct": flags["end_pct"],
        "min_duration_us": flags["min_duration_us"],
        "no_rank_csv": flags["no_rank_csv"],
        "find_kernel_sources": flags["find_kernel_sources"],
    }
    for key in LIST_FLAGS:
        if flags[key] is not None:
            data[key] = split_list(flags[key])
    return data
