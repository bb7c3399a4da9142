"""FLOPs and bytes of the MoE ops of AITER, vLLM (AITER path) and SGLang, from the op's recorded inputs.

TraceLens's conventions (commit 171dd747, PerfModel/extensions/moe_perf_model_extensions.py), our code.
M tokens, K hidden size, N intermediate size, E experts, k top-k, E_active = E·(1 − ((E − k)/E)^M)
(the expected number of distinct experts M uniformly routed tokens hit), gate 2 when gated (SwiGLU):

* fused (one launch): FLOPs 2·M·K·N·k·gate + 2·M·K·N·k + M·K·(2k − 1) (the weighted sum);
  bytes M·K·in + E_active·N·K·w·(gate + 1) + M·K·out.
* up (stage 1): FLOPs 2·M·K·N·k·gate; bytes M·K·in + E_active·gate·K·N·w + M·N·k·out.
* down (stage 2): FLOPs 2·M·N·K·k; bytes M·N·k·in + E_active·N·K·w + M·K·out.
* SGLang ``invoke_fused_moe_kernel`` (one grouped GEMM, called twice per layer): FLOPs 2·(M·k)·N·K;
  bytes (M·k)·K·in + E_active·N·K·w + (M·k)·N·out.

Bytes per element: bf16/fp16 2, fp32 4, fp8 1, packed fp4 0.5 (an unknown input dtype 2, weight 1).
The op layouts (which input is which) are in each function.
"""

from __future__ import annotations

from typing import Any

from magpie_inference_analysis.op_model import DTYPES, OpModel

_BPE = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "c10::Float8_e4m3fn": 1, "c10::Float8_e4m3fnuz": 1,
        "c10::Float8_e5m2": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float4_e2m1fn_x2": 0.5}  # fmt: skip


def _bpe(t: Any, default: float) -> float:
    return _BPE.get(t, default) if isinstance(t, str) else default


def e_active(e: int, k: int, m: int) -> float:
    return e * (1 - ((e - k) / e) ** m) if e > 0 else 0.0


def _params(m: int, k_dim: int, n: int, e: int, topk: int, gated: bool, in_t: Any, w_t: Any) -> dict[str, Any]:
    return {"num_tokens": m, "hidden_dim": k_dim, "inter_dim": n, "num_experts": e, "topk": topk, "gated": gated,
            "input_dtype": in_t, "weight_dtype": w_t}  # fmt: skip


def _model(cat: str, flops: float, nbytes: float, w_t: Any, params: dict[str, Any]) -> OpModel:
    dt = DTYPES.get(w_t, (None, 0))[0] if isinstance(w_t, str) else None
    return OpModel(cat, float(flops), float(nbytes), dt, "matrix", params)


def fused(p: dict[str, Any]) -> OpModel:
    m, k_dim, n, e, topk, g = (p[x] for x in ("num_tokens", "hidden_dim", "inter_dim", "num_experts", "topk", "gated"))
    gate = 2 if g else 1
    flops = 2 * m * k_dim * n * topk * gate + 2 * m * k_dim * n * topk + m * k_dim * (2 * topk - 1)
    b_in, b_w = _bpe(p["input_dtype"], 2), _bpe(p["weight_dtype"], 1)
    nbytes = m * k_dim * b_in + e_active(e, topk, m) * n * k_dim * b_w * (gate + 1) + m * k_dim * b_in
    return _model("MoE_fused", flops, nbytes, p["weight_dtype"], p)


def stage(kind: str, p: dict[str, Any]) -> OpModel:
    m, k_dim, n, e, topk, g = (p[x] for x in ("num_tokens", "hidden_dim", "inter_dim", "num_experts", "topk", "gated"))
    gate = 2 if (g and kind == "up") else 1
    b_in, b_w = _bpe(p["input_dtype"], 2), _bpe(p["weight_dtype"], 1)
    weights = e_active(e, topk, m) * gate * k_dim * n * b_w
    if kind == "up":
        return _model("MoE_unfused", 2 * m * k_dim * n * topk * gate, m * k_dim * b_in + weights + m * n * topk * b_in,
                      p["weight_dtype"], p)  # fmt: skip
    return _model("MoE_unfused", 2 * m * n * k_dim * topk, m * n * topk * b_in + weights + m * k_dim * b_in,
                  p["weight_dtype"], p)  # fmt: skip


def _inter(w1: list[int], w2: list[int]) -> tuple[int, int, int, bool]:
    """E, hidden K, intermediate N (int4-packed weights unpacked) and gated, from W1 [E, N·gate, K'], W2 [E, K, N']."""
    e, k_dim, n = w2
    n *= k_dim // w1[-1]
    return e, k_dim, n, w1[1] == 2 * n


def moe_model(op: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    """The model of a known MoE op (None: not one, or its inputs are not as expected)."""
    try:
        return _moe_model(op, dims, types, concrete)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None


def _moe_model(op: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    if op in ("aiter::fmoe_g1u1", "aiter::fmoe_fp8_blockscale_g1u1"):  # [out, input, w1, w2, ...], top-k: concrete[8]
        e, k_dim, n, gated = _inter(dims[2], dims[3])
        return fused(_params(dims[0][0], k_dim, n, e, int(concrete[8]), gated, types[1], types[2]))
    if op in ("vllm::rocm_aiter_fused_moe", "pseudo_op::moe_aiter_fused_1stage"):  # [x, w1, w2, topk_weights, ...]
        e, k_dim, n, gated = _inter(dims[1], dims[2])
        return fused(_params(dims[0][0], k_dim, n, e, dims[3][1], gated, types[0], types[1]))
    if op == "aiter::ck_moe_stage1":  # [x, w1, w2, sorted ids, expert ids, valid, out [M, k, N], ...]
        e, k_dim, n, gated = _inter(dims[1], dims[2])
        return stage("up", _params(dims[0][0], k_dim, n, e, dims[6][1], gated, types[0], types[1]))
    if op == "aiter::ck_moe_stage2":  # [inter [M, k, N'], w1, w2, ...]
        m, topk, n = dims[0]
        e, k_dim, _ = dims[2]
        n *= k_dim // dims[1][-1] if dims[1] else 1
        return stage("down", _params(m, k_dim, n, e, topk, False, types[0], types[2]))
    if op == "sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel":
        return _invoke_fused_moe(dims, types)
    return None


def _invoke_fused_moe(dims: list[Any], types: list[Any]) -> OpModel | None:
    """[A, B [E, N, K], _, C, ..., topk_ids [M, k] at 8]: one grouped GEMM over the M·k token-expert rows."""
    e, n, k_dim = dims[1]
    m, topk = dims[8]
    work = m * topk
    b_in, b_w = _bpe(types[0], 2), _bpe(types[1], 1)
    b_out = _bpe(types[3] if len(types) > 3 and types[3] else types[0], 2)
    nbytes = work * k_dim * b_in + e_active(e, topk, m) * n * k_dim * b_w + work * n * b_out
    params = {"m_work": work, "num_tokens": m, "topk": topk, "N": n, "K": k_dim, "num_experts": e}
    return _model("MoE_unfused", 2 * work * n * k_dim, nbytes, types[1], params)
