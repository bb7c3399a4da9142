"""FLOPs and bytes per op from the recorded ``Input Dims`` / ``Input type`` / ``Concrete Inputs``.

Every model is written down in docs/inference-analysis.md; the short version per family:

* GEMM (``mm addmm bmm baddbmm linear matmul _scaled_mm`` and custom ``*gemm*`` ops):
  FLOPs = 2·B·M·N·K (+ B·M·N when a bias is added); bytes = A + B + C (+ bias), each at its
  recorded dtype; the output has A's dtype (``_scaled_mm``: bf16 unless ``out_dtype`` says otherwise).
* SDPA / flash attention (``q [B,H_Q,N_Q,d]``, ``k/v [B,H_KV,N_KV,d]``): FLOPs = 2·B·H_Q·P·(d_qk + d_v)
  with P the number of (query, key) pairs computed: N_Q·N_KV, or with a causal mask
  N_Q²/2 when N_Q ≤ N_KV (PyTorch's top-left mask; N²/2 when square, as TraceLens),
  else N_KV²/2 + (N_Q−N_KV)·N_KV. GQA: FLOPs use H_Q, bytes read K/V with H_KV.
  Bytes = Q + K + V + O. Softmax FLOPs are not counted (O(1/d) of the total).
* inference attention (custom attention ops of serving engines, paged KV cache): from the
  step annotation's sums: FLOPs = 2·H_Q·(d_qk+d_v)·(c_sqsk − c_sqsq/2 + g_sqsk) (causal inside the
  new chunk); bytes = Q, O and the new K/V at the query dtype plus (sk − sq) cached K/V tokens at
  the cache dtype. H_Q and d from the query input ``[T, H_Q, d]``; H_KV from the next K input or
  cache (second-to-last dimension).
* elementwise: unary 1 FLOP/element, binary 1 FLOP per output element (broadcast); bytes = inputs + output.
  Copies / casts / fills: 0 FLOPs, bytes = read + write.
* norms: RMS 4 FLOPs/element (square, sum, scale, weight), +1 with a fused residual add; layer 5 FLOPs/element;
  bytes = x + output (+ residual in and out) + weight (+ bias).
* softmax: 5 FLOPs/element (max, subtract, exp, sum, divide); bytes = in + out.
* reductions (and ``linalg_vector_norm``): 1 FLOP per input element; bytes = input (the output is not
  counted: ≤ input), except scans (``cumsum``/``cumprod``), whose output is as large as the input.
* ``*_and_mul`` gated activations: 5 FLOPs per output element (the activation ~4, the product 1, as TraceLens).
* convolution, ``sglang::store_cache`` and Inductor ``triton_poi/red/per_*`` ops: TraceLens's models
  (:mod:`tl_models`).
* embedding: 0 FLOPs; bytes = gathered rows read + written + indices.
* RoPE: 3 FLOPs per rotated element (x·cos + rot(x)·sin); bytes = q/k read + written + the cos/sin
  rows used + positions.
* MoE pseudo-ops (vLLM's unfused Triton MoE): see :mod:`pseudo_ops`; AITER's fused / two-stage MoE ops and
  SGLang's ``invoke_fused_moe_kernel``: see :mod:`moe_models`.
* MoE (ops with the hidden states ``[T,H]``, expert weights ``[E,N1,H]`` and ``[E,H,N2]`` and a
  ``[T,k]`` top-k among the inputs): FLOPs = 2·T·k·H·(N1+N2); bytes = every expert's weights
  (exact once T·k ≥ E) + hidden in and out.

Ops with no model are reported with ``has_perf_model`` false, never with made-up numbers.
"""

from __future__ import annotations

import math
from typing import Any

from magpie_inference_analysis import tl_models
from magpie_inference_analysis.annotations import StepInfo
from magpie_inference_analysis.moe_models import moe_model
from magpie_inference_analysis.op_model import DTYPES, OpModel

FLOATS = {"bf16", "fp16", "fp32", "fp64", "fp8", "fp4"}

GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul", "aten::_scaled_mm"}
# op -> index of is_causal in its arguments
SDPA_CAUSAL_ARG = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_flash_attention_for_cpu": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
}
UNARY = {
    "silu", "gelu", "relu", "exp", "neg", "sigmoid", "tanh", "rsqrt", "sqrt", "abs", "log", "cos", "sin",
    "reciprocal", "erf", "square", "exp2", "log2", "floor", "ceil", "round", "sign",
}  # fmt: skip
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "rsub", "eq", "ne", "lt", "gt", "le", "ge"}
COPY = {"copy_", "clone", "_to_copy", "to", "contiguous", "fill_", "zero_", "cat", "index_select", "gather",
        "index", "scatter", "index_put_", "masked_fill_", "where", "_unsafe_index", "stack", "repeat"}  # fmt: skip
