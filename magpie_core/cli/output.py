"""What commands print: tables as rich tables, CSV or JSON (``--format``), and the ``--no-html`` switch.

Commands that write tables into a run folder also take ``--format xlsx`` (:data:`TABLE_FORMATS`): the tables
go into one Excel workbook there (:mod:`magpie_trace.workbook`), and the table is printed as usual.

A table printed to a pipe or a log file is never cut: the consoles here (:data:`console`, :data:`err_console`)
are wide when the stream is not a terminal, and ``--format csv|json`` prints the same rows whole."""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console


class NotAvailable(RuntimeError):
    """A command needs a plugin or pipeline that is not installed."""


class UsageError(ValueError):
    """Bad command-line input that typer cannot catch by itself."""


#: width of a console whose stream is not a terminal (a pipe, a log file): wide enough that tables are never cut
PIPE_WIDTH = 4096


def _width(stream: Any) -> int | None:
    """None (rich decides) on a terminal or when COLUMNS is set; else wide, so piped tables keep every column."""
    isatty = getattr(stream, "isatty", None)
    return None if os.environ.get("COLUMNS") or (isatty and isatty()) else PIPE_WIDTH


class _DeferredConsole:
    """A rich ``Console`` made on first use: a run that prints nothing through it (``--json``, CSV rows, a
    report written to files) never imports rich, which costs ~0.04 s CPU at start-up."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            stream = sys.stderr if self._stderr else sys.stdout
            self._console = Console(stderr=self._stderr, highlight=False, width=_width(stream))
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


console: Console = _DeferredConsole(stderr=False)  # type: ignore[assignment]
err_console: Console = _DeferredConsole(stderr=True)  # type: ignore[assignment]


def escape(text: str) -> str:
    """rich's markup escape, imported when a message is printed (and not at all for text it leaves alone)."""
    if "[" not in text and "\\" not in text:
        return text
    from rich.markup import escape as rich_escape

    return rich_escape(text)


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
