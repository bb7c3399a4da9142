"""``magpie mcp``: the MCP server for AI agents."""

from __future__ import annotations

import typer

from magpie_core.cli.app import NotAvailable, app, handle_errors


@app.command("mcp")
@handle_errors
def mcp_command(
    transport: str = typer.Option("stdio", "--transport", help="stdio | streamable-http"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address for streamable-http"),
    port: int = typer.Option(8765, "--port", help="port for streamable-http"),
) -> None:
    """Serve magpie's tools over the Model Context Protocol (stdio by default)."""
    try:
        from magpie_core.mcp_server import serve
    except ImportError as exc:
        raise NotAvailable(f"the MCP server is not available in this build ({exc})") from exc
    serve(transport=transport, host=host, port=port)
