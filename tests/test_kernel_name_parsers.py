"""Kernel-name parsers: every distinct kernel name of the real traces, plus families absent from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magpie_core.kernel_names import CATEGORIES, parse_kernel_name
from magpie_core.plugins import get_plugin_manager

TABLE = json.loads((Path(__file__).parent / "data" / "kernel_name_table.json").read_text())


def test_table_is_large_and_real() -> None:
    assert len(TABLE) >= 100
    assert len({row["family"] for row in TABLE}) >= 10


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r["name"][:60])
def test_real_kernel_names(row: dict) -> None:
    parsed = parse_kernel_name(row["name"], {"platform": row["platform"]})
    got = {k: getattr(parsed, k) for k in ("family", "kind", "category", "function", "dtype", "tile")}
    assert got == {k: row[k] for k in got}
    assert parsed.category in CATEGORIES and 0 < parsed.confidence <= 1


# Families the four traces do not contain; names spelled as those libraries emit them.
EXTRA = [
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_NNT", None, "cublaslt", "gemm"),
    (
        "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4",
        None,
        "cudnn",
        "gemm",
    ),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "cuda", "nccl", "communication"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "rocm", "rccl", "communication"),
    ("__amd_rocclr_copyBuffer.kd", "rocm", "rocclr", "copy/memset"),
    ("__amd_rocclr_fillBufferAligned", "rocm", "rocclr", "copy/memset"),
    ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<true, 128u>(...)", None, "flashinfer", "attention"),
    ("void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u>(float*, int*)", None, "flashinfer", "sampling"),
    ("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*)", None, "flashinfer", "norm"),
    (
        "void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>(int, int, int, __hip_bfloat16 const*)",
        "rocm",
        "hip_cpp",
        "gemm",
    ),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<int>, true>(int)", "rocm", "ck", "gemm"),
    ("_attn_fwd.kd", "rocm", "triton", "attention"),
    ("triton_red_fused__softmax_3", None, "inductor", "reduce"),
    ("triton_per_fused_native_layer_norm_0", None, "inductor", "norm"),
    ("triton_tem_fused_mm_0", None, "inductor", "gemm"),
    ("void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, int>(float const*, bool const*)", None, "vllm", "moe"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)", None, "vllm", "communication"),
]


@pytest.mark.parametrize("name,platform,family,category", EXTRA, ids=lambda x: str(x)[:40])
def test_other_families(name: str, platform: str | None, family: str, category: str) -> None:
    parsed = parse_kernel_name(name, {"platform": platform} if platform else None)
    assert (parsed.family, parsed.category) == (family, category)


def test_triton_confidence_uses_launch_context() -> None:
    bare = parse_kernel_name("_my_fused_kernel")
    ctx = parse_kernel_name(
        "_my_fused_kernel", {"launch_api": "cuLaunchKernel", "python_frames": ["triton/runtime/jit.py(580): run"]}
    )
    assert bare.family == ctx.family == "triton" and ctx.confidence > bare.confidence


def test_unknown_name_is_honest() -> None:
    parsed = parse_kernel_name("Memcpy DtoH (Device -> Pinned)")
    assert parsed.family == "unknown" and parsed.confidence == 0


def test_parsers_are_plugins_in_four_distributions() -> None:
    manager = get_plugin_manager()
    dists = {manager.owner("kernel_name_parser", n).distribution for n in manager.components("kernel_name_parser")}
    assert {"magpie-parsers-nvidia", "magpie-parsers-amd", "magpie-parsers-pytorch", "magpie-parsers-serving"} <= dists
