"""Registers the AMD profilers (``performance.backend: rocprofv3 | rocprof-compute``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magpie_core import hookimpl
from magpie_profilers_amd.rocprof_compute import RocprofComputeProfiler
from magpie_profilers_amd.rocprofv3 import Rocprofv3Profiler


@hookimpl
def magpie_register_profilers(register: Callable[[Any], None]) -> None:
    register(Rocprofv3Profiler())
    register(RocprofComputeProfiler())
