"""``magpie mcp``: the MCP server for AI agents."""

from __future__ import annotations

import typer

from magpie_core.cli.app import STATE, NotAvailable, UsageError, app, handle_errors


@app.command("mcp")
@handle_errors
def mcp_command(
    transport: str = typer.Option("stdio", "--transport", help="stdio | streamable-http"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address for streamable-http (default: loopback only)"),
    port: int = typer.Option(8765, "--port", help="port for streamable-http"),
) -> None:
    """Serve magpie's tools over the Model Context Protocol (stdio by default). See docs/mcp.md."""
    if transport not in ("stdio", "streamable-http"):
        raise UsageError(f"unknown transport {transport!r}: use stdio or streamable-http")
    try:
        from magpie_core.mcp_server import serve
    except ImportError as exc:
        raise NotAvailable(f"the MCP server is not available in this build ({exc})") from exc
    serve(transport=transport, host=host, port=port, framework=STATE.framework)