REDUCE = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm", "cumsum", "cumprod", "prod",
          "any", "all", "topk", "sort"}  # fmt: skip
SPECIFIC = {"GEMM", "SDPA_fwd", "InferenceAttention_fwd", "MoE", "MoE_fused", "MoE_unfused", "CONV_fwd",
            "RMSNorm_fwd", "Normalization", "RoPE_fwd", "Softmax", "Embedding"}  # fmt: skip


def dtype_of(t: Any) -> tuple[str | None, float]:
    if not isinstance(t, str) or not t:
        return None, 0.0
    return DTYPES.get(t, (None, 2.0))


def numel(shape: Any) -> int:
    if not isinstance(shape, list):
        return 0
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return 0
        n *= d
    return n


Tensor = tuple[int, list[int], str | None, float]  # argument index, shape, dtype, bytes/element


def _tensors(dims: list[Any], types: list[Any]) -> list[Tensor]:
    """(argument index, shape, dtype, bytes/element) of every tensor argument (non-empty dims, known type)."""
    out = []
    for i, d in enumerate(dims):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            t = types[i] if i < len(types) else ""
            if t in ("Scalar", "ScalarList", "TensorList", ""):
                continue
            dt, b = dtype_of(t)
            out.append((i, d, dt, b))
    return out


def _base(op: str) -> str:
    name = op.split("::", 1)[-1]
    return name[:-1] if name.endswith("_") and name not in ("copy_", "fill_", "zero_", "index_put_") else name


def _bool_at(concrete: list[Any], i: int) -> bool:
    return i < len(concrete) and str(concrete[i]).strip().lower() in ("true", "1")


#: a GEMM's operands: A, B (as [.., K] x [K, N]), and the bias shape and bytes/element (None, 0.0: no bias)
GemmOperands = tuple[Tensor, Tensor, list[int] | None, float]


def _gemm_operands(op: str, base: str, t: list[Tensor]) -> GemmOperands | None:
    """A, B and the bias of a GEMM-like op's tensor arguments ``t``, by the op's argument convention."""
    bias_shape: list[int] | None = None
    bias_b = 0.0
    if base in ("addmm", "baddbmm"):
        if len(t) < 3:
            return None
        (_, bias_shape, _, bias_b), a, b = t[0], t[1], t[2]
    elif base == "linear":
        if len(t) < 2:
            return None
        a = t[0]
        w = t[1]
        if len(w[1]) != 2:
            return None
        b = (w[0], [w[1][1], w[1][0]], w[2], w[3])  # weight [N, K] is B transposed
        if len(t) > 2 and len(t[2][1]) == 1:
            bias_shape, bias_b = t[2][1], t[2][3]
    elif op.startswith("aten::"):
        if len(t) < 2:
            return None
        a, b = t[0], t[1]
        if base == "_scaled_mm" and len(t) > 4 and len(t[4][1]) == 1:
            bias_shape, bias_b = t[4][1], t[4][3]
    else:  # custom gemm op: x [.., K] and a weight [N, K] (or [K, N])
        if len(t) < 2 or len(t[1][1]) != 2:
            return None
        a, w = t[0], t[1]
        k = a[1][-1]
        if w[1][1] == k:
            b = (w[0], [w[1][1], w[1][0]], w[2], w[3])
        elif w[1][0] == k:
            b = w
        else:
            return None
        if len(t) > 2 and len(t[2][1]) == 1 and t[2][1][0] == b[1][1] and t[2][2] in FLOATS:
            bias_shape, bias_b = t[2][1], t[2][3]
    return a, b, bias_shape, bias_b


