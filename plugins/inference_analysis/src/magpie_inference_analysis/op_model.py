"""What every FLOPs/bytes model gives (:class:`OpModel`) and the torch dtypes it reads (:data:`DTYPES`): shared by
magpie's own models (:mod:`models`, which dispatches to the others), TraceLens's conventions (:mod:`tl_models`),
the fused MoE ops' (:mod:`moe_models`) and the MoE pseudo-ops' (:mod:`pseudo_ops`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# torch type spelling -> (short dtype, bytes per stored element)
DTYPES: dict[str, tuple[str, float]] = {
    "c10::BFloat16": ("bf16", 2),
    "c10::Half": ("fp16", 2),
    "float": ("fp32", 4),
    "double": ("fp64", 8),
    "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1),
    "c10::Float8_e8m0fnu": ("fp8", 1),
    "c10::Float4_e2m1fn_x2": ("fp4", 1),
    "signed char": ("int8", 1),
    "c10::qint8": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
    "short int": ("int16", 2),
    "int": ("int32", 4),
    "long int": ("int64", 8),
    "long": ("int64", 8),
    "c10::complex<float>": ("fp32", 8),
}


@dataclass
class OpModel:
    category: str
    flops: float
    bytes: float
    dtype: str | None
    kind: str  # "matrix" | "vector"
    params: dict[str, Any] = field(default_factory=dict)
