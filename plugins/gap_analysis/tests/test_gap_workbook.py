"""``magpie gap --format xlsx``: the table is printed as usual and ``gap_analysis.xlsx`` holds every CSV table of
the run, a sheet each, numbers as numbers (opened with openpyxl)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from openpyxl import load_workbook

from tests.conftest import DATA

H100 = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def test_format_xlsx_writes_one_workbook_of_the_run_tables(run_magpie: Any, tmp_path: Path) -> None:
    done = run_magpie(["gap", str(H100), "--top-k", "5", "--format", "xlsx", "--no-html", "-o", str(tmp_path)])
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = tmp_path.iterdir()
    assert f"workbook: {run / 'gap_analysis.xlsx'}" in done.stdout
    assert "top 5 kernels" in done.stdout  # the table is still printed
    wb = load_workbook(run / "gap_analysis.xlsx", read_only=True)
    assert wb.sheetnames == ["top kernels", "all kernels", "rank0 kernels", "gpu gaps"]
    with (run / "gap_analysis.csv").open() as f:
        header, first = list(csv.reader(f))[:2]
    rows = list(wb["top kernels"].iter_rows(values_only=True))
    assert list(rows[0]) == header and rows[1][0] == first[0]
    assert rows[1][header.index("Calls")] == int(first[header.index("Calls")])  # a number, not text
    assert len(rows) == 1 + 5


def test_format_xlsx_is_only_for_commands_that_write_tables(run_magpie: Any) -> None:
    done = run_magpie(["plugins", "--format", "xlsx"])
    assert done.returncode == 2 and "use one of table, csv, json" in done.stdout + done.stderr
