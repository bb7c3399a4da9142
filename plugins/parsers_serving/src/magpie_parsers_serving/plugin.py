"""Kernel-name parsers for serving engines' own kernels: vLLM (csrc/, Triton ops) and SGLang (sgl-kernel)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magpie_trace.demangle import demangle, is_mangled, leading_names
from magpie_trace.kernel_names import category_from_words, dtype_in, outer_function, strip_code_object_suffix

from magpie_core import hookimpl
from magpie_core.interfaces import KernelNameParser

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ParsedKernelName

#: vLLM kernels whose outer name has no vllm:: namespace (ROCm custom paged attention, skinny GEMMs are AMD's)
VLLM_BARE = {
    "paged_attention_ll4mi_QKV_mfma16_kernel": "attention",
    "paged_attention_ll4mi_QKV_mfma4_kernel": "attention",
    "paged_attention_ll4mi_reduce_kernel": "attention",
    "paged_attention_v1_kernel": "attention",
    "paged_attention_v2_kernel": "attention",
    "paged_attention_v2_reduce_kernel": "attention",
    "cross_device_reduce_1stage": "communication",
    "cross_device_reduce_2stage": "communication",
}
#: vLLM Triton kernels (vllm/attention/ops, vllm/model_executor/layers)
VLLM_TRITON = {
    "kernel_unified_attention_2d": "attention",
    "kernel_unified_attention_3d": "attention",
    "reduce_segments": "attention",
    "fused_moe_kernel": "moe",
    "fused_moe_kernel_gptq_awq": "moe",
    "_fwd_kernel": "attention",
    "_fwd_grouped_kernel_stage1": "attention",
    "_fwd_kernel_stage2": "attention",
    "chunked_prefill_paged_decode": "attention",
    "kernel_paged_attention_2d": "attention",
}
#: SGLang kernels without an sgl namespace (sgl-kernel and srt Triton helpers)
SGLANG_BARE = {
    "store_kvcache": "copy/memset",
    "resolve_future_token_ids_kernel": "other",
    "clamp_position_kernel": "other",
    "create_flashinfer_kv_indices_triton": "copy/memset",
    "write_req_to_token_pool_triton": "copy/memset",
    "compute_position_kernel": "other",
    "get_num_kv_splits_triton": "attention",
    "_decode_att_m_fwd": "attention",
    "_fwd_kernel_stage1": "attention",
    "fused_softcap_kernel": "elementwise",
}
_TRITON_NAMES = {
    "create_flashinfer_kv_indices_triton",
    "write_req_to_token_pool_triton",
    "get_num_kv_splits_triton",
    "_decode_att_m_fwd",
    "_fwd_kernel_stage1",
    "fused_softcap_kernel",
}


def _text(name: str) -> tuple[str, float]:
    base = strip_code_object_suffix(name)
    if not is_mangled(base):
        return base, 1.0
    text = demangle(base)
    if text is not None:
        return text, 1.0
    parts = leading_names(base)
    return ("::".join(parts), 0.8) if parts else (base, 0.3)


def _make(name: str, family: str, kind: str, category: str, **kw: Any) -> ParsedKernelName:
    from magpie_core.reports import ParsedKernelName

    return ParsedKernelName(name=name, family=family, kind=kind, category=category, **kw)


class VllmParser(KernelNameParser):
    name = "vllm"
    description = "vLLM custom kernels (vllm:: CUDA/HIP kernels, ROCm paged attention, vLLM Triton ops)"
    priority = 40

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = _text(name)
        ns, fn = outer_function(text)
        if ns == "vllm" or ns.startswith("vllm::"):
            return _make(
                name,
                "vllm",
                "cuda_cpp",
                category_from_words(f"{ns}::{fn}"),
                function=fn,
                dtype=dtype_in(text),
                config={"namespace": ns},
                confidence=conf,
            )
        if fn in VLLM_BARE and (ns == "" or ns == "(anonymous namespace)"):
            return _make(
                name,
                "vllm",
                "hip_cpp" if "__hip" in text else "cuda_cpp",
                VLLM_BARE[fn],
                function=fn,
                dtype=dtype_in(text),
                confidence=0.9 * conf if "vllm::" in text else 0.8 * conf,
            )
        base = strip_code_object_suffix(name)
        if base in VLLM_TRITON:
            return _make(name, "vllm", "triton_jit", VLLM_TRITON[base], function=base, confidence=0.85)
        return None


class SglangParser(KernelNameParser):
    name = "sglang"
    description = "SGLang custom kernels (sgl_hip::, sglang::, sgl-kernel and srt Triton helpers)"
    priority = 41

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = _text(name)
        ns, fn = outer_function(text)
        root = ns.split("::")[0]
        if root in ("sgl_hip", "sglang", "sgl_kernel", "sgl", "flashinfer_sgl"):
            return _make(
                name,
                "sglang",
                "hip_cpp" if root == "sgl_hip" else "cuda_cpp",
                category_from_words(fn),
                function=fn,
                dtype=dtype_in(text) or dtype_in(strip_code_object_suffix(name)),
                config={"namespace": ns},
                confidence=conf,
            )
        base = strip_code_object_suffix(name)
        key = fn if fn in SGLANG_BARE else base
        if key in SGLANG_BARE and ns in ("", "(anonymous namespace)"):
            kind = "triton_jit" if key in _TRITON_NAMES else "cuda_cpp"
            return _make(
                name, "sglang", kind, SGLANG_BARE[key], function=key, dtype=dtype_in(text), confidence=0.8 * conf
            )
        if fn == "rotary_embedding_kernel" and ns == "":
            # sgl-kernel's copy of vLLM's rotary kernel is the one without a namespace
            return _make(
                name,
                "sglang",
                "cuda_cpp",
                "elementwise",
                function=fn,
                dtype=dtype_in(text),
                config={"note": "un-namespaced copy (vLLM's is vllm::rotary_embedding_kernel)"},
                confidence=0.6,
            )
        return None


PARSERS = [VllmParser(), SglangParser()]


@hookimpl
def magpie_register_kernel_name_parsers(register: Callable[[Any], None]) -> None:
    for parser in PARSERS:
        register(parser)
