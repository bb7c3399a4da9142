"""The kernel-name table shared by the four parser distributions' tests (each checks the families it owns).

``tests/data/kernel_name_table.json``: every distinct kernel name of the real traces with the expected parse;
:data:`EXTRA`: families absent from those traces. A name is parsed through the registry with every installed
parser (:func:`magpie_core.kernel_names.parse_kernel_name`), as a trace analysis parses it.
"""

from __future__ import annotations

import json
from typing import Any

from magpie_core.kernel_names import CATEGORIES, parse_kernel_name
from tests.conftest import DATA

__all__ = ["EXTRA", "FAMILIES", "TABLE", "check_extra", "check_row", "extra_of", "rows_of"]

TABLE: list[dict[str, Any]] = json.loads((DATA / "kernel_name_table.json").read_text())

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

#: the parser distribution that owns each family of the table and of :data:`EXTRA`
FAMILIES: dict[str, set[str]] = {
    "magpie-parsers-nvidia": {"cublas", "cublaslt", "cudnn", "cutlass", "flash_attention", "flashinfer", "nccl"},
    "magpie-parsers-amd": {
        "aiter",
        "ck",
        "ck_tile",
        "hip_cpp",
        "hipblaslt",
        "miopen",
        "rccl",
        "rocclr",
        "rocprim",
        "tensile",
    },
    "magpie-parsers-pytorch": {"aten", "inductor", "triton"},
    "magpie-parsers-serving": {"sglang", "vllm"},
}


def rows_of(distribution: str) -> list[dict[str, Any]]:
    """The table's rows whose family ``distribution`` owns."""
    return [row for row in TABLE if row["family"] in FAMILIES[distribution]]


def extra_of(distribution: str) -> list[tuple[str, str | None, str, str]]:
    """The :data:`EXTRA` names whose family ``distribution`` owns."""
    return [case for case in EXTRA if case[2] in FAMILIES[distribution]]


def check_row(row: dict[str, Any]) -> None:
    parsed = parse_kernel_name(row["name"], {"platform": row["platform"]})
    got = {k: getattr(parsed, k) for k in ("family", "kind", "category", "function", "dtype", "tile")}
    assert got == {k: row[k] for k in got}
    assert parsed.category in CATEGORIES and 0 < parsed.confidence <= 1


def check_extra(name: str, platform: str | None, family: str, category: str) -> None:
    parsed = parse_kernel_name(name, {"platform": platform} if platform else None)
    assert (parsed.family, parsed.category) == (family, category)
