"""This distribution's kernel-name parsers on the real traces' names of its families, and on families absent
from them (the shared table: :mod:`tests.helpers.kernel_names`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.kernel_names import check_extra, check_row, extra_of, rows_of

DIST = "magpie-parsers-pytorch"


@pytest.mark.parametrize("row", rows_of(DIST), ids=lambda r: r["name"][:60])
def test_real_kernel_names(row: dict[str, Any]) -> None:
    check_row(row)


@pytest.mark.parametrize("name,platform,family,category", extra_of(DIST), ids=lambda x: str(x)[:40])
def test_other_families(name: str, platform: str | None, family: str, category: str) -> None:
    check_extra(name, platform, family, category)


def test_triton_confidence_uses_launch_context() -> None:
    from magpie_core.kernel_names import parse_kernel_name

    bare = parse_kernel_name("_my_fused_kernel")
    ctx = parse_kernel_name(
        "_my_fused_kernel", {"launch_api": "cuLaunchKernel", "python_frames": ["triton/runtime/jit.py(580): run"]}
    )
    assert bare.family == ctx.family == "triton" and ctx.confidence > bare.confidence
