"""NVIDIA GPUs as nvidia-smi reports them."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

from magpie_core.reports import GpuInfo

QUERY = "index,name,compute_cap,memory.total,memory.used,utilization.gpu,driver_version,uuid"


def _number(text: str) -> float | None:
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Rows of ``nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits``."""
    gpus = []
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 8 or not row[0].strip().isdigit():
            continue
        index, name, cap, total, used, util, driver, uuid = (c.strip() for c in row[:8])
        arch = None
        if cap and cap[0].isdigit() and "." in cap:
            major, minor = cap.split(".", 1)
            arch = f"sm_{major}{minor}"
        mem_total, mem_used = _number(total), _number(used)
        gpus.append(
            GpuInfo(
                index=int(index),
                vendor="nvidia",
                name=name,
                arch=arch,
                memory_total_mib=int(mem_total) if mem_total is not None else None,
                memory_used_mib=int(mem_used) if mem_used is not None else None,
                utilization_pct=_number(util),
                driver=driver or None,
                uuid=uuid or None,
                source="nvidia-smi",
            )
        )
    return gpus


def nvidia_gpus() -> list[GpuInfo]:
    """Every NVIDIA GPU nvidia-smi lists; empty when it is absent or sees none (never raises)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        proc = subprocess.run(
            [smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_nvidia_smi(proc.stdout) if proc.returncode == 0 else []
