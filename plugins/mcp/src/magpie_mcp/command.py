"""``magpie mcp``: the MCP server for AI agents, added to the command line by this plugin."""

from __future__ import annotations

import typer

from magpie_core.cli.app import STATE, UsageError, handle_errors

TRANSPORTS = ("stdio", "streamable-http")


def mcp_command(
    transport: str = typer.Option("stdio", "--transport", help="stdio | streamable-http"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address for streamable-http (default: loopback only)"),
    port: int = typer.Option(8765, "--port", help="port for streamable-http"),
) -> None:
    """Serve magpie's tools over the Model Context Protocol (stdio by default). See docs/mcp.md."""
    if transport not in TRANSPORTS:
        raise UsageError(f"unknown transport {transport!r}: use stdio or streamable-http")
    from magpie_mcp.server import serve  # the MCP SDK takes ~1 s to import: only when serving

    serve(transport=transport, host=host, port=port, framework=STATE.framework)


def add_mcp_command(cli: typer.Typer) -> None:
    """Add ``mcp`` to the root command line ``cli``."""
    cli.command("mcp")(handle_errors(mcp_command))
