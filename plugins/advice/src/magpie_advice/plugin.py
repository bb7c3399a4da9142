"""Entry point of magpie-advice: its MCP tools (kernel discovery, optimisation advice, benchmark comparison).

Imports stay inside the hook: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from magpie_core import hookimpl
from magpie_core.hookspecs import Register


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    from magpie_advice import tools

    tools.magpie_register_mcp_tools(register)
