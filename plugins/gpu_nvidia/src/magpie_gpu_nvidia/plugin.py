"""NVIDIA GPUs from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from magpie_core import hookimpl
from magpie_core.interfaces import ContainerGpuAccess

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
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
    from magpie_core.reports import GpuInfo

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


# --- hardware control: clocks, power limit, persistence -------------------------------------

#: fields of ``nvidia-smi --query-gpu`` recorded in every report (present on every driver since r450)
HARDWARE_QUERY = (
    "index,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,clocks.applications.graphics,"
    "clocks.applications.memory,power.limit,power.default_limit,power.min_limit,power.max_limit,"
    "power.draw,persistence_mode,temperature.gpu"
)
_HARDWARE_KEYS = (
    "index",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "max_sm_clock_mhz",
    "max_mem_clock_mhz",
    "app_sm_clock_mhz",
    "app_mem_clock_mhz",
    "power_limit_w",
    "default_power_limit_w",
    "min_power_limit_w",
    "max_power_limit_w",
    "power_draw_w",
    "persistence_mode",
    "temperature_c",
)


def parse_hardware_csv(text: str) -> list[dict[str, Any]]:
    """Rows of ``nvidia-smi --query-gpu=<HARDWARE_QUERY> --format=csv,noheader,nounits``."""
    rows = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(_HARDWARE_KEYS) or not cols[0].isdigit():
            continue
        row: dict[str, Any] = {k: _num(v) for k, v in zip(_HARDWARE_KEYS, cols, strict=True)}
        row["index"] = int(cols[0])
        row["persistence_mode"] = cols[12] if cols[12] in ("Enabled", "Disabled") else None
        row["source"] = "nvidia-smi"
        rows.append(row)
    return rows


class NvidiaHardware:
    """``nvidia-smi``: query; ``-pl`` power limit, ``-lgc``/``-lmc`` clock locks, ``-rgc``/``-rmc`` resets."""

    vendor = "nvidia"

    def __init__(self, tool: str | None = None) -> None:
        self.tool = tool or shutil.which("nvidia-smi") or "nvidia-smi"

    def _run(self, args: list[str]) -> str:
        from magpie_core.machine.hardware import run_vendor_tool

        return run_vendor_tool(self.tool, "nvidia-smi", args)

    def query(self, indices: list[int] | None = None) -> list[dict[str, Any]]:
        args = [f"--query-gpu={HARDWARE_QUERY}", "--format=csv,noheader,nounits"]
        if indices:
            args += ["-i", ",".join(map(str, indices))]
        return parse_hardware_csv(self._run(args))

    def apply(self, index: int, settings: dict[str, Any]) -> dict[str, Any]:
        from magpie_core.interfaces import HardwareControlError

        levels = [k for k in ("gpu_clock_level", "mem_clock_level") if k in settings]
        if levels:
            raise HardwareControlError(
                f"gpu.hardware {', '.join(levels)}: performance levels are an AMD setting; on NVIDIA give "
                "frequency.gpu_clock_mhz / mem_clock_mhz"
            )
        before = self.query([index])
        saved: dict[str, Any] = {"power_limit_w": before[0]["power_limit_w"] if before else None}
        try:
            if "power_limit_w" in settings:
                self._run(["-i", str(index), "-pl", f"{settings['power_limit_w']:g}"])
                saved["power_set"] = True
            if "gpu_clock_mhz" in settings:
                self._run(["-i", str(index), "-lgc", ",".join(map(str, settings["gpu_clock_mhz"]))])
                saved["gpu_locked"] = True
            if "mem_clock_mhz" in settings:
                self._run(["-i", str(index), "-lmc", ",".join(map(str, settings["mem_clock_mhz"]))])
                saved["mem_locked"] = True
        except HardwareControlError:
            self.restore(index, saved)  # nothing stays half-applied
            raise
        return saved

    def restore(self, index: int, saved: dict[str, Any]) -> None:
        if saved.get("mem_locked"):
            self._run(["-i", str(index), "-rmc"])
        if saved.get("gpu_locked"):
            self._run(["-i", str(index), "-rgc"])
        if saved.get("power_set") and saved.get("power_limit_w"):
            self._run(["-i", str(index), "-pl", f"{saved['power_limit_w']:g}"])


@hookimpl
def magpie_gpu_hardware_control(vendor: str) -> NvidiaHardware | None:
    return NvidiaHardware() if vendor == "nvidia" and shutil.which("nvidia-smi") else None
