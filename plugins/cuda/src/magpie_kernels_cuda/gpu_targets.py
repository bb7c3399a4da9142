"""NVIDIA GPUs as the installed GPU-detection plugins report them (``magpie_detect_gpus``).

The CUDA backend does not parse nvidia-smi itself: ``magpie-gpu-nvidia`` does,
for every part of magpie that needs to know the GPUs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magpie_core.plugins import get_plugin_manager

if TYPE_CHECKING:  # the report models (pydantic) are not imported when the plugin loads (every magpie command)
    from magpie_core.reports import GpuInfo


def nvidia_gpus() -> list[GpuInfo]:
    return [g for g in get_plugin_manager().detect_gpus() if g.vendor == "nvidia"]
