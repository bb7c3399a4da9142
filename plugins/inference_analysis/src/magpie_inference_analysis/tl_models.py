"""TraceLens's FLOPs/bytes conventions for the op families where they differ from magpie's own models.

Used only for ``unified_perf_summary.csv`` (TraceLens's table, TraceLens's numbers); magpie's roofline CSV
keeps :mod:`models`. Facts from TraceLens commit 171dd747 (PerfModel/perf_model.py, extensions), our code:

* bytes per element by TraceLens's names (``float``/``int``/``Scalar`` 4, ``long int``/``double`` 8, bf16/fp16 2,
  fp8/``unsigned char`` 1); a dtype it does not know (``bool``) leaves bytes empty;
* unary elementwise (``copy_``, ``neg``, ``silu``, ``rsqrt``...): 1 FLOP per element of the first input; bytes
  n·(in + out), the output dtype from the second argument when there is one;
* binary elementwise (``add``, ``mul``, ``div`` and in-place forms): 1 FLOP per broadcast output element;
  bytes in1 + in2 + out (a 0-d operand counts one element);
* reductions (``sum``, ``mean``, ``linalg_norm``, ``cumsum``...): 1 FLOP per input element; bytes = input +
  output, the output one element (``dim`` is a string in the trace, so TraceLens never parses it) or, for
  ``cumsum``/``cumprod``, as large as the input;
* layer norm: 5·N + 6·C FLOPs, bytes 2·N + 6·C elements (N elements, C the normalized size);
* convolution: 2·out·prod(weight[1:]) (+ out with a bias); bytes input + weight (+ bias) + output;
* ``*silu_and_mul``: 5 FLOPs per output element; bytes 2·out·in + out·out_dtype;
* ``sgl_kernel::rotary_embedding``: 3 FLOPs per rotated element; bytes 2·rotated·bpe (q and k read and
  written; the cos/sin cache and positions are not counted);
* ``sglang::store_cache``: 0 FLOPs; bytes 4·k elements (k and v read, written into the cache);
* Inductor ``triton_poi/red/per_*``: FLOPs per element of the ATen ops named in the kernel name times
  xnumel (the last integer concrete input; ×rnumel for a reduction); bytes = every tensor argument
  (dtypes ``c10::BFloat16``... only) + one more write of the first for a pointwise kernel.
"""

from __future__ import annotations

import math
import re
from typing import Any

from magpie_inference_analysis.op_model import DTYPES, OpModel

_BPE = {"double": 8, "long int": 8, "float": 4, "scalar": 4, "int": 4, "c10::half": 2, "c10::bfloat16": 2,
        "c10::float8_e4m3fnuz": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "c10::float8_e8m0fnu": 1,
        "unsigned char": 1, "signed char": 1, "c10::float4_e2m1fn_x2": 1}  # fmt: skip
_TRITON_BPE = {"c10::BFloat16": 2, "c10::Half": 2, "c10::Float": 4, "c10::Double": 8, "c10::Byte": 1,
               "c10::Char": 1, "c10::Int": 4, "c10::Long": 8}  # fmt: skip
_TRITON_FLOPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "pow": 2, "sqrt": 2, "rsqrt": 2, "exp": 4, "log": 4,
                 "sigmoid": 4, "tanh": 4, "relu": 1, "silu": 4, "gelu": 8, "mean": 1, "sum": 1, "var": 2,
                 "abs": 1, "neg": 1, "reciprocal": 2, "ne": 1, "eq": 1, "lt": 1, "gt": 1}  # fmt: skip
UNARY = {"aten::copy", "aten::copy_", "aten::clamp_min", "aten::clamp_min_", "aten::clamp_max", "aten::clamp_max_",
         "aten::sigmoid", "aten::rsqrt", "aten::silu", "aten::neg", "aten::pow"}  # fmt: skip
