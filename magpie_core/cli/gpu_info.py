"""``magpie gpu-info``: GPUs, compilers and profilers found on this machine."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from magpie_core.cli.app import app, console, handle_errors
from magpie_core.gpus import collect_gpu_info


def print_gpu_info(as_json: bool) -> None:
    info = collect_gpu_info()
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    if info["gpus"]:
        table = Table("#", "vendor", "name", "arch", "memory (MiB)", "driver")
        for g in info["gpus"]:
            table.add_row(
                str(g["index"]),
                g["vendor"],
                g["name"],
                g["arch"] or "?",
                str(g["memory_total_mib"] or "?"),
                g["driver"] or "?",
            )
        console.print(table)
    else:
        console.print("No GPU found on this machine.")
    tools = Table("tool", "found", "version", "path")
    for t in info["tools"]:
        tools.add_row(t["name"], "yes" if t["found"] else "no", t["version"] or "", t["path"] or t.get("note") or "")
    if info["tools"]:
        console.print(tools)
    else:
        console.print("No plugin reports compilers or profilers (install kernel-backend and profiler plugins).")


@app.command("gpu-info")
@handle_errors
def gpu_info_command(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Show GPUs (vendor, name, arch, memory, driver) and the compilers and profilers found."""
    print_gpu_info(as_json)
