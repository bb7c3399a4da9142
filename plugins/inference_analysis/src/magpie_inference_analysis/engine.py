"""Which serving engine recorded a trace, from the trace itself (its op names), not assumed.

A step annotation's format does not say it: TraceLens-patched SGLang writes vLLM's detailed
``execute_..._context_..._generation_...`` annotations. The engines' own op namespaces do:
``sglang::`` / ``sgl_kernel::`` / ``sglang_profiler::`` are SGLang's, ``vllm::`` / ``_C::`` /
``_C_cache_ops::`` / ``_vllm_fa*`` vLLM's, ``atom::`` ATOM's; a graph-replayed trace without its capture traces
has few ops, so SGLang's own kernels (``sgl_hip::`` / ``sgl_kernel`` / ``sglang`` in the name) count too (vLLM's
do not: ``vllm::`` appears in the template arguments of AITER kernels that SGLang runs). The engine with
the most distinct names wins; with none, the annotation format's engine is reported as such
(``engine_source`` says which).
"""

from __future__ import annotations

from collections.abc import Iterable

PREFIXES: dict[str, tuple[str, ...]] = {
    "sglang": ("sglang::", "sgl_kernel::", "sglang_profiler::"),
    "vllm": ("vllm::", "_C::", "_C_cache_ops::", "_C_custom_ar::", "_vllm_fa", "_moe_C::", "_rocm_C::"),
    "atom": ("atom::",),
}


KERNEL_WORDS: dict[str, tuple[str, ...]] = {"sglang": ("sgl_hip", "sgl_kernel", "sglang")}


def detect_engine(
    op_names: Iterable[str], annotation_engine: str | None, kernel_names: Iterable[str] = ()
) -> tuple[str | None, str]:
    """``(engine, how it was decided)``."""
    counts = dict.fromkeys(PREFIXES, 0)
    for name in op_names:
        for engine, prefixes in PREFIXES.items():
            if name.startswith(prefixes):
                counts[engine] += 1
    for name in kernel_names:
        for engine, words in KERNEL_WORDS.items():
            if any(w in name for w in words):
                counts[engine] += 1
    best = max(counts, key=lambda e: counts[e])
    if counts[best]:
        seen = ", ".join(f"{counts[e]} {e}" for e in PREFIXES if counts[e])
        return best, f"op and kernel names ({seen} names)"
    if annotation_engine:
        return annotation_engine, "step annotation format (no engine op names in the trace)"
    return None, "no engine op names and no step annotations"
