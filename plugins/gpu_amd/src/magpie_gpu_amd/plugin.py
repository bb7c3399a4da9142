"""AMD GPUs from ``amd-smi`` JSON (``static --asic`` and ``metric --usage --mem-usage``), else ``rocm-smi --json``."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import ContainerGpuAccess
from magpie_core.reports import GpuInfo

VISIBLE_DEVICES_ENV = "HIP_VISIBLE_DEVICES"
#: what a ROCm container needs to reach the GPUs (the kernel driver and render nodes) and to be profiled
CONTAINER_DEVICE_FLAGS = [
    "--device",
    "/dev/kfd",
    "--device",
    "/dev/dri",
    "--group-add",
    "video",
    "--security-opt",
    "seccomp=unconfined",
    "--cap-add",
    "SYS_PTRACE",
]


def _json_document(text: str) -> Any:
    """The JSON document in a tool's stdout (rocm-smi may print warnings before it)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return json.loads(text[min(starts) :] if starts else text)


def _rows(data: Any) -> list[dict[str, Any]]:
    """amd-smi prints a list of per-GPU objects; newer releases wrap it in ``{"gpu_data": [...]}``."""
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    return [row for row in data if isinstance(row, dict)] if isinstance(data, list) else []


def _value(obj: Any) -> float | None:
    if isinstance(obj, dict):
        obj = obj.get("value")
    try:
        return float(obj)
    except (TypeError, ValueError):  # "N/A"
        return None


def _mib(obj: Any) -> int | None:
    value = _value(obj)
    if value is None:
        return None
    unit = obj.get("unit", "MB") if isinstance(obj, dict) else "MB"
    scale = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}.get(str(unit).upper(), 1.0)
    return int(value * scale)


def parse_amd_smi(static_json: str, metric_json: str) -> list[GpuInfo]:
    metrics = {row.get("gpu"): row for row in _rows(_json_document(metric_json or "[]"))}
    gpus = []
    for row in _rows(_json_document(static_json)):
        index = int(row.get("gpu", len(gpus)))
        asic = row.get("asic", {}) or {}
        metric = metrics.get(row.get("gpu"), {})
        usage = metric.get("usage", {}) or {}
        mem = metric.get("mem_usage", {}) or {}
        gpus.append(
            GpuInfo(
                index=index,
                vendor="amd",
                name=str(asic.get("market_name") or "AMD GPU"),
                arch=asic.get("target_graphics_version"),
                memory_total_mib=_mib(mem.get("total_vram")),
                memory_used_mib=_mib(mem.get("used_vram")),
                utilization_pct=_value(usage.get("gfx_activity")),
                driver=(row.get("driver") or {}).get("version") if isinstance(row.get("driver"), dict) else None,
                source="amd-smi",
                visible_devices_env=VISIBLE_DEVICES_ENV,
            )
        )
    return gpus


def parse_rocm_smi(text: str) -> list[GpuInfo]:
    """``rocm-smi --showproductname --showmeminfo vram --showuse --json``."""
    gpus = []
    for card, info in _json_document(text).items():
        if not card.startswith("card") or not isinstance(info, dict):
            continue
        total, used = info.get("VRAM Total Memory (B)"), info.get("VRAM Total Used Memory (B)")
        gpus.append(
            GpuInfo(
                index=int(card[4:]),
                vendor="amd",
                name=str(info.get("Card Series") or info.get("Card series") or "AMD GPU"),
                arch=info.get("GFX Version"),
                memory_total_mib=int(int(total) / 2**20) if total else None,
                memory_used_mib=int(int(used) / 2**20) if used else None,
                utilization_pct=_value(info.get("GPU use (%)")),
                source="rocm-smi",
                visible_devices_env=VISIBLE_DEVICES_ENV,
            )
        )
    return sorted(gpus, key=lambda g: g.index)


def _run(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


@hookimpl
def magpie_detect_gpus() -> list[Any]:
    if tool := shutil.which("amd-smi"):
        static = _run([tool, "static", "--asic", "--driver", "--json"])
        metric = _run([tool, "metric", "--usage", "--mem-usage", "--json"]) or "[]"
        if static:
            try:
                return parse_amd_smi(static, metric)
            except (ValueError, TypeError, AttributeError):
                pass
    if tool := shutil.which("rocm-smi"):
        text = _run([tool, "--showproductname", "--showmeminfo", "vram", "--showuse", "--json"])
        if text:
            try:
                return parse_rocm_smi(text)
            except (ValueError, TypeError, AttributeError):
                return []
    return []


@hookimpl
def magpie_gpu_vendor_for_arch(arch: str) -> str | None:
    """``gfx942``, ``gfx90a``: AMD."""
    return "amd" if arch.lower().startswith("gfx") else None


@hookimpl
def magpie_visible_devices_env(vendor: str) -> str | None:
    return VISIBLE_DEVICES_ENV if vendor == "amd" else None


@hookimpl
def magpie_container_gpu_access(vendor: str, devices: list[int]) -> ContainerGpuAccess | None:
    """Device nodes for every GPU, narrowed by ``HIP_VISIBLE_DEVICES`` (ROCm has no ``--gpus``)."""
    if vendor != "amd":
        return None
    env = {VISIBLE_DEVICES_ENV: ",".join(map(str, devices))} if devices else {}
    return ContainerGpuAccess(args=list(CONTAINER_DEVICE_FLAGS), env=env)
