"""CUDA C++ names the kernel-name parsers used to drop (family unknown) or misread, from a B200 SGLang run and
the issue's examples: every one gets a family and the right function; trtllm-gen cubins are prebuilt."""

from __future__ import annotations

import pytest

from magpie_core.kernel_names import parse_kernel_name

KP = "moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 2, true>"


@pytest.mark.parametrize(
    ("name", "family", "kind", "function"),
    [
        (
            f"void moe::dev::finalize::finalizeKernelVecLoad<{KP} >({KP})",
            "tensorrt_llm",
            "cuda_cpp",
            "finalizeKernelVecLoad",
        ),
        (
            "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
            "__nv_bfloat16, 32, true, false, false, false, std::integral_constant<bool, false> >(int, int, int, int, "
            "__nv_bfloat16 const*, float const*, void*, unsigned int*, flashinfer::QuantizationSFLayout)",
            "tensorrt_llm",
            "cuda_cpp",
            "quantize_with_block_size",
        ),
        (
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, float, int, int)",
            "vllm",
            "cuda_cpp",
            "fused_add_rms_norm_kernel",
        ),
        (
            "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_Ab32_Bb32_Cb32_t128x16x256u2_s6_et128x16_m256x16x32_c2x1x1_rM_TN_transOut_"
            "schedS_biasFp32M_bN_tma_ldgstsSf_rgTma_clmp_swiGlu_dynB_sm100f",
            "trtllm_gen",
            "prebuilt_cubin",
            "bmm",
        ),
        (
            "fmhaSm100fKernel_QkvBfloat16OBfloat16H64PagedKvCausalP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAbForGen",
            "trtllm_gen",
            "prebuilt_cubin",
            "fmha",
        ),
        (
            "void (anonymous namespace)::fused_rope_kernel<true, 64l, true, __nv_bfloat16, long, 8u>"
            "((anonymous namespace)::FusedRopeParams)",
            "cuda_cpp",
            "cuda_cpp",
            "fused_rope_kernel",
        ),
        (
            "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<"
            "(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, false, false>"
            "(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
            "flashinfer",
            "flashinfer",
            "allreduce_fusion_kernel_oneshot_lamport",
        ),
    ],
)
def test_names(name: str, family: str, kind: str, function: str) -> None:
    parsed = parse_kernel_name(name, {"platform": "cuda"})
    assert (parsed.family, parsed.kind, parsed.function) == (family, kind, function)
    assert parsed.confidence > 0


def test_a_bmm_without_cubin_target_is_not_prebuilt() -> None:
    assert parse_kernel_name("bmm_kernel_generic").family != "trtllm_gen"
