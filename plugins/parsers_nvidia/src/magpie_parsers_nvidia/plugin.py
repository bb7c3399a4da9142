"""Kernel-name parsers for NVIDIA libraries (CUDA traces carry already-demangled names)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magpie_trace.kernel_names import category_from_words, dtype_in, outer_function

from magpie_core import hookimpl
from magpie_core.interfaces import KernelNameParser

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ParsedKernelName

_TILE3 = re.compile(r"(\d+x\d+x\d+)")
_XMMA = re.compile(r"^(sm\d+)_xmma_(\w+?)_((?:[a-z]+\d+)+)_((?:[a-z]+\d+)+)_")
_CUTLASS_INNER = re.compile(r"cutlass_(\d+)_(\w+?)_(\w*?)(\d+x\d+)_(\d+x\d+)_([nt]{2})_align(\d+)")
_NCCL = re.compile(r"^nccl(?:Dev)?Kernel_(\w+)")


def _result(name: str, family: str, kind: str, category: str, **kw: Any) -> ParsedKernelName:
    from magpie_core.reports import ParsedKernelName

    return ParsedKernelName(name=name, family=family, kind=kind, category=category, **kw)


class CudnnParser(KernelNameParser):
    name = "cudnn"
    description = "cuDNN convolution / fused kernels (cudnn::, xmma fprop/dgrad/wgrad)"
    priority = 15

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        low = name.lower()
        conv = re.search(r"xmma_(fprop|dgrad|wgrad)_(implicit_gemm|\w+?)_", low)
        if "cudnn" not in low and conv is None:
            return None
        func = (
            f"{conv.group(1)}_{conv.group(2)}"
            if conv
            else (re.search(r"cudnn::(?:\w+::)*(\w+)", name) or [None, name])[1]
        )
        tile = _TILE3.search(name)
        return _result(
            name,
            "cudnn",
            "cudnn",
            "gemm" if conv or "gemm" in low else category_from_words(low),
            function=func,
            dtype=dtype_in(name),
            tile=tile.group(1) if tile else None,
            confidence=0.9,
        )


class CublasParser(KernelNameParser):
    name = "cublas"
    description = "cuBLAS / cuBLASLt GEMM kernels (sm90_xmma_gemm_*_cublas, nvjet_*, gemv, splitK)"
    priority = 20

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        if name.startswith("nvjet_"):
            parts = name.split("_")
            tiles = [p for p in parts if re.fullmatch(r"\d+x\d+", p)]
            layout = parts[-1] if re.fullmatch(r"[NT]{2,3}", parts[-1]) else None
            return _result(
                name,
                "cublaslt",
                "library_gemm",
                "gemm",
                function="nvjet",
                tile=tiles[0] if tiles else None,
                config={"variant": parts[1] if len(parts) > 1 else "", "layout": layout, "tiles": tiles},
                confidence=0.9,
            )
        m = _XMMA.match(name)
        if m and ("cublas" in name or "gemm" in m.group(2)):
            tile = re.search(r"tilesize(\d+x\d+x\d+)", name)
            layout = re.search(r"_(tn|nt|nn|tt)_", name)
            return _result(
                name,
                "cublas",
                "library_gemm",
                "gemm",
                function=f"xmma_{m.group(2)}",
                dtype=dtype_in(m.group(3)),
                tile=tile.group(1) if tile else None,
                config={
                    "arch": m.group(1),
                    "types": f"{m.group(3)}_{m.group(4)}",
                    "layout": layout.group(1) if layout else None,
                },
                confidence=1.0,
            )
        low = name.lower()
        if "cublas" in low or re.match(
            r"(void )?(gemv2[NT]_kernel|gemvx|gemv_kernel|splitKreduce_kernel|gemmSN_|gemmk1_)", name
        ):
            fn = re.search(r"(gemv\w*|splitKreduce_kernel|gemmSN\w*|gemmk1\w*|\w*gemm\w*)", name)
            return _result(
                name,
                "cublas",
                "library_gemm",
                "gemm",
                function=fn.group(1) if fn else None,
                dtype=dtype_in(name),
                confidence=0.8,
            )
        return None


class CutlassParser(KernelNameParser):
    name = "cutlass"
    description = "CUTLASS kernels (cutlass::Kernel<cutlass_80_tensorop_...>, cutlass::device_kernel)"
    priority = 25

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        m = _CUTLASS_INNER.search(name)
        if m:
            op = m.group(3).rstrip("_")
            dtype = {"sgemm": "fp32", "hgemm": "fp16", "dgemm": "fp64"}.get(op.split("_")[-1]) or dtype_in(
                m.group(2) + "_" + op
            )
            return _result(
                name,
                "cutlass",
                "cutlass",
                category_from_words(op, "gemm"),
                function=f"{m.group(2)}_{op}",
                dtype=dtype,
                tile=f"{m.group(4)}_{m.group(5)}",
                config={"arch": f"sm{m.group(1)}", "layout": m.group(6), "align": int(m.group(7))},
                confidence=1.0,
            )
        if name.removeprefix("void ").startswith("cutlass::") or name.startswith("cutlass_"):
            inner = re.search(r"cutlass::(?:\w+::)*(\w+)<", name)
            return _result(
                name,
                "cutlass",
                "cutlass",
                category_from_words(name, "gemm"),
                function=inner.group(1) if inner else None,
                dtype=dtype_in(name),
                confidence=0.7,
            )
        return None


class FlashAttentionParser(KernelNameParser):
    name = "flash-attention"
    description = "flash-attention kernels (flash_fwd_kernel, pytorch_flash::, fmha)"
    priority = 10

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        ns, fn = outer_function(name)
        if ns.split("::")[0] not in ("", "flash", "pytorch_flash", "flash_attn"):
            return None  # another library's kernel that merely takes a flash-attention type
        m = re.fullmatch(r"(flash_(?:fwd|bwd)\w*?_kernel|flash_attn\w*|fmha_\w+)", fn)
        if m is None:
            return None
        traits = re.search(r"Flash_(?:fwd|bwd)_kernel_traits<(\d+), (\d+), (\d+), (\d+)", name)
        config: dict[str, Any] = {}
        tile = None
        if traits:
            hd, bm, bn, warps = (int(x) for x in traits.groups())
            config = {"head_dim": hd, "block_m": bm, "block_n": bn, "warps": warps}
            tile = f"{bm}x{bn}"
        if "pytorch_flash::" in name:
            config["vendor"] = "pytorch (flash-attention v2 copy)"
        return _result(
            name,
            "flash_attention",
            "flash_attention",
            "attention",
            function=m.group(1),
            dtype=dtype_in(name),
            tile=tile,
            config=config,
            confidence=1.0 if traits else 0.8,
        )


class FlashInferParser(KernelNameParser):
    name = "flashinfer"
    description = "FlashInfer kernels (flashinfer:: attention, sampling, norm)"
    priority = 10

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        outer_ns, outer_fn = outer_function(name)
        m = re.fullmatch(r"flashinfer::((?:[\w() ]+::)*)(\w+)", f"{outer_ns}::{outer_fn}") if outer_ns else None
        if m is None:
            m2 = re.match(r"(?:void )?((?:Batch|Single)(?:Decode|Prefill)With\w+Kernel\w*)", name)
            if m2 is None:
                return None
            return _result(
                name,
                "flashinfer",
                "flashinfer",
                "attention",
                function=m2.group(1),
                dtype=dtype_in(name),
                confidence=0.8,
            )
        ns, func = m.group(1), m.group(2)
        if "sampling" in ns:
            cat = "sampling"
        elif "norm" in ns:
            cat = "norm"
        elif re.search(r"decode|prefill|attention|mla|pod|merge_state", func, re.I):
            cat = "attention"
        else:
            cat = category_from_words(func, "attention")
        return _result(
            name,
            "flashinfer",
            "flashinfer",
            cat,
            function=func,
            dtype=dtype_in(name),
            config={"namespace": "flashinfer::" + ns},
            confidence=1.0,
        )


class NcclParser(KernelNameParser):
    name = "nccl"
    description = "NCCL collectives (ncclKernel_/ncclDevKernel_<op>_<algo>_<proto>_<redop>_<type>)"
    priority = 30

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        if (context or {}).get("platform") == "rocm":
            return None  # RCCL: the AMD parsers own these names on ROCm traces
        return parse_nccl_name(name, "nccl", _result)


def parse_nccl_name(name: str, family: str, make: Callable[..., ParsedKernelName]) -> ParsedKernelName | None:
    base = name[5:] if name.startswith("void ") else name
    m = _NCCL.match(base)
    if m is None:
        return None
    parts = m.group(1).split("(")[0].split("_")
    op = parts[0]
    config: dict[str, Any] = {}
    for p in parts[1:]:
        if p in ("RING", "TREE", "COLLNET", "NVLS", "PAT", "COLLNETDIRECT", "COLLNETCHAIN", "NVLSTREE"):
            config["algorithm"] = p
        elif p in ("LL", "LL128", "SIMPLE"):
            config["protocol"] = p
        elif p in ("Sum", "Prod", "Min", "Max", "Avg", "PreMulSum", "SumPostDiv"):
            config["redop"] = p
    return make(
        name,
        family,
        family,
        "communication",
        function=op,
        dtype=dtype_in("_".join(parts[1:])),
        config=config,
        confidence=1.0,
    )


_TRTLLM_GEN = re.compile(r"^(?:(?:[Bb]mm|[Gg]emm|[Bb]atchedGemm)_\w+|fmhaSm\d+[af]?Kernel_\w+)_?(?:sm\d+[afu]?)?$")


class TrtllmGenParser(KernelNameParser):
    """trtllm-gen kernels: generated, compiled to cubins and shipped as binaries (flashinfer downloads them)."""

    name = "trtllm_gen"
    description = "trtllm-gen prebuilt cubins (bmm_*_sm100f, gemm_*_sm100f, fmhaSm100aKernel_*)"
    priority = 9

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        if not _TRTLLM_GEN.match(name):
            return None
        if name.startswith("fmha"):
            fn, cat = "fmha", "attention"
        elif not re.search(r"_sm\d+[afu]?$", name):
            return None  # bmm_/gemm_ names without the cubin's target suffix are someone else's
        else:
            fn, cat = name.split("_")[0].lower(), "moe" if "swiGlu" in name or "dynB" in name else "gemm"
        arch = re.search(r"[Ss]m(\d+[afu]?)", name)
        tile = re.search(r"_t(\d+x\d+x\d+)", name)
        return _result(
            name,
            "trtllm_gen",
            "prebuilt_cubin",
            cat,
            function=fn,
            dtype=dtype_in(name.lower()),
            tile=tile.group(1) if tile else None,
            config={"arch": f"sm{arch.group(1)}" if arch else None},
            confidence=0.95,
        )


class TensorrtLlmParser(KernelNameParser):
    """TensorRT-LLM C++ kernels (``tensorrt_llm::kernels::``, the trtllm MoE ``moe::dev::``), also vendored in
    flashinfer."""

    name = "tensorrt_llm"
    description = "TensorRT-LLM CUDA kernels (tensorrt_llm::kernels::*, moe::dev::routing/finalize/activation)"
    priority = 30

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        ns, fn = outer_function(name)
        root = ns.split("::")[0]
        if root != "tensorrt_llm" and not ns.startswith("moe::dev"):
            return None
        return _result(
            name,
            "tensorrt_llm",
            "cuda_cpp",
            "moe" if root == "moe" else category_from_words(fn),
            function=fn,
            dtype=dtype_in(name),
            config={"namespace": ns},
            confidence=0.95,
        )


class CudaCppParser(KernelNameParser):
    """Last resort for C++ kernels no family claims: a demangled name with a namespace, template arguments or
    a parameter list still names a function and its scope (after every family parser, before Triton)."""

    name = "cuda_cpp_generic"
    description = "other C++ (CUDA/HIP) kernels: any demangled name with a scope, template or parameter list"
    priority = 810

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        from magpie_trace.cxx_names import parse_symbol

        parsed = parse_symbol(name)
        if parsed is None or not (parsed.scope or parsed.template_args is not None or parsed.params is not None):
            return None
        if not re.fullmatch(r"[A-Za-z_~]\w*", parsed.function):
            return None
        family = "hip_cpp" if (context or {}).get("platform") == "rocm" else "cuda_cpp"
        return _result(
            name,
            family,
            family,
            category_from_words(parsed.function),
            function=parsed.function,
            dtype=dtype_in(name),
            config={"namespace": parsed.namespace} if parsed.scope else {},
            confidence=0.5 if parsed.exact else 0.3,
        )


PARSERS = [
    CudnnParser(),
    CublasParser(),
    CutlassParser(),
    FlashAttentionParser(),
    FlashInferParser(),
    NcclParser(),
    TrtllmGenParser(),
    TensorrtLlmParser(),
    CudaCppParser(),
]


@hookimpl
def magpie_register_kernel_name_parsers(register: Callable[[Any], None]) -> None:
    for parser in PARSERS:
        register(parser)