BINARY = {"aten::div", "aten::div_", "aten::mul", "aten::mul_", "aten::add", "aten::add_"}
REDUCE = {"aten::sum", "aten::mean", "aten::max", "aten::min", "aten::norm", "aten::linalg_norm", "aten::std",
          "aten::var", "aten::logsumexp", "aten::cumsum", "aten::cumprod", "aten::amin", "aten::amax"}  # fmt: skip
LAYER_NORM = {"aten::layer_norm", "aten::native_layer_norm", "aten::miopen_layer_norm", "aten::cudnn_layer_norm"}
SILU_AND_MUL = {"aiter::silu_and_mul", "_C::silu_and_mul", "sgl_kernel::silu_and_mul"}


def bpe(t: Any) -> float | None:
    return _BPE.get(t.lower()) if isinstance(t, str) else None


def _n(shape: Any) -> int:
    return math.prod(shape) if isinstance(shape, list) else 0


def _short(t: Any) -> str | None:
    return DTYPES.get(t, (None, 0))[0] if isinstance(t, str) else None


def _model(cat: str, flops: float, nbytes: float | None, dtype: Any, kind: str = "vector", **p: Any) -> OpModel:
    return OpModel(cat, float(flops), math.nan if nbytes is None else float(nbytes), _short(dtype), kind, p)


def _at(xs: list[Any], i: int, default: Any = None) -> Any:
    return xs[i] if i < len(xs) else default


def unary(dims: list[Any], types: list[Any]) -> OpModel | None:
    n = _n(_at(dims, 0))
    b_in = bpe(_at(types, 0))
    b_out = bpe(_at(types, 1)) if _at(dims, 1) else b_in
    nbytes = None if b_in is None or b_out is None else n * (b_in + b_out)
    return _model("UnaryElementwise", n, nbytes, _at(types, 0), op_shape=_at(dims, 0))


def binary(dims: list[Any], types: list[Any]) -> OpModel | None:
    a, b = list(_at(dims, 0, [])), list(_at(dims, 1, []))
    nd = max(len(a), len(b))
    out = [max(x, y) for x, y in zip([1] * (nd - len(a)) + a, [1] * (nd - len(b)) + b, strict=True)]
    b1, b2 = bpe(_at(types, 0)), bpe(_at(types, 1))
    if _at(dims, 2):
        b3 = bpe(_at(types, 2))
    elif b1 and b2:
        b3 = max(b1, b2) if a and b else b1
    else:
        b3 = None
    n_out = math.prod(out)
    nbytes = None if None in (b1, b2, b3) else math.prod(a) * b1 + math.prod(b) * b2 + n_out * b3  # type: ignore[operator]
    return _model("BinaryElementwise", n_out, nbytes, _at(types, 0), shape_in1=a, shape_in2=b)


def reduce(name: str, dims: list[Any], types: list[Any]) -> OpModel | None:
    n = _n(_at(dims, 0))
    b = bpe(_at(types, 0))
    n_out = n if ("cumsum" in name or "cumprod" in name) else 1
    return _model("Reduce_fwd", n, None if b is None else n * b + n_out * b, _at(types, 0), num_input_elems=n)


