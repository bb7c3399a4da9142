"""Tools about the machine and the installation: ``hardware_spec``, ``list_plugins``, ``gpu_hardware_state``."""

from __future__ import annotations

import os
import platform
import sys
from typing import Annotated, Any

from pydantic import Field

from magpie_core import __version__, hookimpl
from magpie_core.hookspecs import Register
from magpie_core.machine.gpus import collect_gpu_info
from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import GpuInfo, ToolInfo
from magpie_mcp.annotations import tool_meta
from magpie_mcp.context import ToolFailure
from magpie_mcp.models import ToolModel


class HostInfo(ToolModel):
    hostname: str
    platform: str
    machine: str
    cpu_count: int | None
    python: str
    magpie_version: str


class HardwareSpec(ToolModel):
    gpu_count: int
    gpus: list[GpuInfo]
    tools: list[ToolInfo]
    host: HostInfo
    message: str | None = None


class PluginEntry(ToolModel):
    name: str
    module: str
    distribution: str
    version: str
    status: str
    error: str | None = None
    kinds: list[str]
    hooks: list[str]
    components: dict[str, list[str]]


class PluginList(ToolModel):
    plugins: list[PluginEntry]
    components: dict[str, list[str]] = Field(description="kind -> component names available")


@tool_meta("Hardware", read_only=True, idempotent=True, open_world=False)
def hardware_spec(
    device_id: Annotated[int | None, Field(description="one GPU by index; all when omitted", ge=0)] = None,
    include_all: Annotated[bool | None, Field(description="AMD Magpie compatibility: all GPUs (the default)")] = None,
) -> HardwareSpec:
    """GPUs (vendor, name, arch, memory, driver), the compilers/profilers found, and the host."""
    info = collect_gpu_info()
    gpus = [GpuInfo.model_validate(g) for g in info["gpus"]]
    if device_id is not None:
        chosen = [g for g in gpus if g.index == device_id]
        if not chosen:
            have = ", ".join(str(g.index) for g in gpus) or "none"
            raise ToolFailure(f"no GPU with index {device_id} (GPUs here: {have})")
        gpus = chosen
    return HardwareSpec(
        gpu_count=len(info["gpus"]),
        gpus=gpus,
        tools=[ToolInfo.model_validate(t) for t in info["tools"]],
        host=HostInfo(
            hostname=platform.node(),
            platform=platform.platform(),
            machine=platform.machine(),
            cpu_count=os.cpu_count(),
            python=sys.version.split()[0],
            magpie_version=__version__,
        ),
        message=info["message"],
    )


@tool_meta("Installed plugins", read_only=True, idempotent=True, open_world=False)
def list_plugins() -> PluginList:
    """Installed magpie plugins: distribution, version, load status and the components each provides."""
    manager = get_plugin_manager()
    plugins = [PluginEntry.model_validate(p.as_dict()) for p in manager.plugins.values()]
    return PluginList(plugins=plugins, components={k: sorted(manager.components(k)) for k in manager.kind_hooks})


@tool_meta("GPU clocks and power", read_only=True, idempotent=True, open_world=False)
def gpu_hardware_state() -> dict[str, Any]:
    """Each GPU's clocks (MHz), power limit and draw (W), persistence mode, from the vendor plugins
    (nvidia-smi, amd-smi). Read-only: settings change only through a run whose framework config
    enables gpu.hardware, never through this server (AMD Magpie's configure_gpu is not offered)."""
    from magpie_core.machine.hardware import record

    return record()


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(hardware_spec)
    register(list_plugins)
    register(gpu_hardware_state)
