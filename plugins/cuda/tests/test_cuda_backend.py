"""The CUDA backend on a machine without GPUs: real nvcc compiles, ptxas resources, compiler errors with file and
line, and the compiled-only state."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH (install the CUDA toolkit)")


def _report(result) -> dict:
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout)


def _by_id(report: dict) -> dict:
    results = report["results"]["kernel_results"] if "ranking" in report else report["results"]
    return {r["kernel_id"]: r for r in results}


@needs_nvcc
def test_cuda_matmul_pair_compiles_with_ptxas_resources(run_magpie, tmp_path):
    result = run_magpie(
        ["-o", str(tmp_path), "compare", "-k", "examples/cuda_matmul/compare.yaml", "--json"],
        env={"MAGPIE_CUDA_ARCH": "sm_90"},
    )
    kernels = _by_id(_report(result))
    for kid, launcher in (("naive", "launch_matmul_naive"), ("tiled", "launch_matmul_tiled")):
        compiled = kernels[kid]["compile"]
        assert compiled["status"] == "passed", compiled["message"]
        assert "-arch=sm_90" in compiled["command"] and "-Xptxas" in compiled["command"]
        assert compiled["resources"]["arch"] == "sm_90"
        ((name, info),) = compiled["resources"]["kernels"].items()
        assert name.startswith(f"matmul_{kid}_kernel(") and info["registers"] > 0 and info["spills"] is False
        launcher_json = json.loads(Path(compiled["artifacts"][1]).read_text())
        assert launcher_json["function"] == launcher and launcher_json["returns_status"] is True
        assert [p["kind"] for p in launcher_json["params"]] == ["ptr", "ptr", "ptr", "i32", "stream"]
    tiled = next(iter(kernels["tiled"]["compile"]["resources"]["kernels"].values()))
    assert tiled["shared_memory_bytes"] == 32 * 32 * 4 + 32 * 33 * 4 and tiled["barriers"] == 1
    if shutil.which("nvidia-smi") is None:
        for r in kernels.values():
            assert r["correctness"]["status"] == "not_run"
            assert r["correctness"]["message"] == "compiled; no NVIDIA GPU to run on"
            assert r["performance"]["status"] == "not_run"


def _write_kernel(tmp_path: Path, source: str, extra: str = "") -> Path:
    (tmp_path / "k.cu").write_text(textwrap.dedent(source))
    config = tmp_path / "k.yaml"
    config.write_text(f"kernel:\n  id: k\n  type: cuda\n  source_files: [k.cu]\n{extra}")
    return config


@needs_nvcc
def test_nvcc_errors_name_file_and_line(run_magpie, tmp_path):
    config = _write_kernel(
        tmp_path,
        """\
        #include <cuda_runtime.h>
        __global__ void k(float* x) {
            x[threadIdx.x] = not_declared;
        }
        """,
        "  testcase_command: $MAGPIE_BUILD_DIR/k\n",
    )
    result = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"])
    assert result.returncode == 1
    compiled = _report(result)["results"][0]["compile"]
    assert compiled["status"] == "failed"
    assert compiled["message"].endswith('k.cu:3: error: identifier "not_declared" is undefined'), compiled["message"]


@needs_nvcc
def test_own_compile_command_is_still_read_for_resources_and_errors(run_magpie, tmp_path):
    config = _write_kernel(
        tmp_path,
        "__global__ void k(float* x) { __shared__ float s[64]; s[threadIdx.x] = 1; x[0] = s[1]; }\n",
        "  compile_command: nvcc -arch=sm_90 -Xptxas -v -c -o $MAGPIE_BUILD_DIR/k.o k.cu\n",
    )
    result = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"])
    compiled = _report(result)["results"][0]["compile"]
    assert compiled["status"] == "passed", compiled
    assert compiled["command"][-2].endswith("/k/k.o")  # $MAGPIE_BUILD_DIR expanded without a shell
    (info,) = compiled["resources"]["kernels"].values()
    assert info["shared_memory_bytes"] == 256


@needs_nvcc
def test_entry_must_be_an_extern_c_launcher(run_magpie, tmp_path):
    config = _write_kernel(
        tmp_path,
        "__global__ void k(float* x) {}\nvoid launch(float* x) { k<<<1, 1>>>(x); }\n",
        "  entry: launch\n  get_inputs: inputs.py:get_inputs\n",
    )
    result = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"])
    compiled = _report(result)["results"][0]["compile"]
    assert compiled["status"] == "failed"
    assert 'launch is not declared extern "C"' in compiled["message"]
