"""``magpie gpu-info``: GPUs, compilers and profilers found on this machine."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from magpie_core.cli.app import app
from magpie_core.cli.kit import console, handle_errors
from magpie_core.cli.output import check_format, format_option, print_rows
from magpie_core.machine.gpus import collect_gpu_info

CSV_COLUMNS = ["kind", "index", "vendor", "name", "arch", "memory_total_mib", "driver", "found", "version", "path"]


def print_gpu_info(as_json: bool, fmt: str = "table") -> None:
    info = collect_gpu_info()
    if as_json or fmt == "json":
        typer.echo(json.dumps(info, indent=2))
        return
    if fmt == "csv":  # GPUs and tools in one table, told apart by ``kind``
        rows = [["gpu", *(g.get(c) for c in CSV_COLUMNS[1:7]), "", "", ""] for g in info["gpus"]]
        rows += [["tool", "", "", t["name"], "", "", "", t["found"], t["version"], t["path"]] for t in info["tools"]]
        print_rows(CSV_COLUMNS, rows, "csv")
        return
    if info["gpus"]:
        table = Table("#", "vendor", "name", "arch", "memory (MiB)", "driver")
        for g in info["gpus"]:
            unknown = (str(g[c] or "?") for c in ("arch", "memory_total_mib", "driver"))
            table.add_row(str(g["index"]), g["vendor"], g["name"], *unknown)
        console.print(table)
    else:
        console.print("No GPU found on this machine.")
    tools = Table("tool", "found", "version", "path")
    for t in info["tools"]:
        tools.add_row(t["name"], "yes" if t["found"] else "no", t["version"] or "", t["path"] or t.get("note") or "")
    console.print(tools if info["tools"] else "No plugin reports compilers or profilers (install their plugins).")


@app.command("gpu-info")
@handle_errors
def gpu_info_command(
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"), fmt: str = format_option()
) -> None:
    """Show GPUs (vendor, name, arch, memory, driver) and the compilers and profilers found."""
    print_gpu_info(as_json, check_format(fmt))
