"""Registers the Nsight Compute profiler (``performance.backend: ncu``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magpie_core import hookimpl


@hookimpl
def magpie_register_profilers(register: Callable[[Any], None]) -> None:
    from magpie_profilers_nvidia.ncu import NcuProfiler  # every command loads this module

    register(NcuProfiler())
