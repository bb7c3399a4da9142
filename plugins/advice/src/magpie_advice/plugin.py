"""Entry point of magpie-advice: its MCP tools (kernel discovery, optimisation advice, benchmark comparison)."""

from __future__ import annotations

from magpie_advice import tools
from magpie_core import hookimpl
from magpie_core.hookspecs import Register


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    tools.magpie_register_mcp_tools(register)
