"""The CSV files of gap analysis: kernel tables (AMD Magpie's columns first) and the largest GPU gaps."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, TextIO

from magpie_gap_analysis.models import GapAnalysisResult, RankSummary, TopKernel

__all__ = [
    "AMD_COLUMNS",
    "EXTRA_COLUMNS",
    "GAP_COLUMNS",
    "WORKBOOK",
    "fmt",
    "write_gaps",
    "write_table",
    "write_workbook",
]

#: the workbook of ``--format xlsx``, beside the CSVs
WORKBOOK = "gap_analysis.xlsx"

AMD_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]
EXTRA_COLUMNS = [
    "Min (us)",
    "Max (us)",
    "Std (us)",
    "% GPU busy",
    "% Wall",
    "Kernel family",
    "Kernel category",
    "Function",
    "Dtype",
    "Tile",
    "Parse confidence",
]
GAP_COLUMNS = [
    "rank",
    "device",
    "start (us)",
    "duration (us)",
    "host bound",
    "cpu op",
    "annotation",
    "launch call",
    "kernel before",
    "kernel after",
]


def fmt(x: float) -> str:
    """A number as the CSVs write it (2 decimals)."""
    return f"{x:.2f}"


def _write_source_header(f: TextIO, repos: list[dict[str, Any]] | None, source_columns: list[str]) -> None:
    """The comment lines above a table with source columns: repository mappings and where the columns are."""
    if repos:
        f.write("# Repository Path Mappings:\n")
        for repo in repos:
            f.write(f"# {repo['var']}={repo['path']}" + (f" @ {repo['commit']}" if repo.get("commit") else "") + "\n")
        f.write("#\n")
    first = len(AMD_COLUMNS) + 1
    f.write(
        f"# Note: columns {first}-{first + len(source_columns) - 1} come from the offline kernel source "
        "finder; check source_resolution before trusting source_file.\n"
    )


def _table_row(k: TopKernel, sources: dict[str, dict[str, Any]] | None, source_columns: list[str]) -> list[Any]:
    row: list[Any] = [k.name, k.calls, fmt(k.self_cuda_total_us), fmt(k.avg_time_us), fmt(k.pct_total), k.input_shapes]
    src = None
    if sources is not None:
        src = sources.get(k.name) or {
            "kind": k.family,
            "category": k.category,
            "source_resolution": "unresolved",
            "source_error": "not searched",
        }
        row += [src.get(c, "") or "" for c in source_columns]
    row += [
        fmt(k.min_us),
        fmt(k.max_us),
        fmt(k.std_us),
        fmt(k.pct_gpu_busy),
        fmt(k.pct_wall),
        k.family,
        k.category,
        k.function or "",
        k.dtype or "",
        k.tile or "",
        f"{k.parse_confidence:.2f}",
    ]
    if src is not None:
        row.append(src.get("line") or "")
    return row


def write_table(
    path: Path,
    rows: list[TopKernel],
    *,
    sources: dict[str, dict[str, Any]] | None,
    repos: list[dict[str, Any]] | None = None,
    source_columns: list[str] | None = None,
) -> Path:
    """A kernel table: AMD Magpie's six columns, the source finder's (when ``sources`` is given), then magpie's."""
    source_columns = source_columns or []
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        if sources is not None:
            _write_source_header(f, repos, source_columns)
        writer = csv.writer(f)
        header = list(AMD_COLUMNS)
        if sources is not None:
            header += source_columns
        header += EXTRA_COLUMNS
        if sources is not None:
            header += ["Source line"]
        writer.writerow(header)
        for k in rows:
            writer.writerow(_table_row(k, sources, source_columns))
    return path


def write_gaps(path: Path, ranks: list[RankSummary]) -> Path:
    """``gpu_gaps.csv``: the largest gaps of every device of every rank."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(GAP_COLUMNS)
        for rs in ranks:
            for d in rs.devices:
                for g in d.largest_gaps:
                    w.writerow(
                        [
                            rs.rank,
                            d.device,
                            fmt(g.start_us),
                            fmt(g.duration_us),
                            "" if g.host_bound is None else str(g.host_bound).lower(),
                            g.cpu_op or "",
                            g.annotation or "",
                            g.launch_call or "",
                            g.before,
                            g.after,
                        ]
                    )
    return path


def workbook_sheets(result: GapAnalysisResult) -> dict[str, Path]:
    """The CSV tables a run wrote, by sheet name: top kernels, all kernels, each rank's top kernels, the gaps."""
    sheets = {"top kernels": result.csv_path, "all kernels": result.full_csv_path}
    sheets |= {f"rank{r.rank} kernels": r.csv_path for r in result.ranks}
    sheets["gpu gaps"] = result.gaps_csv_path
    return {name: Path(path) for name, path in sheets.items() if path}


def write_workbook(result: GapAnalysisResult) -> Path:
    """``gap_analysis.xlsx`` in the run folder: every table of the run, a sheet each (``--format xlsx``)."""
    from magpie_trace.workbook import write_csv_workbook

    assert result.output_dir is not None  # only a run that wrote its tables has a workbook
    return write_csv_workbook(Path(result.output_dir) / WORKBOOK, workbook_sheets(result))
