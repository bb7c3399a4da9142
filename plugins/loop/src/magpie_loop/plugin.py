"""Entry point of magpie-loop: the ``magpie loop`` command and the loop's MCP tools."""

from __future__ import annotations

from typing import Any

import typer

from magpie_core import hookimpl


@hookimpl
def magpie_register_commands(cli: typer.Typer) -> None:
    from magpie_loop.cli import loop_app

    cli.add_typer(loop_app, name="loop")


@hookimpl
def magpie_register_mcp_tools(register: Any) -> None:
    from magpie_loop import tools  # imports magpie_mcp: only the MCP server asks for tools

    tools.register_tools(register)
