"""Command-line options of the gap analysis settings (:class:`~magpie_gap_analysis.config.GapAnalysisConfig`).

``magpie gap`` takes them: AMD Magpie's ``benchmark --trace-dir`` flags, spelt once in the benchmark distribution
(:class:`magpie_benchmark.trace_dir_flags.TraceDirFlags`, which ``magpie benchmark --trace-dir`` takes and checks with
this plugin's model, looked up as the ``gap_analysis`` config block), and this plugin's own flags on top. Other
distributions do not import this module. Importing it registers no command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer
from magpie_benchmark.trace_dir_flags import TraceDirFlags, trace_dir_block

from magpie_core.config.validation import validate

if TYPE_CHECKING:
    from magpie_gap_analysis.config import GapAnalysisConfig

__all__ = ["GapFlags", "gap_config_from_flags"]


def gap_config_from_flags(
    shared: Mapping[str, Any],
    *,
    window_annotation: str | None = None,
    start_us: float | None = None,
    end_us: float | None = None,
    clone: bool = False,
    workers: int | None = None,
    repos_base_dir: str | None = None,
) -> GapAnalysisConfig:
    """The ``gap_analysis:`` block the flags describe: ``shared``, the :class:`TraceDirFlags` values by parameter
    name (list flags may hold comma lists), and this plugin's own. Two ways of choosing the window at once
    (``--start-pct/--end-pct``, ``--start-us/--end-us``, ``--window-annotation``) is a usage error: one would
    silently win."""
    by_pct = shared["start_pct"] != 0.0 or shared["end_pct"] != 100.0
    _one_window(by_pct, start_us is not None or end_us is not None, window_annotation)
    data: dict[str, object] = {
        **trace_dir_block(shared),
        "window_annotation": window_annotation,
        "window_start_us": start_us,
        "window_end_us": end_us,
        "clone_repos": clone,
        "workers": workers,
        "repos_base_dir": repos_base_dir,
    }
    from magpie_gap_analysis.config import GapAnalysisConfig

    return validate(GapAnalysisConfig, data, "command line")


def _one_window(by_pct: bool, by_us: bool, annotation: str | None) -> None:
    from magpie_core.cli.kit import UsageError

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


class GapFlags(TraceDirFlags):
    """Typer option declarations of ``magpie gap``: the ``--trace-dir`` flags it shares with ``magpie benchmark``,
    and the ones only this plugin has."""

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
