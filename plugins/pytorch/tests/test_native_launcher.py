"""The ctypes launcher: prototypes read from the source, and clear errors before anything launches."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import torch
from magpie_kernels_pytorch.native import Launcher, NativeError, NativeKernel, find_launcher, parse_launcher

from tests.conftest import ROOT


def test_prototypes_are_read_from_the_source():
    params, status = parse_launcher(
        'extern "C" void go(const float* __restrict__ a, half *b, int64_t n, float alpha, double beta,\n'
        "                   unsigned int flags, hipStream_t stream) {}",
        "go",
    )
    assert [p.kind for p in params] == ["ptr", "ptr", "i64", "f32", "f64", "u32", "stream"] and status is False
    with pytest.raises(NativeError, match="has type 'float2'"):
        parse_launcher('extern "C" int go(float2 v) { return 0; }', "go")
    path, params, status = find_launcher([ROOT / "examples" / "cuda_matmul" / "matmul_tiled.cu"], "launch_matmul_tiled")
    assert path.name == "matmul_tiled.cu" and status is True and params[-1].kind == "stream"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_arguments_are_checked_before_the_launch(tmp_path):
    source = ROOT / "examples" / "cuda_matmul" / "matmul_naive.cu"
    lib = tmp_path / "libnaive.so"
    subprocess.run(
        ["nvcc", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(source)], check=True, timeout=300
    )
    _, params, status = find_launcher([source], "launch_matmul_naive")
    kernel = NativeKernel(Launcher("launch_matmul_naive", str(lib), params, status))  # loads without a GPU
    a = torch.zeros(4, 4)
    with pytest.raises(NativeError, match=r"takes 4 arguments \(streams are filled in\), got 3"):
        kernel(a, a, a)
    with pytest.raises(NativeError, match="argument 'a' is a CPU tensor"):
        kernel(a, a, a, 4)
    with pytest.raises(NativeError, match="has no symbol 'missing'"):
        NativeKernel(Launcher("missing", str(lib), params, status))
