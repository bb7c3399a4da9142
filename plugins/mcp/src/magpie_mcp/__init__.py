"""magpie-mcp: the MCP server for AI agents (``magpie mcp``) and its built-in tools.

For a plugin that adds tools: :class:`ToolContext` (what a tool can receive from the
server) and :class:`ToolFailure` (a tool error with your message). See ``docs/mcp.md``.

The names are imported on first use: every ``magpie`` command loads this package's entry point, and only
``magpie mcp`` and the tool registration need them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magpie_mcp.config import McpConfig
    from magpie_mcp.context import ToolContext, ToolFailure
    from magpie_mcp.jobs import Job, JobInfo
    from magpie_mcp.models import ToolModel
    from magpie_mcp.trust import TrustError, TrustPolicy

#: public name -> the module that defines it
_WHERE = {
    "McpConfig": "config",
    "ToolContext": "context",
    "ToolFailure": "context",
    "Job": "jobs",
    "JobInfo": "jobs",
    "ToolModel": "models",
    "TrustError": "trust",
    "TrustPolicy": "trust",
}

__all__ = ["Job", "JobInfo", "McpConfig", "ToolContext", "ToolFailure", "ToolModel", "TrustError", "TrustPolicy"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"magpie_mcp.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
