"""Registers the AMD profilers (``performance.backend: rocprofv3 | rocprof-compute``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magpie_core import hookimpl


@hookimpl
def magpie_register_profilers(register: Callable[[Any], None]) -> None:
    from magpie_profilers_amd.rocprof_compute import RocprofComputeProfiler  # every command loads this module
    from magpie_profilers_amd.rocprofv3 import Rocprofv3Profiler

    register(Rocprofv3Profiler())
    register(RocprofComputeProfiler())