def layer_norm(dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    n = _n(_at(dims, 0))
    ints = [int(x) for x in re.findall(r"-?\d+", str(_at(concrete, 1, "")))]
    c = math.prod(ints) if ints else 1
    b = bpe(_at(types, 0))
    nbytes = None if b is None else 2 * n * b + 6 * c * b
    return _model("Normalization", 5 * n + 6 * c, nbytes, _at(types, 0), num_elems=n, num_channels=c)


def _ints(text: Any, nd: int, default: int) -> list[int]:
    got = [int(x) for x in re.findall(r"-?\d+", str(text or ""))]
    if not got:
        return [default] * nd
    return got * nd if len(got) == 1 else got


def conv(dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    x, w = _at(dims, 0), _at(dims, 1)
    if not isinstance(x, list) or not isinstance(w, list) or len(x) < 3 or len(concrete) < 9:
        return None
    nd = len(x) - 2
    stride, pad, dil = _ints(concrete[3], nd, 1), _ints(concrete[4], nd, 0), _ints(concrete[5], nd, 1)
    spatial = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    out = [x[0], w[0], *spatial]
    bias = len(dims) == 3  # TraceLens's test: three recorded arguments
    flops = _n(out) * 2 * math.prod(w[1:]) + (_n(out) if bias else 0)
    b = bpe(_at(types, 0)) if _at(types, 0) == _at(types, 1) else None
    nbytes = None if b is None else (_n(x) + _n(w) + (out[1] if bias else 0) + _n(out)) * b
    return _model("CONV_fwd", flops, nbytes, _at(types, 0), "matrix", input_shape=x, filter_shape=w)


def silu_and_mul(dims: list[Any], types: list[Any]) -> OpModel | None:
    n = _n(_at(dims, 0))
    b_in, b_out = bpe(_at(types, 1)), bpe(_at(types, 0))
    nbytes = None if b_in is None or b_out is None else 2 * n * b_in + n * b_out
    return _model("UnaryElementwise", 5 * n, nbytes, _at(types, 1), op_shape=_at(dims, 0))


def sgl_rotary(dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    q, k = _at(dims, 1), _at(dims, 2)
    if not q or not k:
        return None
    head = q[-1]
    if str(_at(concrete, 3, "")).strip().isdigit():
        head = int(concrete[3])
    cache = _at(dims, 4)
    rot = cache[1] if isinstance(cache, list) and len(cache) > 1 else head
    n = q[0] * (q[1] // head + k[1] // head) * rot
    return _model("RoPE_fwd", 3 * n, 2 * n * (bpe(_at(types, 1)) or 2), _at(types, 1), num_elements=n)


def store_cache(dims: list[Any], types: list[Any]) -> OpModel | None:
    n = _n(_at(dims, 0))
    return _model("InferenceAttention", 0, 4 * n * (bpe(_at(types, 0)) or 2), _at(types, 0), nelems=n)


def triton_compiled(name: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | None:
    scalars = [int(c) for c in concrete if isinstance(c, str) and re.fullmatch(r"-?\d+", c.strip())]
    if not concrete or not dims or not types or not scalars:
        return None
    pointwise = name.startswith("triton_poi_")
    xnumel, rnumel = (scalars[-2], scalars[-1]) if not pointwise and len(scalars) >= 2 else (scalars[-1], 1)
    sizes = [(d, _TRITON_BPE.get(t, 0)) for d, t in zip(dims, types, strict=False) if t != "Scalar" and d]
    total = float(sum(_n(d) * b for d, b in sizes))
    if pointwise and sizes:
        total += sizes[0][1] * xnumel
    m = re.match(r"triton_(?:poi|red|per)_fused_(.+)_(\d+)$", name)
    fpe = sum(_TRITON_FLOPS.get(t, 0) for t in (m.group(1).split("_") if m else []))
    return _model("triton", fpe * xnumel * rnumel, total, None, xnumel=xnumel, rnumel=rnumel)


def tl_model(name: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> OpModel | bool | None:
    """TraceLens's model of the op, or True where TraceLens's convention is magpie's own (use :mod:`models`)."""
    if name in UNARY:
        return unary(dims, types)
    if name in BINARY:
        return binary(dims, types)
    if name in REDUCE:
        return reduce(name, dims, types)
    if name in LAYER_NORM:
        return layer_norm(dims, types, concrete)
    if name == "aten::convolution":
        return conv(dims, types, concrete)
    if name in SILU_AND_MUL:
        return silu_and_mul(dims, types)
    if name == "sgl_kernel::rotary_embedding":
        return sgl_rotary(dims, types, concrete)
    if name == "sglang::store_cache":
        return store_cache(dims, types)
    if name.startswith(("triton_poi_", "triton_red_", "triton_per_")):
        return triton_compiled(name, dims, types, concrete)
    return True
