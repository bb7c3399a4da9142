"""Helpers for reading kernel names: generic C++ and naming conventions that kernel-name parsers share.

:func:`outer_function` (the outermost function of a demangled C++ name, via :mod:`magpie_trace.cxx_names`),
:func:`dtype_in` (the data type a name spells), :func:`category_from_words` (a category from the words in a name:
one of magpie-core's ``magpie_core.kernel_names.CATEGORIES``) and :func:`strip_code_object_suffix`. They know no
kernel family: magpie's parsers live in plugins, and magpie-core's ``magpie_core.kernel_names.parse_kernel_name``
asks them in priority order.
"""

from __future__ import annotations

import re
from functools import lru_cache

# -- small helpers parser plugins share (generic C++ / naming conventions) ----

#: C++ / library type spellings -> short dtype names, most specific first
DTYPE_SPELLINGS: tuple[tuple[str, str], ...] = (
    ("mxfp4", "mxfp4"),
    ("float8_e4m3", "fp8"),
    ("Float8_e4m3", "fp8"),
    ("__hip_fp8", "fp8"),
    ("fp8", "fp8"),
    ("bfloat16", "bf16"),
    ("BFloat16", "bf16"),
    ("bf16", "bf16"),
    ("__half", "fp16"),
    ("c10::Half", "fp16"),
    ("half_t", "fp16"),
    ("fp16", "fp16"),
    ("float", "fp32"),
    ("fp32", "fp32"),
    ("double", "fp64"),
    ("int8", "int8"),
    ("long", "int64"),
    ("int", "int32"),
    ("bool", "bool"),
)


def dtype_in(text: str) -> str | None:
    """The data type a kernel name spells: the earliest floating-point type, else the earliest integer one.

    Plain C type words (``float``, ``int``...) only count as whole words.
    """
    import re

    best: dict[bool, tuple[int, str]] = {}
    for spelling, short in DTYPE_SPELLINGS:
        if spelling in _C_WORDS:
            m = re.search(r"(?<![A-Za-z0-9_])" + spelling + r"(?![A-Za-z0-9_])", text)
            pos = m.start() if m else -1
        else:
            pos = text.find(spelling)
        is_float = short.startswith(("fp", "bf", "mx"))
        if pos >= 0 and (is_float not in best or pos < best[is_float][0]):
            best[is_float] = (pos, short)
    hit = best.get(True) or best.get(False)
    return hit[1] if hit else None


_C_WORDS = frozenset({"float", "double", "long", "int", "bool"})


#: words in a kernel name -> its category, first match wins (order matters: "moe" before "gemm")
CATEGORY_RULES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("reshape_and_cache", "store_kvcache", "kv_cache", "kvcache", "kv_indices"), "copy/memset"),
    (
        (
            "allreduce",
            "all_reduce",
            "allgather",
            "all_gather",
            "reducescatter",
            "reduce_scatter",
            "alltoall",
            "all_to_all",
            "sendrecv",
            "broadcast",
            "cross_device_reduce",
        ),
        "communication",
    ),
    (("moe", "expert", "topk_softmax", "routing", "ogs", "grouped_gemm", "fused_experts"), "moe"),
    (("attention", "attn", "fmha", "mha", "flash", "paged", "mla", "sdpa", "unified_attention"), "attention"),
    (
        (
            "rmsnorm",
            "rms_norm",
            "layernorm",
            "layer_norm",
            "groupnorm",
            "group_norm",
            "batchnorm",
            "batch_norm",
            "norm2d",
            "_norm",
        ),
        "norm",
    ),
    (("gemm", "matmul", "gemv", "_mm_", "bmm", "mm_", "linear", "xdl", "dot"), "gemm"),
    (("sampling", "sample", "argmax", "top_p", "top_k", "topk", "multinomial"), "sampling"),
    (
        (
            "copy",
            "memcpy",
            "memset",
            "fill",
            "cat_",
            "concat",
            "gather",
            "scatter",
            "index",
            "cache",
            "blit",
            "transpose",
            "permute",
            "pad",
        ),
        "copy/memset",
    ),
    (("reduce", "softmax", "sum", "mean", "scan", "cumsum", "max_", "min_", "argmin"), "reduce"),
    (
        (
            "elementwise",
            "activation",
            "act_and_mul",
            "silu",
            "gelu",
            "relu",
            "rotary",
            "rope",
            "quant",
            "add",
            "mul",
            "exp",
            "sigmoid",
            "tanh",
            "pow",
            "clamp",
            "where",
            "cast",
            "convert",
            "arange",
            "neg",
        ),
        "elementwise",
    ),
)


def category_from_words(text: str, default: str = "other") -> str:
    """A category from the words in a kernel or function name."""
    t = text.lower()
    for words, cat in CATEGORY_RULES:
        if any(w in t for w in words):
            return cat
    return default


_OUTER = re.compile(r"^(?:void\s+)?((?:[A-Za-z_]\w*::|\(anonymous namespace\)::)*)([A-Za-z_~]\w*)")


@lru_cache(maxsize=4096)  # every parser plugin asks for the same names' outer function: parse each once
def outer_function(text: str) -> tuple[str, str]:
    """(namespace path, function) of the outermost function of a demangled C++ name, read with the bracket-
    matching parser of :mod:`magpie_trace.cxx_names` (return types such as ``std::enable_if<...>::type``,
    ``(anonymous namespace)``, function-pointer template arguments); plain identifiers give ``("", name)``."""
    from magpie_trace.cxx_names import parse_cxx_name

    parsed = parse_cxx_name(text)
    if parsed is not None and re.fullmatch(r"[A-Za-z_~]\w*", parsed.function):
        return parsed.namespace, parsed.function
    m = _OUTER.match(text)
    return (m.group(1).rstrip(":"), m.group(2)) if m else ("", text)


def strip_code_object_suffix(name: str) -> str:
    """AMD code-object symbols end in ``.kd`` (kernel descriptor); the kernel is the part before."""
    return name[:-3] if name.endswith(".kd") else name
