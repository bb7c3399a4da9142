"""magpie_trace.workbook: sheet names Excel accepts, and CSV cells written as numbers where they are numbers."""

from __future__ import annotations

from pathlib import Path

from magpie_trace.workbook import sheet_names, write_csv_workbook
from openpyxl import load_workbook


def test_sheet_names_are_cut_cleaned_and_unique() -> None:
    long = "decode_only_ISL1024_OSL512_CONC32 roofline"
    names = sheet_names([long, long, "a/b:c", "A/B:C", ""])
    assert names == [long[:31], long[:29] + "~2", "a_b_c", "A_B_C~2", "sheet"]
    assert all(len(n) <= 31 for n in names)


def test_csv_cells_keep_their_type(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("# a note above the table\nName,Calls,Avg (us),note\nk{lambda(int)#1},3,1.50,\nk2,1,nan,x\n")
    wb = load_workbook(write_csv_workbook(tmp_path / "t.xlsx", {"kernels": table}), read_only=True)
    rows = list(wb["kernels"].iter_rows(values_only=True))
    assert rows == [("Name", "Calls", "Avg (us)", "note"), ("k{lambda(int)#1}", 3, 1.5, None), ("k2", 1, "nan", "x")]
