"""The inference analysis's Excel export: ``export_format: excel`` (AMD Magpie's ``profiler.tracelens`` key, once
only noted) and ``magpie inference --format xlsx`` write one workbook, a sheet per table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from magpie_inference_analysis.analyzer import AnalysisError, InferenceAnalyzer
from openpyxl import load_workbook

from tests.conftest import DATA

H200 = DATA / "traces_gpu" / "llama_h200.json.gz"
STAGE_SHEETS = ["prefill_only roofline", "prefill_only kernels", "decode_only roofline", "decode_only kernels"]


def test_benchmark_export_format_excel_writes_the_workbook(tmp_path: Path) -> None:
    from magpie_benchmark.diagnostic import run_tracelens_analysis

    from tests.helpers.fake_framework import config

    cfg = config(profiler={"tracelens": {"enabled": True, "analysis_stages": "all", "export_format": "excel"}})
    summary = run_tracelens_analysis(cfg, H200, tmp_path / "tracelens", None)
    assert not summary["errors"] and summary["notes"] == []  # no longer "tables are written as CSV"
    workbook = Path(summary["workbook"])
    assert workbook == tmp_path / "tracelens" / "inference_tables.xlsx" and str(workbook) in summary["outputs"]
    wb = load_workbook(workbook, read_only=True)
    assert wb.sheetnames[:5] == [*STAGE_SHEETS, "iterations"]
    assert "unified_perf_summary" in wb.sheetnames
    decode = summary["traces"][0]["stages"]["decode_only"]
    rows = list(wb["decode_only roofline"].iter_rows(values_only=True))
    assert rows[0][:2] == ("source_category", "op_name")
    assert rows[1][1] == decode["top_ops"][0]["op_name"]
    assert len(rows) - 1 == len(Path(decode["roofline_csv"]).read_text().splitlines()) - 1


def test_inference_format_xlsx(run_magpie: Any, tmp_path: Path) -> None:
    done = run_magpie(["inference", str(H200), "--format", "xlsx", "--no-html", "-o", str(tmp_path)])
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = tmp_path.iterdir()
    assert f"workbook: {run / 'inference_tables.xlsx'}" in done.stdout
    assert load_workbook(run / "inference_tables.xlsx", read_only=True).sheetnames[:4] == STAGE_SHEETS


def test_a_bad_export_format_is_named(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="export_format must be one of csv, excel"):
        InferenceAnalyzer().analyze(H200, {"export_format": "parquet"}, tmp_path)
