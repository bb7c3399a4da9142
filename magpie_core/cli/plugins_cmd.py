"""``magpie plugins``: what is installed, what loaded, and what each provides."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from magpie_core.cli.app import app, console, handle_errors
from magpie_core.plugins import get_plugin_manager


@app.command("plugins")
@handle_errors
def plugins_command(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List plugins: name, kinds, distribution, version, hooks and load status."""
    manager = get_plugin_manager()
    rows = [info.as_dict() for info in manager.plugins.values()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("plugin", "kinds", "distribution", "version", "status", "provides")
    for row in rows:
        provides = "; ".join(f"{k}: {', '.join(v)}" for k, v in row["components"].items())
        status = row["status"] if not row["error"] else f"{row['status']}: {row['error']}"
        table.add_row(row["name"], ", ".join(row["kinds"]), row["distribution"], row["version"], status, provides)
    console.print(table)
    if not rows:
        console.print("no plugins installed (entry-point group 'magpie')")
