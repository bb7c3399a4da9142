"""Across packages: an offline ``run_cmd`` workload (magpie-run-cmd) whose profiled run's trace goes through
gap analysis and ``profiler.targeted_trace`` (magpie-targeted-trace) inside ``magpie benchmark``.

The workload is a real Python script honouring xDiT's contract (xDiT needs a GPU); its "profile trace" is a
real H100 PyTorch profiler trace from tests/data/traces, copied where xDiT would write its own."""

from __future__ import annotations

import fnmatch
import gzip
import json
import sys
from pathlib import Path

import yaml
from magpie_benchmark.run_config import load_benchmark_config

from tests.conftest import DATA

TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
WORKLOAD = r"""
import json, os, shutil, sys
out = sys.argv[sys.argv.index("--output_directory") + 1]
if "--profile" in sys.argv:
    shutil.copy(os.environ["WORKLOAD_TRACE"], os.path.join(out, "profile_trace_rank_0.json.gz"))
else:
    json.dump([0.8, 0.8, 0.8], open(os.path.join(out, "timings.json"), "w"))
"""

#: AMD Magpie's documented targeted_trace block (Magpie/targeted_trace/README.md), targets adapted to the trace
README_BLOCK = {
    "enabled": True,
    "backend": "torch_profiler",
    "run_seed": "qwen-diagnostic-1",
    "sample_rate": 0.1,
    "max_records_per_shard": 10000,
    "targets": [{"target_id": "cublas.gemm", "name_patterns": ["*gemm*"], "package": "cublas"}],
}


def _write(tmp_path: Path, **block: object) -> Path:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    bench = {
        "framework": "xdit",
        "run_cmd": f"{sys.executable} {script} --batch_size 1",
        "envs": {"WORKLOAD_TRACE": str(TRACE)},
        "run_kind": "diagnostic",
        "profiler": {"torch_profiler": {"enabled": True}, "targeted_trace": {**README_BLOCK, "sample_rate": 1.0}},
        **block,
    }
    path = tmp_path / "xdit.yaml"
    path.write_text(yaml.safe_dump({"benchmark": bench}))
    return path


def test_readme_block_loads_with_its_meaning(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({"benchmark": {"framework": "vllm", "model": "m", "run_kind": "diagnostic",
                                                  "profiler": {"targeted_trace": README_BLOCK}}}))  # fmt: skip
    tt = load_benchmark_config(path).profiler.targeted_trace
    assert tt.enabled and tt.sample_rate == 0.1 and tt.targets[0].name_patterns == ["*gemm*"]


def test_offline_diagnostic_traces_become_targeted_evidence(tmp_path: Path, run_magpie) -> None:
    done = run_magpie(["benchmark", "-b", str(_write(tmp_path)), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "out").glob("*/benchmark_report.json")
    report = json.loads(path.read_text())
    assert report["raw_result"] is None  # a diagnostic run measures nothing (AMD Magpie's profiled pass)
    events = json.loads(gzip.decompress(TRACE.read_bytes()))["traceEvents"]
    gemm = [e for e in events if e.get("cat") == "kernel" and fnmatch.fnmatchcase(e.get("name", ""), "*gemm*")]
    tt = report["targeted_trace"]
    assert tt["valid"] and tt["events"]["by_target"] == {"cublas.gemm": len(gemm)}
    assert Path(tt["manifest"]) == path.parent / "targeted_trace" / "manifest.json"
    assert json.loads(Path(tt["summary"]).read_text())["coverage"]["written"] == len(gemm)
    assert report["diagnostic"]["targeted_trace"] == tt["manifest"] and report["gap_analysis"]["top_kernels"]


def test_measurement_run_refuses_targeted_trace(tmp_path: Path, run_magpie) -> None:
    done = run_magpie(["benchmark", "-b", str(_write(tmp_path, run_kind="measurement")), "-o", str(tmp_path / "o")])
    assert done.returncode == 2 and "xdit.yaml" in done.stderr and "targeted_trace is diagnostic" in done.stderr
