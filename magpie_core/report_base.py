"""The base of every report model and the kernel-name parsers' result: what a ``magpie gap`` run needs of
:mod:`magpie_core.reports` (which re-exports all of it), without building the ~15 other report models (~5 ms).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Model", "ParsedKernelName", "empty_dict", "empty_list"]


def empty_list() -> list[Any]:
    """A new empty list, for ``Field(default_factory=empty_list)``: the same as ``list``, but pydantic reads the
    signature of every default factory when it builds a model, and a builtin's (``list``, ``dict``) it parses
    from text with :mod:`tokenize`, ~2 ms of every ``magpie gap`` run's result models."""
    return []


def empty_dict() -> dict[Any, Any]:
    """A new empty dict, for ``Field(default_factory=empty_dict)`` (why not ``dict``: :func:`empty_list`)."""
    return {}


class Model(BaseModel):
    """Base for report models: tolerant of extra keys so newer reports still load."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class ParsedKernelName(Model):
    """What a kernel-name parser says about one kernel name."""

    name: str
    family: str  # which parser family: cublas, ck_tile, inductor, ...
    kind: str | None = None  # how it was built: triton_jit, inductor, aten_native, tensile_gemm, hip_cpp, ...
    category: str = (
        "other"  # gemm, attention, norm, elementwise, reduce, copy/memset, moe, communication, sampling, other
    )
    function: str | None = None
    dtype: str | None = None
    tile: str | None = None
    config: dict[str, Any] = Field(default_factory=empty_dict)
    confidence: float = 1.0
    parser: str | None = None