def gemm(op: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    """``2 * B * M * N * K`` FLOPs (plus one per output for a bias); A, B and C (and the bias) moved once."""
    base = op.split("::", 1)[-1]
    operands = _gemm_operands(op, base, _tensors(dims, types))
    if operands is None:
        return None
    a, b, bias_shape, bias_b = operands
    sa, sb = a[1], b[1]
    if len(sa) < 1 or len(sb) < 1:
        return None
    if len(sb) == 2:
        if len(sa) < 2:
            return None
        batch, m, k, n = 1, math.prod(sa[:-1]), sa[-1], sb[1]
        if sb[0] != k:
            return None
    elif len(sa) >= 3 and len(sb) >= 3:
        batch = max(math.prod(sa[:-2]), math.prod(sb[:-2]))
        m, k, n = sa[-2], sa[-1], sb[-1]
        if sb[-2] != k:
            return None
    else:
        return None
    flops = 2.0 * batch * m * n * k
    out_b = a[3]
    if base == "_scaled_mm":
        out_b = 2.0
        for c in concrete:
            if isinstance(c, str) and c in DTYPES:
                out_b = DTYPES[c][1]
    elems_a, elems_b, elems_c = batch * m * k, (batch if len(sb) >= 3 else 1) * k * n, batch * m * n
    nbytes = elems_a * a[3] + elems_b * b[3] + elems_c * out_b
    if bias_shape is not None:
        flops += batch * m * n
        nbytes += numel(bias_shape) * bias_b
    params = {"B": batch, "M": m, "N": n, "K": k, "bias": bias_shape is not None, "dtype_A_B": [a[2], b[2]]}
    return OpModel("GEMM", flops, nbytes, a[2], "matrix", params)


def causal_pairs(n_q: int, n_kv: int, bottom_right: bool = False) -> float:
    """(query, key) pairs a causal mask keeps; see the module docstring."""
    if bottom_right:  # flash-attn convention: the mask is aligned to the last key
        return n_q * n_kv - n_q * n_q / 2.0 if n_q <= n_kv else n_kv * n_kv / 2.0
    if n_q <= n_kv:
        return n_q * n_q / 2.0
    return n_kv * n_kv / 2.0 + (n_q - n_kv) * n_kv


def sdpa(op: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    t = _tensors(dims, types)
    if len(t) < 3 or any(len(x[1]) != 4 for x in t[:3]):
        return None
    q, k, v = t[0], t[1], t[2]
    b, h_q, n_q, d_qk = q[1]
    _, h_kv, n_kv, _ = k[1]
    d_v = v[1][3]
    idx = SDPA_CAUSAL_ARG.get(op)
    causal = idx is not None and _bool_at(concrete, idx)
    pairs = causal_pairs(n_q, n_kv) if causal else float(n_q * n_kv)
    flops = 2.0 * b * h_q * pairs * (d_qk + d_v)
    nbytes = (numel(q[1]) * q[3] + numel(k[1]) * k[3] + numel(v[1]) * v[3]) + b * h_q * n_q * d_v * q[3]
    params = {
        "B": b, "N_Q": n_q, "H_Q": h_q, "N_KV": n_kv, "H_KV": h_kv, "d_h_qk": d_qk, "d_h_v": d_v,
        "causal": causal, "dtype": q[2],
    }  # fmt: skip
    return OpModel("SDPA_fwd", flops, nbytes, q[2], "matrix", params)


def inference_attention(dims: list[Any], types: list[Any], step: StepInfo | None) -> OpModel | None:
    """The query is the first ``[T, H_Q, d]`` float input; K the first later float input of head size d with
    other heads or a paged layout (the KV cache); V the float input after it (its head size d_v may differ:
    MLA); the cache dtype from the first 4-5-D input."""
    t = _tensors(dims, types)
    q = next((x for x in t if len(x[1]) == 3 and x[2] in FLOATS), None)
    if q is None:
        return None
    _, h_q, d = q[1]
    later = [x for x in t if x[0] > q[0] and len(x[1]) in (3, 4, 5) and x[2] in FLOATS]
    rest = [x for x in later if x[1][-1] == d]
    kv = next((x for x in rest if x[1][-2] != h_q or len(x[1]) > 3), rest[0] if rest else None)
    h_kv = kv[1][-2] if kv is not None else h_q
    v = next((x for x in later if kv is not None and x[0] > kv[0]), None)
    d_v = v[1][-1] if v is not None else d
    cache = next((x for x in rest if len(x[1]) >= 4), None)
    bq = q[3]
    bkv = cache[3] if cache is not None else bq
    params: dict[str, Any] = {"H_Q": h_q, "H_KV": h_kv, "d_h_qk": d, "d_h_v": d_v, "dtype_Q": q[2]}
    if cache is not None:
        params["dtype_KV"] = cache[2]
    if step is None or not step.detailed:
        params["note"] = "needs a detailed step annotation (sq/sk/sqsq/sqsk sums)"
        return OpModel("InferenceAttention_fwd", math.nan, math.nan, q[2], "matrix", params)
    s = step
    flops = 2.0 * h_q * (d + d_v) * (s.c_sqsk - s.c_sqsq / 2.0 + s.g_sqsk)
    elems_q = (s.c_sq + s.g_sq) * (h_q * (d + d_v) + h_kv * (d + d_v))
    elems_kv = ((s.c_sk - s.c_sq) + (s.g_sk - s.g_sq)) * h_kv * (d + d_v)
    params.update({k: getattr(s, k) for k in ("c_sq", "c_sk", "c_sqsq", "c_sqsk", "g_sq", "g_sk", "g_sqsq", "g_sqsk")})
    return OpModel("InferenceAttention_fwd", flops, elems_q * bq + elems_kv * bkv, q[2], "matrix", params)


#: words in a serving engine's attention op name (vLLM, SGLang, AITER, FlashInfer, flash-attn): the query's
#: shape ([T, H, d]) then decides (:func:`inference_attention`)
ATTENTION_WORDS = ("attention", "attn", "mha", "fmha", "mla", "paged", "pa_decode", "varlen_fwd", "batch_prefill",
                   "batch_decode", "single_prefill", "single_decode", "flash_fwd")  # fmt: skip


_KV_STORE_WORDS = ("and_cache", "store_cache", "to_cache", "write_cache", "set_kv", "save_kv")


def is_attention_name(op: str) -> bool:
    """A serving engine's attention op, by its name (not an ``aten`` SDPA op, not a KV-cache store)."""
    low = op.lower()
    if low.startswith(("aten::", "triton_")) or any(w in low.split("::")[-1] for w in _KV_STORE_WORDS):
        return False
    return any(w in low for w in ATTENTION_WORDS) and "backward" not in low and "bwd" not in low


def moe(dims: list[Any], types: list[Any]) -> OpModel | None:
    t = _tensors(dims, types)
    hidden = next((x for x in t if len(x[1]) == 2 and x[2] in FLOATS), None)
    if hidden is None:
        return None
    tokens, h = hidden[1]
    w = [x for x in t if len(x[1]) == 3]
    w1 = next((x for x in w if x[1][2] == h), None)
    w2 = next((x for x in w if x is not w1 and x[1][1] == h), None)
    topk = next((x for x in t if len(x[1]) == 2 and x[1][0] == tokens and x is not hidden and x[1][1] <= 64), None)
    if w1 is None or w2 is None or topk is None:
        return None
    e, n1, _ = w1[1]
    n2 = w2[1][2]
    k = topk[1][1]
    flops = 2.0 * tokens * k * h * (n1 + n2)
    nbytes = numel(w1[1]) * w1[3] + numel(w2[1]) * w2[3] + 2 * tokens * h * hidden[3]
    params = {"tokens": tokens, "hidden": h, "experts": e, "topk": k, "N1": n1, "N2": n2, "dtype": hidden[2]}
    return OpModel("MoE", flops, nbytes, w1[2] if w1[2] in FLOATS else hidden[2], "matrix", params)


def _vector(category: str, flops: float, nbytes: float, dt: str | None, **params: Any) -> OpModel:
    return OpModel(category, flops, nbytes, dt, "vector", params)


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a2, b2 = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return [max(x, y) for x, y in zip(a2, b2, strict=True)]


def _rms_norm(t: list[Tensor], low: str) -> OpModel:
    x = t[0]
    n = numel(x[1])
    fused_add = "add" in low
    weight = next((y for y in t[1:] if len(y[1]) == 1), None)
    nbytes = 2 * n * x[3] + (numel(weight[1]) * weight[3] if weight else 0) + (2 * n * x[3] if fused_add else 0)
    return _vector("RMSNorm_fwd", (5 if fused_add else 4) * n, nbytes, x[2], shape=x[1], fused_add=fused_add)


def _normalization(t: list[Tensor]) -> OpModel:
    x = t[0]
    n = numel(x[1])
    extra = sum(numel(y[1]) * y[3] for y in t[1:] if len(y[1]) == 1)
    return _vector("Normalization", 5 * n, 2 * n * x[3] + extra, x[2], shape=x[1])


def _rope(t: list[Tensor]) -> OpModel | None:
    floats = [y for y in t if y[2] in FLOATS]
    if not floats:
        return None
    tokens = floats[0][1][0]
    qk = [y for y in floats if y[1][0] == tokens]
    cache = [y for y in floats if y[1][0] != tokens]
    pos = [y for y in t if y[2] not in FLOATS and y[1][0] == tokens]
    n = sum(numel(y[1]) for y in qk)
    rot = cache[0][1][-1] if cache else 0
    nbytes = 2 * sum(numel(y[1]) * y[3] for y in qk)
    nbytes += tokens * rot * (cache[0][3] if cache else 0) + sum(numel(y[1]) * y[3] for y in pos)
    return _vector("RoPE_fwd", 3 * n, nbytes, qk[0][2] if qk else None, tokens=tokens, elements=n)


def _embedding(t: list[Tensor]) -> OpModel | None:
    if len(t) < 2:
        return None
    w, idx = t[0], t[1]
    rows = numel(idx[1])
    d = w[1][-1]
    return _vector("Embedding", 0, 2 * rows * d * w[3] + rows * idx[3], w[2], rows=rows, dim=d)


def _act_and_mul(t: list[Tensor]) -> OpModel:
    x = max(t, key=lambda y: numel(y[1]))
    n_out = numel(x[1]) // 2
    return _vector("BinaryElementwise", 5 * n_out, numel(x[1]) * x[3] + n_out * x[3], x[2], out=n_out)


def _aten_vector(base: str, t: list[Tensor]) -> OpModel | None:
    """Copies, reductions and elementwise ops of ``aten``."""
    first = t[0]
    if base in COPY:
        if base in ("fill_", "zero_"):
            return _vector("Copy", 0, numel(first[1]) * first[3], first[2], shape=first[1])
        if base == "copy_" and len(t) >= 2:
            dst, src = t[0], t[1]
            return _vector("Copy", 0, numel(src[1]) * src[3] + numel(dst[1]) * dst[3], dst[2], shape=dst[1])
        moved = sum(numel(y[1]) * y[3] for y in t)
        return _vector("Copy", 0, 2 * moved, first[2], shape=first[1])
    if base in REDUCE or base == "linalg_vector_norm":
        n = numel(first[1])
        out = n if base in ("cumsum", "cumprod") else 0  # a scan writes as much as it reads
        return _vector("Reduce_fwd", n, (n + out) * first[3], first[2], shape=first[1])
    if base in UNARY or (base in BINARY and len(t) == 1):
        n = numel(first[1])
        cat = "UnaryElementwise"
        return _vector(cat, n, 2 * n * first[3], first[2], shape=first[1])
    if base in BINARY and len(t) >= 2:
        a, b = t[0], t[1]
        out = _broadcast(a[1], b[1])
        n = numel(out)
        return _vector(
            "BinaryElementwise", n, numel(a[1]) * a[3] + numel(b[1]) * b[3] + n * a[3], a[2], shape_a=a[1], shape_b=b[1]
        )
    return None


_NORMS = ("layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "batch_norm")
_SOFTMAX = ("softmax", "_softmax", "log_softmax", "_log_softmax", "safe_softmax", "_safe_softmax")


def _special(op: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    """Families whose model is TraceLens's (the same arithmetic; :mod:`tl_models` has the formulas):
    convolution, SGLang's KV-cache store, Inductor's generated Triton ops."""
    m = moe_model(op, dims, types, concrete)
    if m is not None:
        return m
    try:
        if op in ("aten::convolution", "aten::_convolution", "aten::conv2d", "aten::conv1d", "aten::conv3d"):
            return tl_models.conv(dims, types, concrete)
        if op == "sglang::store_cache":
            return tl_models.store_cache(dims, types)
        if op.startswith(("triton_poi_", "triton_red_", "triton_per_")):
            return tl_models.triton_compiled(op, dims, types, concrete)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    return None


def model_op(
    op: str, dims: list[Any], types: list[Any], concrete: list[Any], step: StepInfo | None = None
) -> OpModel | None:
    """The FLOPs/bytes model of one op call, or None when none applies."""
    low = op.lower()
    base = _base(op)
    ns = op.split("::", 1)[0] if "::" in op else ""
    if op in GEMM_OPS:
        return gemm(op, dims, types, concrete)
    if op in SDPA_CAUSAL_ARG:
        return sdpa(op, dims, types, concrete)
    special = _special(op, dims, types, concrete)
    if special is not None:
        return special
    if ns != "aten":
        if "moe" in low or "expert" in low:
            return moe(dims, types)
        if is_attention_name(op):
            return inference_attention(dims, types, step)
        if "gemm" in low or low.endswith(("_mm", "::mm", "matmul", "linear")):
            return gemm(op, dims, types, concrete)
    t = _tensors(dims, types)
    if not t:
        return None
    if "rms" in low and "norm" in low:
        return _rms_norm(t, low)
    if base in _NORMS:
        return _normalization(t)
    if "rotary" in low or "rope" in low:
        return _rope(t)
    if base in _SOFTMAX:
        n = numel(t[0][1])
        return _vector("Softmax", 5 * n, 2 * n * t[0][3], t[0][2], shape=t[0][1])
    if base == "embedding":
        return _embedding(t)
    if "silu_and_mul" in low or "gelu_and_mul" in low or "act_and_mul" in low:
        return _act_and_mul(t)
    if ns not in ("aten", ""):
        return None
    return _aten_vector(base, t)
