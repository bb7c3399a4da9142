"""NVIDIA GPUs from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from magpie_core import hookimpl
from magpie_core.reports import GpuInfo

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
                visible_devices_env="CUDA_VISIBLE_DEVICES",
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
