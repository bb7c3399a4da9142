"""Excel workbooks of tables: one sheet per table (``--format xlsx``, ``export_format: excel``, the Python API).

Engine-neutral: a table is a header and rows, most often a CSV file an analysis wrote; a cell that reads as a
number is written as one, so a sheet sorts and sums like the CSV in pandas. openpyxl is imported only here.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_SHEET_NAME", "csv_table", "sheet_names", "write_csv_workbook", "write_workbook"]

#: Excel's limit on a sheet name's length
MAX_SHEET_NAME = 31
Table = tuple[Sequence[str], Iterable[Sequence[Any]]]
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")


def sheet_names(names: Iterable[str]) -> list[str]:
    """Names Excel accepts, in order: no ``[]:*?/\\``, at most 31 characters, unique ignoring case (a cut name
    that meets an earlier one ends in ``~2``, ``~3``...)."""
    out: list[str] = []
    seen: set[str] = set()
    for name in names:
        base = _BAD_SHEET_CHARS.sub("_", name).strip("'") or "sheet"
        candidate, n = base[:MAX_SHEET_NAME], 1
        while candidate.lower() in seen:
            n += 1
            tail = f"~{n}"
            candidate = base[: MAX_SHEET_NAME - len(tail)] + tail
        seen.add(candidate.lower())
        out.append(candidate)
    return out


def _cell(value: Any) -> Any:
    """A CSV cell as Excel should hold it: a number when it reads as one, else the text (empty: no value)."""
    if isinstance(value, float) and value != value:
        return None  # pandas' missing value: an empty cell, not Excel's #NUM!
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str)  # a nested report field: its JSON, readable in one cell
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    # nan/inf are not numbers Excel stores; keep what was written
    return number if number == number and abs(number) != float("inf") else value


def csv_table(path: Path) -> Table:
    """A CSV file's header and rows; leading ``#`` lines (notes above a table) are skipped."""
    with Path(path).open(newline="") as f:
        lines = list(f)
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    rows = list(csv.reader(lines[start:]))
    return (rows[0], rows[1:]) if rows else ([], [])


def write_workbook(path: Path, tables: Mapping[str, Table]) -> Path:
    """Write ``tables`` (sheet name -> header and rows) as one workbook at ``path``; its path."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)  # the default empty sheet
    for name, (columns, rows) in zip(sheet_names(tables), tables.values(), strict=True):
        ws = wb.create_sheet(name)
        ws.append(list(columns))
        for row in rows:
            ws.append([_cell(v) for v in row])
        ws.freeze_panes = "A2"  # the header stays in view while scrolling a long table
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path


def write_csv_workbook(path: Path, csv_files: Mapping[str, Path]) -> Path:
    """One workbook of CSV files (sheet name -> file), a sheet each, in the given order."""
    return write_workbook(path, {name: csv_table(file) for name, file in csv_files.items()})
