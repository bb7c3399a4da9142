"""The core's demangled C++ name parser (magpie_trace.cxx_names): return types, nested namespaces,
template arguments with function pointers, enum casts and comparisons, ``(anonymous namespace)``, lambdas,
parameter lists with qualified types, and mangled symbols (demangled first; leading names when no library can)."""

from __future__ import annotations

import pytest
from magpie_trace.cxx_names import find_component, parse_cxx_name, parse_symbol
from magpie_trace.kernel_names import outer_function

QUANT = (
    "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
    "__nv_bfloat16, 32, true, false, false, false, std::integral_constant<bool, false> >(int, int, int, int, "
    "__nv_bfloat16 const*, float const*, void*, unsigned int*, flashinfer::QuantizationSFLayout)"
)
ENABLE_IF = (
    "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
    "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, float, int, int)"
)


@pytest.mark.parametrize(
    ("name", "namespace", "function", "arity", "params"),
    [
        (QUANT, "tensorrt_llm::kernels", "quantize_with_block_size", 8, 9),
        (ENABLE_IF, "vllm", "fused_add_rms_norm_kernel", 2, 6),
        (ENABLE_IF.replace("(((8)>(0)))", "(8)>(0)"), "vllm", "fused_add_rms_norm_kernel", 2, 6),
        (
            "void sgl_hip::activation::act_and_mul_kernel<float, &(float silu<float>(float const&))>"
            "(float*, float const*, int)",
            "sgl_hip::activation",
            "act_and_mul_kernel",
            2,
            3,
        ),
        (
            "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::P)",
            "(anonymous namespace)",
            "store_kvcache",
            4,
            1,
        ),
        (
            "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
            "cutlass::bfloat16_t, 2, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
            "cutlass::bfloat16_t, 2, true>)",
            "moe::dev::finalize",
            "finalizeKernelVecLoad",
            1,
            1,
        ),
        ("void k<void (*)(int), 3>(int)", "", "k", 2, 1),
        ("unsigned int ns::f(std::array<char*, 2ul>)", "ns", "f", None, 1),
        (
            "at::native::f(int)::{lambda(int)#1}::operator()(int) const",
            "at::native::f::{lambda(int)#1}",
            "operator()",
            None,
            1,
        ),
    ],
)
def test_demangled_names(name: str, namespace: str, function: str, arity: int | None, params: int) -> None:
    parsed = parse_cxx_name(name)
    assert parsed is not None
    assert (parsed.namespace, parsed.function) == (namespace, function)
    assert (None if parsed.template_args is None else len(parsed.template_args)) == arity
    assert parsed.params is not None and len(parsed.params) == params
    if function != "operator()":
        assert outer_function(name) == (namespace, function)


def test_the_issue_misparse_is_gone() -> None:
    """The last parameter's type (flashinfer::QuantizationSFLayout) is not the function."""
    assert outer_function(QUANT)[1] == "quantize_with_block_size"


def test_component_inside_template_arguments() -> None:
    name = "void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::P<int, 3>, ck_tile::E<float> > >(int)"
    scope, comp = find_component(parse_cxx_name(name), "Rmsnorm2dFwd")
    assert scope == ("ck_tile",) and comp.template_args == ("ck_tile::P<int, 3>", "ck_tile::E<float>")


def test_mangled_symbols() -> None:
    aiter = parse_symbol(
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
    )
    assert aiter is not None and aiter.exact and aiter.namespace == "aiter" and len(aiter.template_args) == 8
    # C++20 constrained parameter (Tn): no demangler reads it; the leading names still give scope and function
    sgl = parse_symbol(
        "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i"
    )
    assert (
        sgl is not None
        and not sgl.exact
        and (sgl.namespace, sgl.function) == ("sgl_hip::activation", "act_and_mul_kernel")
    )


@pytest.mark.parametrize("text", ["", "Memcpy DtoH (Device -> Host)", "()", "::"])
def test_not_names(text: str) -> None:
    assert parse_cxx_name(text) is None


def test_hostile_names_do_not_raise() -> None:
    deep = "void f<" * 2000 + "int" + ">" * 2000 + "(int)"
    parsed = parse_cxx_name(deep)
    assert parsed is not None and parsed.function == "f"
    assert find_component(parsed, "nowhere") is None
    for text in ("<<<<", ">>>>", "a<b(c>d)", "((((", "operator<", "x::", "{lambda()#1}"):
        parse_cxx_name(text)  # any answer, but no exception
