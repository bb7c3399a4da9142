"""AMD GPUs as the GPU-detection plugins report them, and gfx targets from rocminfo.

The HIP backend does not parse amd-smi or rocm-smi itself: ``magpie-gpu-amd``
does, for every part of magpie that needs to know the GPUs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from magpie_core.plugins import get_plugin_manager

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import GpuInfo


def _run(argv: list[str]) -> str | None:
    tool = shutil.which(argv[0])
    if not tool:
        return None
    try:
        proc = subprocess.run([tool, *argv[1:]], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def parse_rocminfo(text: str) -> list[str]:
    """The gfx targets of the GPU agents rocminfo lists (``Name: gfx942``)."""
    return re.findall(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", text, flags=re.M)


def amd_gpus() -> list[GpuInfo]:
    return [g for g in get_plugin_manager().detect_gpus() if g.vendor == "amd"]


def rocminfo_targets() -> list[str]:
    text = _run(["rocminfo"])
    return parse_rocminfo(text) if text else []
