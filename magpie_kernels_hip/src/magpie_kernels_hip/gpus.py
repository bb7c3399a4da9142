"""AMD GPUs as amd-smi or rocm-smi report them (JSON), and gfx targets from rocminfo."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

from magpie_core.reports import GpuInfo

AMD_SMI_ARGS = ["static", "--asic", "--vram", "--driver", "--json"]
ROCM_SMI_ARGS = ["--showproductname", "--showmeminfo", "vram", "--showuse", "--showdriverversion", "--json"]


def _run(argv: list[str]) -> str | None:
    tool = shutil.which(argv[0])
    if not tool:
        return None
    try:
        proc = subprocess.run([tool, *argv[1:]], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _json_part(text: str) -> Any:
    """The JSON document in a tool's stdout (rocm-smi may print warnings before it)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    try:
        return json.loads(text[min(starts) :])
    except ValueError:
        return None


def _mib(value: Any, unit: str | None = None) -> int | None:
    """Memory sizes as the tools write them: bytes (rocm-smi), ``{"value", "unit"}`` or ``"192 MB"`` (amd-smi)."""
    if isinstance(value, dict):
        return _mib(value.get("value"), value.get("unit"))
    if isinstance(value, str):
        match = re.match(r"\s*([\d.]+)\s*([A-Za-z]*)", value)
        if not match:
            return None
        value, unit = float(match.group(1)), match.group(2) or unit
    if not isinstance(value, (int, float)):
        return None
    scale = {"b": 1 / 2**20, "kb": 1 / 1024, "kib": 1 / 1024, "mb": 1, "mib": 1, "gb": 1024, "gib": 1024}
    return int(value * scale.get((unit or "b").lower(), 1))


def parse_rocm_smi(text: str) -> list[GpuInfo]:
    """``rocm-smi --showproductname --showmeminfo vram --showuse --showdriverversion --json``."""
    data = _json_part(text)
    if not isinstance(data, dict):
        return []
    driver = (data.get("system") or {}).get("Driver version")
    gpus = []
    for key, card in data.items():
        match = re.fullmatch(r"card(\d+)", key)
        if not match or not isinstance(card, dict):
            continue
        fields = {k.lower(): v for k, v in card.items()}
        use = fields.get("gpu use (%)")
        gpus.append(
            GpuInfo(
                index=int(match.group(1)),
                vendor="amd",
                name=str(fields.get("card series") or fields.get("card model") or "AMD GPU"),
                arch=fields.get("gfx version"),
                memory_total_mib=_mib(_int(fields.get("vram total memory (b)"))),
                memory_used_mib=_mib(_int(fields.get("vram total used memory (b)"))),
                utilization_pct=float(use) if _is_number(use) else None,
                driver=driver,
                uuid=fields.get("unique id"),
                source="rocm-smi",
            )
        )
    return gpus


def parse_amd_smi(text: str) -> list[GpuInfo]:
    """``amd-smi static --asic --vram --driver --json`` (a list of GPUs; older releases: a mapping)."""
    data = _json_part(text)
    if isinstance(data, dict):
        data = data.get("gpu_data") or [dict(v, gpu=k) for k, v in data.items() if isinstance(v, dict)]
    if not isinstance(data, list):
        return []
    gpus = []
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            continue
        asic, vram, driver = item.get("asic") or {}, item.get("vram") or {}, item.get("driver") or {}
        index = item.get("gpu", position)
        if isinstance(index, str):
            index = int(re.sub(r"\D", "", index) or position)
        gpus.append(
            GpuInfo(
                index=int(index),
                vendor="amd",
                name=str(asic.get("market_name") or asic.get("device_id") or "AMD GPU"),
                arch=asic.get("target_graphics_version"),
                memory_total_mib=_mib(vram.get("size")),
                driver=driver.get("version") if isinstance(driver, dict) else None,
                uuid=asic.get("asic_serial"),
                source="amd-smi",
            )
        )
    return gpus


def parse_rocminfo(text: str) -> list[str]:
    """The gfx targets of the GPU agents rocminfo lists (``Name: gfx942``)."""
    return re.findall(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", text, flags=re.M)


def _int(value: Any) -> int | None:
    return int(value) if _is_number(value) else None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def amd_gpus() -> list[GpuInfo]:
    """AMD GPUs from amd-smi, else rocm-smi; empty when neither tool is present or sees one."""
    text = _run(["amd-smi", *AMD_SMI_ARGS])
    gpus = parse_amd_smi(text) if text else []
    if not gpus:
        text = _run(["rocm-smi", *ROCM_SMI_ARGS])
        gpus = parse_rocm_smi(text) if text else []
    return gpus


def rocminfo_targets() -> list[str]:
    text = _run(["rocminfo"])
    return parse_rocminfo(text) if text else []
