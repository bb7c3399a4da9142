"""The HIP backend on a machine without GPUs: real hipcc compiles, resources, compiler errors with file and line,
and the compiled-only state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

needs_hipcc = pytest.mark.skipif(
    shutil.which("hipcc") is None, reason="hipcc not on PATH: run scripts/setup_hipcc.sh (Debian's hipcc, ROCm 5.2)"
)


def _report(result) -> dict:
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout)


@needs_hipcc
def test_hip_example_compiles_for_gfx90a_then_stops_without_an_amd_gpu(run_magpie, tmp_path):
    result = run_magpie(["-o", str(tmp_path), "analyze", "-k", "examples/hip_vector_add/analyze.yaml", "--json"])
    (r,) = _report(result)["results"]
    compiled = r["compile"]
    assert compiled["status"] == "passed", compiled["message"]
    assert "--offload-arch=gfx90a" in compiled["command"]
    assert Path(compiled["artifacts"][0]).name == "vector_add"
    ((name, info),) = compiled["resources"]["kernels"].items()
    assert name.startswith("vector_add(") and info["vgprs"] > 0 and info["shared_memory_bytes"] == 0
    if shutil.which("rocminfo") is None and shutil.which("rocm-smi") is None and shutil.which("amd-smi") is None:
        assert r["compiling_state"] == "SUCCESS"
        assert r["correctness"] == {
            **r["correctness"],
            "status": "not_run",
            "message": "compiled; no AMD GPU to run on",
        }
        assert r["performance"]["status"] == "not_run"
        assert r["errors"] == [] and r["no_device"] is True
        assert result.returncode == 0  # compiled-only is neither a failure nor a pass
    table = run_magpie(["-o", str(tmp_path), "analyze", "-k", "examples/hip_vector_add/analyze.yaml"])
    assert "compiled; no AMD GPU to run on" in table.stdout


@needs_hipcc
def test_arch_the_installed_rocm_cannot_target_names_the_rocm_version(run_magpie, tmp_path):
    src = ROOT / "examples" / "hip_vector_add" / "vector_add.hip"
    (tmp_path / "vector_add.hip").write_text(src.read_text())
    config = tmp_path / "a.yaml"
    config.write_text(
        "kernel:\n  id: va\n  type: hip\n  source_files: [vector_add.hip]\n"
        "  testcase_command: $MAGPIE_BUILD_DIR/va\n  options: {offload_arch: gfx942}\n"
    )
    result = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"])
    compiled = _report(result)["results"][0]["compile"]
    if compiled["status"] == "passed":
        pytest.skip("this hipcc supports gfx942 (ROCm 6 or later)")
    assert compiled["status"] == "failed"
    assert "cannot compile for gfx942" in compiled["message"] and "ROCm 5." in compiled["message"]
    assert "need ROCm 6 or later" in compiled["message"]


@needs_hipcc
def test_hip_errors_name_file_and_line(run_magpie, tmp_path):
    (tmp_path / "bad.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = y;\n}\n")
    config = tmp_path / "b.yaml"
    config.write_text(
        "kernel:\n  id: bad\n  type: hip\n  source_files: [bad.hip]\n  testcase_command: $MAGPIE_BUILD_DIR/bad\n"
        "  options: {offload_arch: gfx90a}\n"
    )
    compiled = _report(run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"]))["results"][
        0
    ]["compile"]
    assert compiled["status"] == "failed"
    assert "bad.hip:3: error: use of undeclared identifier 'y'" in compiled["message"]
