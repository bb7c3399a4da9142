"""NVIDIA GPUs from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import ContainerGpuAccess
from magpie_core.reports import GpuInfo

VISIBLE_DEVICES_ENV = "CUDA_VISIBLE_DEVICES"

QUERY = "index,name,uuid,memory.total,memory.used,utilization.gpu,driver_version,compute_cap"


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def parse_query_csv(text: str) -> list[GpuInfo]:
    """Rows of ``nvidia-smi --query-gpu=<QUERY> --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 8 or not cols[0].isdigit():
            continue
        index, name, uuid, total, used, util, driver, cap = cols[:8]
        total_n, used_n = _num(total), _num(used)
        gpus.append(
            GpuInfo(
                index=int(index),
                vendor="nvidia",
                name=name,
                uuid=uuid,
                arch=f"sm_{cap.replace('.', '')}" if _num(cap) is not None else None,
                memory_total_mib=int(total_n) if total_n is not None else None,
                memory_used_mib=int(used_n) if used_n is not None else None,
                utilization_pct=_num(util),
                driver=driver,
                source="nvidia-smi",
                visible_devices_env=VISIBLE_DEVICES_ENV,
            )
        )
    return gpus


@hookimpl
def magpie_detect_gpus() -> list[Any]:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        out = subprocess.run(
            [tool, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_query_csv(out.stdout) if out.returncode == 0 else []


@hookimpl
def magpie_gpu_vendor_for_arch(arch: str) -> str | None:
    """``sm_90``, ``sm90``, ``compute_90``: NVIDIA."""
    return "nvidia" if re.match(r"(sm_?\d+|compute_\d+)", arch.lower()) else None


@hookimpl
def magpie_visible_devices_env(vendor: str) -> str | None:
    # answers for an unknown vendor too: ROCm's HIP runtime honours CUDA_VISIBLE_DEVICES as well
    return VISIBLE_DEVICES_ENV if vendor in ("nvidia", "") else None


@hookimpl
def magpie_container_gpu_access(vendor: str, devices: list[int]) -> ContainerGpuAccess | None:
    """The NVIDIA Container Toolkit's ``--gpus`` (quoted: docker splits an unquoted list at the comma)."""
    if vendor != "nvidia":
        return None
    return ContainerGpuAccess(args=["--gpus", f'"device={",".join(map(str, devices))}"' if devices else "all"])
