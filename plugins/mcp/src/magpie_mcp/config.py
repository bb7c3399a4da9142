"""The ``mcp:`` block of the framework config (``config.yaml``), owned by this plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from magpie_core.config.common import StrictModel
from magpie_core.interfaces import ConfigBlock

if TYPE_CHECKING:
    from magpie_core.config.framework import FrameworkConfig


class McpConfig(StrictModel):
    """``mcp:`` in ``config.yaml``: what the MCP server lets an agent touch."""

    allowed_roots: list[str] = Field(
        default_factory=list, description="commands from tool inputs run only under these folders (default: CWD)"
    )


CONFIG_BLOCK = ConfigBlock(
    name="mcp",
    model=McpConfig,
    scopes=("framework",),
    description="the MCP server's allowed workspace roots (docs/mcp.md)",
)


def mcp_config(framework: FrameworkConfig) -> McpConfig:
    """The validated ``mcp:`` block of ``framework``; the defaults when the file has none."""
    block = framework.plugin_block("mcp")
    return block if isinstance(block, McpConfig) else McpConfig()
