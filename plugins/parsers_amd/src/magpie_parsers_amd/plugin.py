"""Kernel-name parsers for AMD libraries. ROCm traces often carry mangled names:
they are demangled with a library (:mod:`magpie_trace.demangle`) first."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magpie_trace.demangle import demangle, is_mangled, leading_names
from magpie_trace.kernel_names import category_from_words, dtype_in, outer_function, strip_code_object_suffix

from magpie_core import hookimpl
from magpie_core.interfaces import KernelNameParser

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ParsedKernelName


def _result(name: str, family: str, kind: str, category: str, **kw: Any) -> ParsedKernelName:
    from magpie_core.reports import ParsedKernelName

    return ParsedKernelName(name=name, family=family, kind=kind, category=category, **kw)


def readable(name: str) -> tuple[str, float]:
    """(demangled text or the name itself, confidence factor: 1.0 when fully demangled or not mangled)."""
    base = strip_code_object_suffix(name)
    if not is_mangled(base):
        return base, 1.0
    text = demangle(base)
    if text is not None:
        return text, 1.0
    parts = leading_names(base)
    return ("::".join(parts), 0.7) if parts else (base, 0.3)


class CkTileParser(KernelNameParser):
    name = "ck_tile"
    description = "Composable Kernel Tile kernels (ck_tile::kentry<..., ck_tile::Op<...>>)"
    priority = 10

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = readable(name)
        ns, func = outer_function(text)
        if not ns.startswith("ck_tile"):
            return None
        op = func
        m = re.search(r"kentry<\d+,\s*ck_tile::(\w+)", text)
        if m:
            op = m.group(1)
        elif len(text.split("::")) > 2:  # fallback text "ck_tile::kentry::..." is not available: keep func
            op = func
        shape = re.search(r"Generic2dBlockShape<ck_tile::sequence<(\d+), (\d+)>", text)
        tile = f"{shape.group(1)}x{shape.group(2)}" if shape else None
        cat = category_from_words(op, "other")
        return _result(
            name,
            "ck_tile",
            "ck_tile",
            cat,
            function=op,
            dtype=dtype_in(text),
            tile=tile,
            config={"entry": func},
            confidence=0.95 * conf if m else 0.6 * conf,
        )


class CkParser(KernelNameParser):
    name = "ck"
    description = "Composable Kernel (classic) kernels (ck::kernel_gemm_xdl_..., ck::tensor_operation)"
    priority = 12

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = readable(name)
        ns, func = outer_function(text)
        if not (ns == "ck" or ns.startswith("ck::")):
            return None
        tile = re.search(r"(\d+x\d+x\d+)", text)
        return _result(
            name,
            "ck",
            "ck",
            category_from_words(func, "other"),
            function=func,
            dtype=dtype_in(text),
            tile=tile.group(1) if tile else None,
            config={"namespace": ns},
            confidence=0.9 * conf,
        )


_TENSILE_TYPES = (
    ("F8B8", "fp8/bf8"),
    ("B8F8", "bf8/fp8"),
    ("F8", "fp8"),
    ("B8", "bf8"),
    ("I8", "int8"),
    ("H", "fp16"),
    ("B", "bf16"),
    ("S", "fp32"),
    ("D", "fp64"),
    ("C", "complex64"),
    ("Z", "complex128"),
)


class TensileParser(KernelNameParser):
    name = "tensile"
    description = "Tensile / hipBLASLt GEMM solutions (Cijk_Ailk_Bljk_<types>_..._MT<m>x<n>x<k>_MI...)"
    priority = 10

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        base = strip_code_object_suffix(name)
        custom = base.startswith("Custom_")
        if custom:
            base = base[len("Custom_") :]
        if not base.startswith("Cijk_"):
            return None
        parts = base.split("_")
        a = next((p for p in parts[1:3] if p.startswith("A")), "")
        b = next((p for p in parts[1:3] if p.startswith("B")), "")
        layout = ("N" if a == "Ailk" else "T" if a == "Alik" else "?") + (
            "N" if b == "Bljk" else "T" if b == "Bjlk" else "?"
        )
        type_token = parts[3] if len(parts) > 3 else ""
        dtype = next((short for code, short in _TENSILE_TYPES if type_token.startswith(code)), None)
        tokens = set(parts)
        mt = re.search(r"_MT(\d+x\d+x\d+)", base)
        mi = re.search(r"_MI(\d+x\d+x\d+(?:x\d+)?)", base)
        isa = re.search(r"_ISA(\d+)", base)
        wg = re.search(r"_WG(\d+_\d+_\d+)", base)
        hipblaslt = custom or "UserArgs" in tokens
        config = {
            "layout": layout,
            "types": type_token,
            "matrix_instruction": mi.group(1) if mi else None,
            "isa": f"gfx{isa.group(1)}" if isa else None,
            "workgroup": wg.group(1).replace("_", "x") if wg else None,
            "bias": "Bias" in tokens,
            "user_args": "UserArgs" in tokens,
            "batched": "BBS" in type_token or "BH" in tokens,
        }
        return _result(
            name,
            "hipblaslt" if hipblaslt else "tensile",
            "tensile_gemm",
            "gemm",
            function="gemm",
            dtype=dtype,
            tile=mt.group(1) if mt else None,
            config=config,
            confidence=1.0,
        )


class AiterParser(KernelNameParser):
    name = "aiter"
    description = "AITER kernels (aiter:: C++ kernels; fmoe_/mla_ assembly kernels)"
    priority = 10

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = readable(name)
        ns, func = outer_function(text)
        if ns == "aiter" or ns.startswith("aiter::"):
            return _result(
                name,
                "aiter",
                "aiter",
                category_from_words(func, "other"),
                function=func,
                dtype=dtype_in(text),
                config={"namespace": ns},
                confidence=0.95 * conf,
            )
        base = strip_code_object_suffix(name)
        if re.match(r"(_ZN\d+)?(fmoe_|mla_(dec|pfl|a8w8|a16w16)|pa_(bf16|fp8|a8w8|a16w16)|asm_)", base):
            return _result(
                name,
                "aiter",
                "aiter",
                category_from_words(base, "other"),
                function=base.split(".")[0],
                dtype=dtype_in(base),
                config={"assembly": True},
                confidence=0.7,
            )
        return None


class RocclrBlitParser(KernelNameParser):
    name = "rocclr_blit"
    description = "ROCm runtime blit kernels (__amd_rocclr_copyBuffer, fillBuffer, ...)"
    priority = 5

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        base = strip_code_object_suffix(name)
        if not base.startswith("__amd_rocclr_"):
            return None
        func = base[len("__amd_rocclr_") :]
        return _result(name, "rocclr", "blit", "copy/memset", function=func, confidence=1.0)


class HipCppParser(KernelNameParser):
    name = "hip_cpp"
    description = "hand-written HIP C++ kernels (wvSplitK skinny GEMMs, LLGemm, MIOpen, rocPRIM/hipCUB)"
    priority = 35

    _GEMM = re.compile(r"^(?:void\s+)?(wvSplitK\w*|LLGemm\w*|LLMM\w*|wv_splitk\w*)")
    _MIOPEN = re.compile(
        r"^(Im2d2Col\w*|Im3d2Col\w*|Col2Im\w*|naive_conv\w*|MIOpen\w*|miopen\w*|SubTensorOp\w*|"
        r"gcnAsm\w*|igemm\w*)"
    )

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = readable(name)
        m = self._GEMM.match(text)
        if m:
            fn = m.group(1)
            tmpl = re.search(r"<([^<>]*)>", text)
            return _result(
                name,
                "hip_cpp",
                "hip_cpp",
                "gemm",
                function=fn,
                dtype=dtype_in(text),
                config={"template_args": tmpl.group(1)} if tmpl else {},
                confidence=0.95 * conf,
            )
        m = self._MIOPEN.match(text)
        if m:
            fn = m.group(1)
            cat = (
                "copy/memset" if "2col" in fn.lower() or "col2im" in fn.lower() or "subtensor" in fn.lower() else "gemm"
            )
            return _result(name, "miopen", "hip_cpp", cat, function=fn, confidence=0.8 * conf)
        ns, fn = outer_function(text)
        if ns.startswith(("rocprim", "hipcub")):
            op = re.search(r"(scan|reduce|sort|select|histogram|transform|partition)", text)
            cat = "reduce" if op and op.group(1) in ("scan", "reduce", "histogram") else "other"
            return _result(
                name,
                ns.split("::")[0],
                "hip_cpp",
                cat,
                function=op.group(1) if op else fn,
                dtype=dtype_in(text),
                confidence=0.8,
            )
        return None


class HipCppFallbackParser(KernelNameParser):
    """Last resort for HIP C++ kernels: HIP-only types in the signature (after every family parser)."""

    name = "hip_cpp_generic"
    description = "other HIP C++ kernels, recognised by HIP types (__hip_bfloat16, hip_*) in the signature"
    priority = 800

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        text, conf = readable(name)
        if "__hip_" not in text and "hip::" not in text:
            return None
        ns, fn = outer_function(text)
        return _result(
            name,
            "hip_cpp",
            "hip_cpp",
            category_from_words(fn, "other"),
            function=fn,
            dtype=dtype_in(text),
            config={"namespace": ns} if ns else {},
            confidence=0.5 * conf,
        )


class RcclParser(KernelNameParser):
    name = "rccl"
    description = "RCCL collectives on ROCm traces (ncclDevKernel_* / ncclKernel_* names)"
    priority = 29

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        if (context or {}).get("platform") != "rocm" and "rccl" not in name.lower():
            return None
        base = name[5:] if name.startswith("void ") else name
        m = re.match(r"(?:nccl|rccl)(?:Dev)?Kernel_(\w+)", base)
        if m is None:
            return None
        parts = m.group(1).split("_")
        config: dict[str, Any] = {}
        for p in parts[1:]:
            if p in ("RING", "TREE", "COLLNET", "PAT", "DIRECT"):
                config["algorithm"] = p
            elif p in ("LL", "LL128", "LL64", "SIMPLE"):
                config["protocol"] = p
            elif p in ("Sum", "Prod", "Min", "Max", "Avg", "PreMulSum", "SumPostDiv"):
                config["redop"] = p
        return _result(
            name,
            "rccl",
            "rccl",
            "communication",
            function=parts[0],
            dtype=dtype_in("_".join(parts[1:])),
            config=config,
            confidence=1.0,
        )


PARSERS = [
    CkTileParser(),
    CkParser(),
    TensileParser(),
    AiterParser(),
    RocclrBlitParser(),
    HipCppParser(),
    HipCppFallbackParser(),
    RcclParser(),
]


@hookimpl
def magpie_register_kernel_name_parsers(register: Callable[[Any], None]) -> None:
    for parser in PARSERS:
        register(parser)
