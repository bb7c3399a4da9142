"""AMD GPUs from ``amd-smi`` JSON (``static --asic`` and ``metric --usage --mem-usage``), else ``rocm-smi --json``."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from magpie_core import hookimpl
from magpie_core.interfaces import ContainerGpuAccess

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
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
    from magpie_core.reports import GpuInfo

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
    from magpie_core.reports import GpuInfo

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


# --- hardware control: clocks, power cap, performance level -----------------------------------


def _find(obj: Any, *keys: str) -> Any:
    """The first value under any of ``keys`` anywhere in ``obj`` (amd-smi's JSON nests differ by release)."""
    if isinstance(obj, dict):
        for key in keys:
            if key in obj:
                return obj[key]
        for value in obj.values():
            found = _find(value, *keys)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for value in obj:
            found = _find(value, *keys)
            if found is not None:
                return found
    return None


def _watts(obj: Any) -> float | None:
    value = _value(obj)
    unit = str(obj.get("unit", "W")) if isinstance(obj, dict) else "W"
    if value is None:
        return None
    return value / 1e6 if unit.lower() in ("uw", "µw") else value


def parse_amd_hardware(metric_json: str, limit_json: str) -> list[dict[str, Any]]:
    """Rows from ``amd-smi metric --clock --power --json`` and ``amd-smi static --limit --json``."""
    limits = {row.get("gpu"): row for row in _rows(_json_document(limit_json or "[]"))}
    out = []
    for row in _rows(_json_document(metric_json)):
        clock, limit = row.get("clock") or {}, limits.get(row.get("gpu"), {})
        out.append(
            {
                "index": int(row.get("gpu", len(out))),
                "sm_clock_mhz": _value(_find(clock.get("gfx_0") or clock, "clk")),
                "mem_clock_mhz": _value(_find(clock.get("mem_0") or {}, "clk")),
                "max_sm_clock_mhz": _value(_find(clock.get("gfx_0") or {}, "max_clk")),
                "power_limit_w": _watts(_find(limit, "power_cap", "socket_power_limit", "ppt0_power_limit")),
                "max_power_limit_w": _watts(_find(limit, "max_power_cap", "max_power")),
                "power_draw_w": _watts(_find(row.get("power") or {}, "socket_power", "average_socket_power")),
                "perf_level": _find(row, "perf_level"),
                "persistence_mode": None,  # no such setting on AMD: the driver keeps state
                "source": "amd-smi",
            }
        )
    return out


class AmdHardware:
    """``amd-smi``: query; ``set --power-cap / --perf-level / --clk-level / --clk-limit``; ``reset --clocks``."""

    vendor = "amd"

    def __init__(self, tool: str | None = None) -> None:
        self.tool = tool or shutil.which("amd-smi") or "amd-smi"

    def _run(self, args: list[str]) -> str:
        from magpie_core.machine.hardware import run_vendor_tool

        return run_vendor_tool(self.tool, "amd-smi", args)

    def query(self, indices: list[int] | None = None) -> list[dict[str, Any]]:
        select = ["-g", *map(str, indices)] if indices else []
        metric = self._run(["metric", *select, "--clock", "--power", "--json"])
        try:
            limit = self._run(["static", *select, "--limit", "--json"])
        except Exception:  # older releases: no limit block
            limit = "[]"
        return parse_amd_hardware(metric, limit)

    def apply(self, index: int, settings: dict[str, Any]) -> dict[str, Any]:
        from magpie_core.interfaces import HardwareControlError

        before = self.query([index])
        saved: dict[str, Any] = {"power_limit_w": before[0]["power_limit_w"] if before else None}
        g = ["set", "-g", str(index)]
        try:
            if "power_limit_w" in settings:
                self._run([*g, "--power-cap", f"{settings['power_limit_w']:g}"])
                saved["power_set"] = True
            for key, clk in (("gpu_clock_level", "SCLK"), ("mem_clock_level", "MCLK")):
                if key in settings:
                    self._run([*g, "--perf-level", "MANUAL"])
                    self._run([*g, "--clk-level", clk, str(settings[key])])
                    saved["clocks_set"] = True
            for key, clk in (("gpu_clock_mhz", "sclk"), ("mem_clock_mhz", "mclk")):
                if key in settings:
                    low, high = settings[key]
                    self._run([*g, "--clk-limit", clk, "min", str(low)])
                    self._run([*g, "--clk-limit", clk, "max", str(high)])
                    saved["clocks_set"] = True
        except HardwareControlError:
            self.restore(index, saved)  # nothing stays half-applied
            raise
        return saved

    def restore(self, index: int, saved: dict[str, Any]) -> None:
        if saved.get("clocks_set"):
            self._run(["reset", "-g", str(index), "--clocks"])  # clock limits and levels, perf level auto
        if saved.get("power_set") and saved.get("power_limit_w"):
            self._run(["set", "-g", str(index), "--power-cap", f"{saved['power_limit_w']:g}"])


@hookimpl
def magpie_gpu_hardware_control(vendor: str) -> AmdHardware | None:
    return AmdHardware() if vendor == "amd" and shutil.which("amd-smi") else None
