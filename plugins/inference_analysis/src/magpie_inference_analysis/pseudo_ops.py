"""MoE pseudo-ops: one fused MoE op's kernels split into up-projection, down-projection and finalize.

A vLLM ``vllm::moe_forward`` running the unfused Triton path launches two ``matmul_ogs`` GEMMs (the first,
in time, is the up/gate projection; the others the down projection) and a ``matmul_scatter`` finalize.
As TraceLens does (its ``moe_unfused_triton_pseudo_ops`` extension, commit 171dd747), each becomes a
``pseudo_op::moe_triton_unfused_{up,down,finalize_matmul_scatter}`` row carrying the MoE op's inputs, with:

* tokens M and hidden size K from the hidden states ``[M, K]`` (the first input), experts E from the router
  logits ``[M, E]`` (the second), top-k from the ``TopK`` op inside the MoE op (its second concrete input);
* the intermediate size N taken equal to K (the trace does not record it: TraceLens's stated limitation);
* gated (SwiGLU) when the GEMM kernel's name says ``swiglu``/``glu``; weights FP4 / FP8 from the kernel name;
* FLOPs: up 2·M·K·N·k·(2 if gated), down 2·M·N·K·k; bytes: input + E_active·(2 if gated)·K·N weights +
  output, with E_active = E·(1 − ((E − k)/E)^M) the expected number of distinct experts M tokens hit.
"""

from __future__ import annotations

import bisect
from typing import Any

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.op_model import DTYPES, OpModel

MOE_OPS = frozenset({"vllm::moe_forward", "vllm::moe_forward_shared"})
_WEIGHT_BPE = {"FP4": 0.5, "FP8": 1.0}


def is_moe_kernel(kernel_name: str) -> bool:
    """A kernel a MoE pseudo-op takes (``matmul_ogs`` GEMMs, the ``matmul_scatter`` finalize)."""
    low = kernel_name.lower()
    return "matmul_ogs" in low or "matmul_scatter" in low


def moe_parent(chain: tuple[int, ...], ops: list[ev_mod.Ev]) -> int | None:
    """The innermost enclosing fused MoE op of a chain, if any."""
    return next((j for j in chain if ops[j].name in MOE_OPS), None)


class TopKIndex:
    """The ``TopK`` ops of one op list by thread and start time, to find the one inside a MoE op."""

    def __init__(self, ops: list[ev_mod.Ev]) -> None:
        self.by_tid: dict[Any, tuple[list[float], list[ev_mod.Ev]]] = {}
        for op in sorted((o for o in ops if "TopK" in o.name), key=lambda o: o.ts or 0.0):
            ts, evs = self.by_tid.setdefault(op.tid, ([], []))
            ts.append(op.ts or 0.0)
            evs.append(op)

    def topk_in(self, moe: ev_mod.Ev) -> int | None:
        ts, evs = self.by_tid.get(moe.tid, ([], []))
        lo = moe.ts or 0.0
        for op in evs[bisect.bisect_left(ts, lo) : bisect.bisect_right(ts, lo + moe.dur)]:
            c = ev_mod.decode_list(op.args.concrete) if op.args is not None else []
            if len(c) > 1 and str(c[1]).strip().lstrip("-").isdigit():
                return int(c[1])
        return None


def _weight_dtype(kernel_name: str) -> str | None:
    low = kernel_name.lower()
    if "fp4" in low:
        return "FP4"
    if "fp8" in low or "e4m3" in low:
        return "FP8"
    return None


def triton_moe_model(kind: str, moe: ev_mod.Ev, topk: int | None, kernel_name: str) -> OpModel | None:
    """FLOPs and bytes of one unfused Triton MoE GEMM (``kind`` up or down); None for the finalize step or
    inputs not shaped as expected."""
    try:
        return _triton_moe_model(kind, moe, topk, kernel_name)
    except (TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError):
        return None


def _triton_moe_model(kind: str, moe: ev_mod.Ev, topk: int | None, kernel_name: str) -> OpModel | None:
    dims = ev_mod.decode_list(moe.args.input_dims) if moe.args is not None else []
    types = ev_mod.decode_list(moe.args.input_type) if moe.args is not None else []
    if kind not in ("up", "down") or len(dims) < 2 or len(dims[0]) != 2 or len(dims[1]) != 2 or topk is None:
        return None
    m, k_dim = dims[0]
    e = dims[1][1]
    n = k_dim  # not in the trace; see the module docstring
    low = kernel_name.lower()
    gated = kind == "up" and ("_swiglu" in low or "_glu" in low)
    wdt = _weight_dtype(kernel_name)
    in_dt, in_b = DTYPES.get(types[0] if types else "", (None, 0.0))
    params = {"num_tokens": m, "hidden_dim": k_dim, "inter_dim": n, "num_experts": e, "topk": topk,
              "gated": gated, "input_dtype": types[0] if types else None, "weight_dtype": wdt}  # fmt: skip
    gate = 2 if gated else 1
    flops = 2.0 * m * k_dim * n * topk * gate
    if wdt is None or not in_b:
        return OpModel("MoE_unfused", flops, float("nan"), in_dt, "matrix", params)
    e_active = e * (1 - ((e - topk) / e) ** m)
    weights = e_active * gate * k_dim * n * _WEIGHT_BPE[wdt]
    if kind == "up":
        nbytes = m * k_dim * in_b + weights + m * n * topk * in_b
    else:
        nbytes = m * n * topk * in_b + weights + m * k_dim * in_b
    return OpModel("MoE_unfused", flops, nbytes, wdt.lower(), "matrix", params)
