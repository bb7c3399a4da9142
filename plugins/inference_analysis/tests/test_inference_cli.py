"""``magpie inference`` (added by the magpie-inference-analysis plugin through ``magpie_register_commands``)
and the benchmark pipeline's use of the ``inference`` analyzer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from magpie_inference_analysis.cli import default_output_dir

from tests.conftest import DATA

CPU = DATA / "traces" / "cpu_recorded" / "tiny_llama_cpu.json.gz"


def test_cli_inference(tmp_path: Path) -> None:
    magpie = str(Path(sys.executable).with_name("magpie"))
    ok = subprocess.run(
        [magpie, "inference", str(CPU), "--spec", "MI355X", "-o", str(tmp_path / "o"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout)
    assert summary["traces"][0]["spec"]["name"] == "MI355X"
    (run,) = (tmp_path / "o").iterdir()  # each run writes into a new folder under -o
    assert (run / "decode_only_kernel_roofline_simple.csv").is_file()
    bad = subprocess.run([magpie, "inference", str(CPU), "--spec", "A100"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown GPU spec" in bad.stdout + bad.stderr
    bad = subprocess.run([magpie, "inference", str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2


def test_cli_inference_text_summary(run_magpie, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = run_magpie(["inference", str(CPU), "--stages", "decode", "-o", str(tmp_path)], timeout=120)
    assert out.returncode == 0, out.stderr
    assert "decode_only: window 5/8 iterations" in out.stdout
    # the ops table TraceLens users expect in the terminal (issue 46), then every op's CSV
    assert "op" in out.stdout and "% of roof" in out.stdout and "TFLOP/s" in out.stdout and "all " in out.stdout
    assert "with a FLOPs/bytes model" in out.stdout  # "modelled %" said in words
    (run,) = tmp_path.iterdir()
    assert run.name.startswith("inference_tiny_llama_cpu_")
    assert f"summary: {run / 'inference_summary.json'}" in out.stdout


def test_default_output_dir(tmp_path: Path) -> None:
    workspace = tmp_path / "run"
    (workspace / "torch_trace").mkdir(parents=True)
    assert default_output_dir(workspace) == workspace / "tracelens"  # a benchmark workspace
    assert default_output_dir(workspace / "torch_trace") == workspace / "tracelens"  # its trace folder
    trace = workspace / "torch_trace" / "t.json.gz"
    trace.write_bytes(b"")
    assert default_output_dir(trace) == workspace / "tracelens"
    elsewhere = tmp_path / "traces" / "t.json"
    elsewhere.parent.mkdir()
    assert default_output_dir(elsewhere) is None  # not next to it: magpie's run root (./magpie_runs)


def test_benchmark_writes_tracelens_outputs(tmp_path: Path) -> None:
    from magpie_benchmark.pipeline import run_benchmark

    from tests.helpers.fake_framework import FakeFramework, config

    cfg = config(
        run_kind="diagnostic",
        load={"warmup_requests": 0, "progress": False},
        profiler={"tracelens": {"enabled": True, "analysis_stages": "all", "export_format": "csv"}},
    )
    report = run_benchmark(cfg, tmp_path, framework_component=FakeFramework())
    data = json.loads((Path(report.workspace_dir) / "benchmark_report.json").read_text())
    tl = data["tracelens_analysis"]
    assert tl is not None and tl["output_dir"].endswith("tracelens"), data["errors"]
    assert not tl["errors"] and tl["outputs"]
    assert all(Path(p).is_file() and "/tracelens/" in p for p in tl["outputs"])
    assert (Path(report.workspace_dir) / "tracelens" / "inference_summary.json").is_file()
