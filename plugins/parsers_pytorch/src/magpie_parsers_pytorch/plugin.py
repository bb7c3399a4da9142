"""Kernel-name parsers for PyTorch-generated kernels: Inductor, ATen native, Triton JIT."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magpie_trace.kernel_names import category_from_words, dtype_in, outer_function, strip_code_object_suffix

from magpie_core import hookimpl
from magpie_core.interfaces import KernelNameParser

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ParsedKernelName

_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm|sort|scan|cat|split)_(fused_)?(\w*?)(?:_(\d+))?$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: ATen kernels that carry no at:: namespace in their outer name
_ATEN_BARE = (
    "softmax_warp_forward",
    "softmax_warp_backward",
    "cunn_SoftMax",
    "cunn_SpatialSoftMax",
    "elementwise_kernel_with_index",
    "indexSelect",
    "CatArrayBatchedCopy",
    "vectorized_layer_norm_kernel",
    "RowwiseMomentsCUDAKernel",
    "LayerNormForwardCUDAKernel",
    "kernelHistogram",
    "embedding_backward",
    "multi_tensor_apply_kernel",
    "distribution_elementwise_grid_stride_kernel",
    "reduce_kernel",
    "sort_postprocess_kernel",
    "radixSortKVInPlace",
    "gatherTopK",
    "bitonicSortKVInPlace",
)
#: generic ATen building blocks that do not say what the kernel computes
_ATEN_GENERIC = {
    "vectorized_elementwise_kernel",
    "elementwise_kernel",
    "unrolled_elementwise_kernel",
    "gpu_kernel_impl",
    "gpu_kernel_impl_nocast",
    "elementwise_kernel_manual_unroll",
    "elementwise_kernel_with_index",
    "memory",
    "binary_internal",
    "BinaryFunctor",
    "AUnaryFunctor",
    "BUnaryFunctor",
    "TensorIteratorBase",
    "TensorIterator",
    "detail",
    "cuda",
    "native",
    "ReduceOp",
    "func_wrapper_t",
    "OpaqueType",
    "TensorListMetadata",
    "UnaryOpFunctor",
    "LoadWithoutCast",
    "StoreWithoutCast",
    "LoadWithCast",
    "StoreWithCast",
    "multi_tensor_apply_kernel",
    "index_elementwise_kernel",
    "CatArrInputTensorMetadata",
    "TensorInfo",
}


def _result(name: str, family: str, kind: str, category: str, **kw: Any) -> ParsedKernelName:
    from magpie_core.reports import ParsedKernelName

    return ParsedKernelName(name=name, family=family, kind=kind, category=category, **kw)


class InductorParser(KernelNameParser):
    name = "inductor"
    description = "TorchInductor-generated Triton kernels (triton_poi_/red_/per_/tem_fused_...)"
    priority = 20

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        base = strip_code_object_suffix(name)
        m = _INDUCTOR.match(base)
        if m is None:
            return None
        kind, ops = m.group(1), m.group(3)
        ops_words = ops.lower()
        if kind in ("tem", "mm", "bmm"):
            cat = "gemm" if ("mm" in ops_words or kind != "tem") else category_from_words(ops_words)
        elif kind in ("red", "per"):
            cat = "norm" if re.search(r"norm|rsqrt|var_mean", ops_words) else "reduce"
        elif kind == "cat":
            cat = "copy/memset"
        else:
            cat = "elementwise"
        return _result(
            name,
            "inductor",
            "inductor",
            cat,
            function=base if not ops or ops.isdigit() else ops,
            config={
                "kernel_type": {
                    "poi": "pointwise",
                    "red": "reduction",
                    "per": "persistent_reduction",
                    "tem": "template",
                    "for": "foreach",
                }.get(kind, kind),
                "index": int(m.group(4)) if m.group(4) else None,
            },
            confidence=1.0,
        )


class AtenParser(KernelNameParser):
    name = "aten"
    description = "ATen native CUDA/HIP kernels (at::native::..., PyTorch's softmax/layer-norm/cat kernels)"
    priority = 60

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        outer = outer_function(name)[1]
        if "at::native::" not in name and "at::cuda::" not in name and not any(outer.startswith(b) for b in _ATEN_BARE):
            return None
        ops = [
            o
            for o in re.findall(r"at::native::(?:\(anonymous namespace\)::)?(?:\w+::)*?(\w+)", name)
            if o not in _ATEN_GENERIC and o != outer
        ]
        ops += [o for o in re.findall(r"\b(\w+(?:Functor\w*|Ops))\b", name) if o not in _ATEN_GENERIC]
        op = next(iter(ops), None)
        words = f"{outer} {op or ''}".lower()
        if re.search(r"layer_norm|layernorm|group_norm|batch_norm|rms_norm|rowwisemoments", words):
            cat = "norm"
        elif "softmax" in words:
            cat = "reduce"
        elif re.search(r"copy|cat_?arr|catarray|(?<!with_)index|gather|scatter|fill|embedding", words):
            cat = "copy/memset"
        elif re.search(r"reduce|sum|mean|norm|argmax|argmin|max|min|sort|topk|histogram", words):
            cat = "reduce" if "argmax" not in words else "sampling"
        else:
            cat = "elementwise"
        return _result(
            name,
            "aten",
            "aten_native",
            cat,
            function=outer or None,
            dtype=dtype_in(name),
            config={"op": op} if op else {},
            confidence=0.95 if "at::native" in name else 0.85,
        )


#: kernels of the triton_kernels library (github.com/triton-lang/triton, python/triton_kernels)
TRITON_KERNELS_LIB = {
    "_topk_forward": "moe",
    "_sum_bitmatrix_rows": "moe",
    "_combined_routing_memset": "moe",
    "_combined_routing_compute": "moe",
    "_finalize_matmul_scatter": "moe",
    "_matmul_ogs": "moe",
    "_p_matmul_ogs": "moe",
    "_routing_memset": "moe",
    "_compute_writeback_idx": "moe",
}


def _triton_signal(context: dict[str, Any] | None) -> str | None:
    ctx = context or {}
    frames = " ".join(ctx.get("python_frames") or [])
    if "triton" in frames or "jit.py" in frames:
        return "python stack runs through triton"
    if ctx.get("launch_api") in ("cuLaunchKernel", "cuLaunchKernelEx", "hipModuleLaunchKernel"):
        return f"launched by {ctx['launch_api']} (module launch, as Triton does)"
    return None


class TritonParser(KernelNameParser):
    name = "triton"
    description = "Triton JIT kernels: plain identifiers (NVIDIA) or .kd symbols (AMD), confirmed by launch context"
    priority = 900

    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        base = strip_code_object_suffix(name)
        if not _IDENT.match(base) or base.startswith("_Z") or base.startswith("Cijk_"):
            return None
        signal = _triton_signal(context)
        confidence = 0.9 if signal else (0.7 if name.endswith(".kd") else 0.5)
        lib = next((k for k in TRITON_KERNELS_LIB if base == k or base.startswith(k + "_")), None)
        config: dict[str, Any] = {
            "evidence": signal
            or ("AMD code-object symbol" if name.endswith(".kd") else "plain identifier, no other family matched")
        }
        if lib:
            config["library"] = "triton_kernels"
            confidence = max(confidence, 0.8)
        tile = re.search(r"(\d+x\d+x\d+)", base)
        cat = TRITON_KERNELS_LIB[lib] if lib else category_from_words(base, "other")
        return _result(
            name,
            "triton",
            "triton_jit",
            cat,
            function=lib or base,
            dtype=dtype_in(base),
            tile=tile.group(1) if tile else None,
            config=config,
            confidence=confidence,
        )


PARSERS = [InductorParser(), AtenParser(), TritonParser()]


@hookimpl
def magpie_register_kernel_name_parsers(register: Callable[[Any], None]) -> None:
    for parser in PARSERS:
        register(parser)
