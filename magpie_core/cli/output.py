"""What commands print: tables as rich tables, CSV or JSON (``--format``), and the ``--no-html`` switch.

Commands that write tables into a run folder also take ``--format xlsx`` (:data:`TABLE_FORMATS`): the tables
go into one Excel workbook there (:mod:`magpie_trace.workbook`), and the table is printed as usual.

A table printed to a pipe or a log file is never cut: :mod:`magpie_core.cli.app` gives its consoles a
wide width when the stream is not a terminal, and ``--format csv|json`` prints the same rows whole.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer


def shorten(text: str, width: int) -> str:
    """``text`` cut from the middle to ``width``: a kernel's name and its last template arguments both stay."""
    return text if len(text) <= width else f"{text[: width // 2 - 1]}…{text[-(width - width // 2) :]}"


FORMATS = ("table", "csv", "json")
#: the formats of commands that write tables into a run folder: xlsx adds a workbook of them there
TABLE_FORMATS = (*FORMATS, "xlsx")


def format_option(default: str = "table", formats: Sequence[str] = FORMATS) -> Any:
    help_text = "table | csv | json (csv/json: the table's rows, whole)"
    if "xlsx" in formats:
        help_text += "; xlsx: also one Excel workbook of the run's tables, a sheet each, in the run folder"
    return typer.Option(default, "--format", help=help_text)


def no_html_option() -> Any:
    return typer.Option(False, "--no-html", help="do not write report.html into the workspace")


def check_format(fmt: str, formats: Sequence[str] = FORMATS) -> str:
    from magpie_core.cli.app import UsageError

    if fmt not in formats:
        raise UsageError(f"--format {fmt!r}: use one of {', '.join(formats)}")
    return fmt


def _plain(value: Any) -> Any:
    """A cell without rich markup, for CSV and JSON."""
    if isinstance(value, str) and "[/" in value:
        from rich.text import Text

        return Text.from_markup(value).plain
    return value


def print_rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table", title: str | None = None
) -> None:
    """One table in the chosen format: a rich table, CSV with a header line, or a JSON list of objects."""
    from magpie_core.cli.app import console

    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_plain(v) for v in row] for row in rows])
        return
    if fmt == "json":
        typer.echo(
            json.dumps(
                [dict(zip(columns, (_plain(v) for v in row), strict=False)) for row in rows], indent=2, default=str
            )
        )
        return
    from rich.table import Table

    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console.print(table)


def say(text: str, *, markup: bool = True, soft_wrap: bool = False) -> None:
    """``console.print(text, markup=markup, soft_wrap=soft_wrap)`` on stdout."""
    from magpie_core.cli.app import console

    console.print(text, markup=markup, soft_wrap=soft_wrap)


def write_html(kind: str, report: Any, workspace: str | Path | None, *, skip: bool, quiet: bool = False) -> Path | None:
    """``report.html`` for this run through the installed report plugin (unless ``--no-html``); says where."""
    if skip or workspace is None:
        return None
    from magpie_core.report_pages import write_report_html

    path = write_report_html(kind, report, workspace)
    if path is not None and not quiet:
        say(f"report page: {path}", markup=False, soft_wrap=True)
    return path
