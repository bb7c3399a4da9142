"""AMD Magpie's latency protocol: a testcase's MAGPIE_LATENCY_JSON lines become the kernel's timing.

End to end with a real testcase process; the CUDA and HIP examples are compiled for real (nvcc,
hipcc) when the compilers are present. The CUDA example ran on an H200 (docs/benchmarks/compat_gpu.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from magpie_testcase_latency.protocol import parse_markers, performance_from_output

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "latency_protocol"


def _line(samples: list[float], **extra: object) -> str:
    return "MAGPIE_LATENCY_JSON: " + json.dumps({"mode": "cuda_graph", "stats": {"samples_ms": samples}, **extra})


def test_markers_parsed_malformed_skipped() -> None:
    out = "\n".join(
        ["hello", _line([0.1]), "MAGPIE_LATENCY_JSON: {not json", "x MAGPIE_LATENCY_JSON: {}", _line([0.2])]
    )
    assert [p["stats"]["samples_ms"] for p in parse_markers(out)] == [[0.1], [0.2]]


def test_samples_become_microsecond_statistics() -> None:
    perf = performance_from_output(_line([0.050, 0.052, 0.051]), {"method": "cuda_graph"})
    assert perf is not None and perf.status.value == "passed" and perf.timer == "magpie_latency_json"
    assert perf.timing.median == pytest.approx(51.0) and perf.timing.samples == 3


def test_kernel_filter_and_primary_metric() -> None:
    out = "\n".join(
        [
            _line([1.0], kernel_name="setup_fill"),
            _line([0.5], kernel_name="gemm_main", kernel_stats={"samples_ms": [0.4, 0.4]}),
        ]
    )
    wall = performance_from_output(out, {"kernel_filter": "gemm"})
    kernel = performance_from_output(out, {"kernel_filter": "gemm", "primary_metric": "kernel_median_ms"})
    assert wall.timing.median == pytest.approx(500.0) and kernel.timing.median == pytest.approx(400.0)
    missing = performance_from_output(out, {"kernel_filter": "^nothing$"})
    assert missing.status.value == "failed" and "kernel_filter" in missing.message
    fallback = performance_from_output(_line([0.3]), {"primary_metric": "kernel_median_ms"})
    assert fallback.timing.median == pytest.approx(300.0) and any("no kernel_stats" in n for n in fallback.notes)


def test_switched_off_or_absent() -> None:
    assert performance_from_output(_line([0.1]), {"enabled": False}) is None
    assert performance_from_output(_line([0.1]), {"method": "none"}) is None
    assert performance_from_output("no marker here", {}) is None
    other = performance_from_output(_line([0.1]), {"method": "kernel_trace"})
    assert any("reads the testcase's own" in n for n in other.notes)


TESTCASE = """
import json, os, sys
assert os.environ["MAGPIE_BENCH_N_RETRIES"] == "4" and os.environ["MAGPIE_BENCH_REP_MS"] == "7.0"
import helper_mod  # found through latency.pythonpath
samples = [helper_mod.BASE + 0.001 * i for i in range(4)]
print("MAGPIE_LATENCY_JSON: " + json.dumps({"mode": "hip_graph", "stats": {"samples_ms": samples}, "kernel_name": "k"}))
"""


def test_analyze_reads_the_testcase_line_without_compiling(tmp_path: Path, run_magpie) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper_mod.py").write_text("BASE = 0.02\n")
    (tmp_path / "bench.py").write_text(TESTCASE)
    (tmp_path / "k.hip").write_text("// never compiled: enable_default_compile is false\n")
    config = {
        "kernel": {
            "id": "k",
            "type": "hip",
            "source_files": ["k.hip"],
            "testcase_command": [sys.executable, "bench.py"],
        },
        "compiling": {"enable_default_compile": False},
        "latency": {"method": "cuda_graph", "rep_ms": 7, "n_retries": 4, "pythonpath": [str(tmp_path / "lib")]},
    }
    path = tmp_path / "k.yaml"
    path.write_text(json.dumps(config))
    done = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(path), "--no-perf", "--json"])
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert result["compile"]["status"] == "skipped" and "enable_default_compile" in result["compile"]["message"]
    assert result["correctness"]["status"] == "passed"
    perf = result["performance"]
    assert perf["timer"] == "magpie_latency_json" and perf["timing"]["samples"] == 4
    assert perf["timing"]["median"] == pytest.approx(21.5)


def _compile(argv: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        argv, cwd=EXAMPLE, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_example_compiles(tmp_path: Path) -> None:
    _compile(["nvcc", "-O2", "-std=c++17", "-Iinclude", "vector_scale.cu", "-o", str(tmp_path / "vs")])
    assert (tmp_path / "vs").exists()


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed")
def test_hip_example_compiles(tmp_path: Path) -> None:
    argv = ["hipcc", "-O2", "-std=c++17", "--offload-arch=gfx90a", "-Iinclude", "vector_scale.hip"]
    _compile([*argv, "-o", str(tmp_path / "vs")], {"HIP_PLATFORM": "amd"})
    assert (tmp_path / "vs").exists()
