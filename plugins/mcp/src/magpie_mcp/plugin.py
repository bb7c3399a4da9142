"""Entry point of magpie-mcp: the ``magpie mcp`` command, its ``mcp:`` config block and the built-in tools.

Each tool module registers its own tools through ``magpie_register_mcp_tools``,
exactly as a third-party plugin does; this module only gathers them. Imports stay inside the hooks:
this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from typing import Any

from magpie_core import hookimpl
from magpie_core.hookspecs import Register


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    from magpie_mcp.tools import benchmarks, jobs, kernels, system, traces

    for module in (system, kernels, benchmarks, traces, jobs):
        module.magpie_register_mcp_tools(register)


@hookimpl
def magpie_register_commands(cli: Any) -> None:
    from magpie_mcp.command import add_mcp_command

    add_mcp_command(cli)


@hookimpl
def magpie_register_config_blocks(register: Register) -> None:
    from magpie_mcp.config import CONFIG_BLOCK

    register(CONFIG_BLOCK)
