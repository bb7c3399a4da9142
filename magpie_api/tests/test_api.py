"""``import magpie``: the CLI and the API on the same bundled traces give the same numbers; every kind of report
loads into its typed result; pandas is imported only when a table is asked for.

Traces: the bundled H100 trace (gap) and the H200 recording (inference), each analysed in well under a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import magpie
import pytest

from tests.conftest import DATA, ROOT

H100 = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
H200 = DATA / "traces_gpu" / "llama_h200.json.gz"
#: a compare run folder the CLI wrote (CPU, PyTorch softmax): the example notebook's
NOTEBOOK_COMPARE = ROOT / "docs" / "notebooks" / "data" / "compare_softmax"


def cli_json(run_magpie: Any, *args: str) -> list[dict[str, Any]]:
    """The rows ``magpie ... --format json`` prints."""
    done = run_magpie([*args, "--format", "json", "--no-html"])
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def only_run_folder(parent: Path) -> Path:
    (folder,) = [p for p in parent.iterdir() if p.is_dir()]
    return folder


@pytest.fixture(scope="module")
def gap_run(tmp_path_factory: pytest.TempPathFactory) -> magpie.GapResult:
    return magpie.gap(H100, output_dir=tmp_path_factory.mktemp("api_gap"), top_k=8)


@pytest.fixture(scope="module")
def inference_run(tmp_path_factory: pytest.TempPathFactory) -> magpie.InferenceResult:
    return magpie.inference(H200, output_dir=tmp_path_factory.mktemp("api_inference"))


def test_import_magpie_does_not_import_pandas() -> None:
    code = "import sys, magpie; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'plotly')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    assert out.stdout.strip() == "[]"


def test_gap_api_has_the_cli_numbers(gap_run: magpie.GapResult, run_magpie: Any, tmp_path: Path) -> None:
    rows = cli_json(run_magpie, "gap", str(H100), "--top-k", "8", "-o", str(tmp_path))
    df = gap_run.top_kernels
    assert len(df) == len(rows) == 8
    assert list(df["name"]) == [r["kernel"] for r in rows]
    assert [f"{x:.2f}" for x in df["self_cuda_total_us"]] == [r["total (us)"] for r in rows]
    assert [str(c) for c in df["calls"]] == [r["calls"] for r in rows]
    # the CLI's run folder, loaded, is the same result
    loaded = magpie.load(only_run_folder(tmp_path))
    assert isinstance(loaded, magpie.GapResult)
    assert loaded.top_kernels["self_cuda_total_us"].tolist() == df["self_cuda_total_us"].tolist()
    assert loaded.gpu_idle_pct == gap_run.gpu_idle_pct


def test_gap_tables(gap_run: magpie.GapResult) -> None:
    assert gap_run.tables() == ["top_kernels", "all_kernels", "gaps", "devices"]
    all_kernels = gap_run.all_kernels
    assert len(all_kernels) >= len(gap_run.top_kernels)
    assert all_kernels["Name"].iloc[0] == gap_run.top_kernels["name"].iloc[0]
    assert {"rank", "device", "duration_us", "cpu_op"} <= set(gap_run.gaps.columns)
    assert gap_run.devices["busy_us"].iloc[0] > 0
    assert gap_run.to_pandas().equals(gap_run.top_kernels)


def test_inference_api_has_the_cli_numbers(
    inference_run: magpie.InferenceResult, run_magpie: Any, tmp_path: Path
) -> None:
    rows = cli_json(run_magpie, "inference", str(H200), "-o", str(tmp_path))
    stages = inference_run.stages
    assert list(stages["stage"]) == [r["stage"] for r in rows] == ["prefill_only", "decode_only"]
    assert stages["kernel_time_ms"].tolist() == [r["kernel time (ms)"] for r in rows]
    assert stages["modelled_pct"].tolist() == [r["modelled %"] for r in rows]
    roofline = inference_run.roofline
    assert set(roofline["stage"]) == {"prefill_only", "decode_only"}
    decode = roofline[roofline["stage"] == "decode_only"]
    assert decode["time_pct"].sum() == pytest.approx(100, abs=0.5)
    # the kernel table's total is the stage's kernel time, as the CLI printed it
    kernels = inference_run.kernels
    assert kernels[kernels["stage"] == "decode_only"]["Total (us)"].sum() / 1000 == pytest.approx(
        rows[1]["kernel time (ms)"], rel=1e-4
    )
    assert len(inference_run.iterations) == 17
    loaded = magpie.load(only_run_folder(tmp_path) / "inference_summary.json")
    assert isinstance(loaded, magpie.InferenceResult)
    assert loaded.roofline["kernel_time_ms_sum"].tolist() == roofline["kernel_time_ms_sum"].tolist()


def test_tracelens_tables_are_the_cli_files(
    inference_run: magpie.InferenceResult, run_magpie: Any, tmp_path: Path
) -> None:
    """TraceLens's tables of the API's run are the ones ``magpie inference`` writes, number for number."""
    import csv

    done = run_magpie(["inference", str(H200), "-o", str(tmp_path), "--no-html"])
    assert done.returncode == 0, done.stdout + done.stderr
    folder = only_run_folder(tmp_path)
    for name in ("unified_perf_summary", "ops_summary", "kernel_summary", "gpu_timeline", "short_kernels_summary"):
        with (folder / f"{name}.csv").open(newline="") as f:
            cli = list(csv.DictReader(f))
        df = getattr(inference_run, name)
        assert len(df) == len(cli) > 0, name
        assert set(df["trace"]) == {H200.name}
        number = {"unified_perf_summary": "Kernel Time (µs)_sum", "ops_summary": "total_direct_kernel_time_sum",
                  "kernel_summary": "Kernel duration (µs)_sum", "gpu_timeline": "time ms",
                  "short_kernels_summary": "Short Kernel duration (µs) sum"}[name]  # fmt: skip
        assert df[number].tolist() == [float(r[number]) for r in cli], name
    # the summaries add up to the unified table's kernel time, as in TraceLens
    unified = inference_run.unified_perf_summary["Kernel Time (µs)_sum"].sum()
    assert inference_run.ops_summary["total_direct_kernel_time_sum"].sum() == pytest.approx(unified)
    assert inference_run.collective_summary.empty  # no NCCL kernels on one GPU: the table is not written
    assert inference_run.tables()[4:] == list(magpie._results.TRACELENS_TABLES)
    with pytest.raises(KeyError, match="tables: unified_perf_summary"):
        inference_run.tracelens("nope")


def test_tracelens_tables_are_sheets(inference_run: magpie.InferenceResult, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    wb = load_workbook(inference_run.to_excel(tmp_path / "inference.xlsx"), read_only=True)
    assert {"unified_perf_summary", "ops_summary", "kernel_summary"} <= set(wb.sheetnames)
    assert "collective_summary" not in wb.sheetnames  # empty tables get no sheet


def _write(folder: Path, name: str, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))
    return folder


def test_load_reads_every_kind(tmp_path: Path) -> None:
    request = {"success": True, "ttft_ms": 12.0, "e2el_ms": 80.0, "output_tokens": 8, "itl_ms": [9.0, 10.0]}
    point = {"concurrency": 4, "request_rate": None, "metrics": {"completed": 2, "ttft": {"median_ms": 12.0}}}
    bench = _write(
        tmp_path / "bench",
        "benchmark_report.json",
        {"mode": "benchmark", "success": True, "points": [{**point, "requests": [request, request]}]},
    )
    result = magpie.load(bench)
    assert isinstance(result, magpie.BenchmarkResult) and result.success
    assert result.points["metrics.ttft.median_ms"].tolist() == [12.0]
    assert "requests" not in result.points.columns
    assert result.requests[["point", "concurrency", "ttft_ms"]].values.tolist() == [[0, 4, 12.0], [0, 4, 12.0]]
    assert result.gap is None and result.inference is None

    ranking = [
        {"rank": 1, "index": 1, "kernel_id": "fast", "median_us": 5.0, "speedup": 2.0, "verdict": "FASTER"},
        {"rank": 2, "index": 0, "kernel_id": "base", "median_us": 10.0, "speedup": 1.0, "verdict": "BASELINE"},
    ]
    compare = magpie.load(
        _write(tmp_path / "cmp", "compare_report.json", {"mode": "compare", "ranking": ranking, "winner_id": "fast"})
        / "compare_report.json"
    )
    assert isinstance(compare, magpie.CompareResult) and compare.winner == "fast"
    assert compare.candidates.set_index("kernel_id")["speedup"]["fast"] == 2.0

    conditions = [{"name": "kernel_gain", "ok": False, "detail": "SAME"}]
    loop = magpie.load(_write(tmp_path / "loop", "loop_report.json", {"mode": "loop_report", "conditions": conditions}))
    assert isinstance(loop, magpie.LoopResult) and not loop.success
    assert loop.conditions["ok"].tolist() == [False]

    results = [{"kernel_id": "k", "performance": {"samples_us": [3.0, 1.0]}}, {"kernel_id": "x", "performance": {}}]
    analyze = magpie.load(
        _write(tmp_path / "an", "analyze_report.json", {"mode": "analyze", "summary": [{"a": 1}], "results": results})
    )
    assert isinstance(analyze, magpie.AnalyzeResult) and analyze.kernels["a"].tolist() == [1]
    assert analyze.samples.values.tolist() == [["k", 0, 3.0], ["k", 1, 1.0]]  # in the order taken; none for "x"


def test_compare_samples_give_the_cli_medians() -> None:
    """A compare report ``magpie compare`` wrote (the notebook's): each kernel's samples, their count and median
    are the ones the command printed (``summary_rows``) and ranked by."""
    compare = magpie.load(NOTEBOOK_COMPARE)
    assert isinstance(compare, magpie.CompareResult)
    samples = compare.samples.groupby("kernel_id")["time_us"]
    printed = compare.summary.set_index("kernel_id")
    assert samples.size().to_dict() == printed["samples"].to_dict()
    assert samples.median().to_dict() == printed["median_us"].to_dict()
    assert samples.median().to_dict() == compare.candidates.set_index("kernel_id")["median_us"].to_dict()


def test_load_reads_a_loop_record_and_its_report(gap_run: magpie.GapResult, run_magpie: Any, tmp_path: Path) -> None:
    """A loop folder loads before ``magpie loop report`` (its loop.json) and after (its report), with the numbers
    ``magpie loop status --json`` and ``magpie loop report --json`` print."""
    loop = tmp_path / "loop"
    top = gap_run.top_kernels["name"][0]
    for args in (
        ["start", str(loop)],
        ["add", str(loop), "analysis", str(gap_run.path)],
        ["add", str(loop), "kernel", top],
    ):
        done = run_magpie(["loop", *args])
        assert done.returncode == 0, done.stdout + done.stderr
    record = magpie.load(loop)
    assert isinstance(record, magpie.LoopResult) and not record.concluded and record.conclusion == ""
    status = json.loads(run_magpie(["loop", "status", str(loop), "--json"]).stdout)
    assert record.kernels[["name", "pct_total"]].values.tolist() == [
        [k["name"], k["pct_total"]] for k in status["kernels"]
    ]
    assert record.history["step"].tolist() == ["start", "analysis", "kernel"]
    assert record.conditions.empty
    done = run_magpie(["loop", "report", str(loop), "--json"])  # exit 1: not a success (no baseline, no compare)
    report = magpie.load(loop)
    assert report.concluded and not report.success
    assert report.conclusion == json.loads(done.stdout)["conclusion"]
    assert report.conditions["ok"].tolist() == [c["ok"] for c in json.loads(done.stdout)["conditions"]]
    assert report.history.equals(record.history)
    assert report.kernels["pct_total"].tolist() == record.kernels["pct_total"].tolist()


def test_load_names_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        magpie.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="no magpie report in this folder"):
        magpie.load(tmp_path)
    with pytest.raises(ValueError, match="not a magpie report"):
        magpie.load(_write(tmp_path / "x", "r.json", {"something": 1}) / "r.json")
    with pytest.raises(KeyError, match="tables: top_kernels"):
        magpie.GapResult({"top_kernels": [], "ranks": []}).table("nope")


def test_figures_are_the_report_pages(gap_run: magpie.GapResult, inference_run: magpie.InferenceResult) -> None:
    fig = gap_run.figure("top_kernels")
    assert fig.title == "top 8 kernels by total time"
    bars = sorted(x for trace in fig.data for x in trace["x"])
    assert bars == pytest.approx(sorted(gap_run.top_kernels["self_cuda_total_us"] / 1000))
    bundle = fig._repr_mimebundle_()
    assert bundle["application/vnd.plotly.v1+json"] == fig.to_dict() and "<div" in bundle["text/html"]
    assert inference_run.figure("roofline_decode").title == "roofline: decode_only on H200"
    with pytest.raises(KeyError, match="figures: stage_breakdown"):
        inference_run.figure("nope")


def test_to_excel_writes_every_table(gap_run: magpie.GapResult, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    wb = load_workbook(gap_run.to_excel(tmp_path / "gap.xlsx"), read_only=True)
    assert wb.sheetnames == gap_run.tables()
    assert (
        next(wb["top_kernels"].iter_rows(min_row=2, max_row=2, values_only=True))[0] == gap_run.top_kernels["name"][0]
    )
