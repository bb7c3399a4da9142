"""magpie-mcp: the MCP server for AI agents (``magpie mcp``) and its built-in tools.

For a plugin that adds tools: :class:`ToolContext` (what a tool can receive from the
server) and :class:`ToolFailure` (a tool error with your message). See ``docs/mcp.md``.
"""

from magpie_mcp.config import McpConfig
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import Job, JobInfo
from magpie_mcp.models import ToolModel
from magpie_mcp.trust import TrustError, TrustPolicy

__all__ = ["Job", "JobInfo", "McpConfig", "ToolContext", "ToolFailure", "ToolModel", "TrustError", "TrustPolicy"]
