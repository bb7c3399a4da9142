"""What this machine has: the GPUs the vendor plugins see and the tools the components rely on.

Used by ``magpie gpu-info`` and by the MCP tool ``hardware_spec``; a library
function, so that plugins need not import the command line."""

from __future__ import annotations

from typing import Any

from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import GpuInfo, ToolInfo


def collect_gpu_info() -> dict[str, Any]:
    """GPUs from every vendor plugin, and every tool any component relies on.

    Returns ``{"gpus": [GpuInfo dict], "tools": [ToolInfo dict], "message": str | None}``.
    """
    manager = get_plugin_manager()
    gpus = [GpuInfo.model_validate(g) if isinstance(g, dict) else g for g in manager.detect_gpus()]
    tools: dict[str, ToolInfo] = {}
    for kind in manager.kind_hooks:
        for component in manager.components(kind).values():
            tools_fn = getattr(component, "tools", None)
            for tool in tools_fn() if callable(tools_fn) else []:
                tools.setdefault(tool.name, tool)
    return {
        "gpus": [g.model_dump() for g in gpus],
        "tools": [t.model_dump() for t in sorted(tools.values(), key=lambda t: t.name)],
        "message": None if gpus else "no GPU found on this machine",
    }
