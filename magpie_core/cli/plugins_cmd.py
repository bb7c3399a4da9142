"""``magpie plugins``: what is installed, what loaded, and what each provides."""

from __future__ import annotations

import json

import typer

from magpie_core.cli.app import app
from magpie_core.cli.kit import console, handle_errors
from magpie_core.cli.output import check_format, format_option, print_rows
from magpie_core.plugins import PluginManager, get_plugin_manager


@app.command("plugins")
@handle_errors
def plugins_command(
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"), fmt: str = format_option()
) -> None:
    """List plugins: name, kinds, distribution, version, hooks and load status."""
    manager = get_plugin_manager()
    rows = [info.as_dict() for info in manager.plugins.values()]
    if as_json or check_format(fmt) == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    table = []
    for row in rows:
        provides = "; ".join(f"{k}: {', '.join(v)}" for k, v in row["components"].items())
        status = row["status"] if not row["error"] else f"{row['status']}: {row['error']}"
        table.append([row["name"], ", ".join(row["kinds"]), row["distribution"], row["version"], status, provides])
    print_rows(["plugin", "kinds", "distribution", "version", "status", "provides"], table, fmt)
    if fmt == "csv":
        return
    if not rows:
        console.print("no plugins installed (entry-point group 'magpie')")
    for line in status_lines(manager):
        console.print(line, markup=False, soft_wrap=True)


def status_lines(manager: PluginManager) -> list[str]:
    """What the plugins say under the table (:func:`~magpie_core.hookspecs.magpie_status_lines`), each line once."""
    answers = manager.call("magpie_status_lines", dict, fatal=False) or []
    return list(dict.fromkeys(line for lines in answers for line in lines or []))
