"""What the CLI's rich console prints to a pipe or a file, drawn without rich when the bytes are sure to match.

Off a terminal rich emits no colours or styles, so a line of text and a table of plain cells come out as the
characters themselves, box-drawn, in a console :data:`~magpie_core.cli.app.PIPE_WIDTH` wide. Importing rich and
laying a table out through its full machinery cost a ``magpie gap`` run ~30 ms of its fixed start-up; here the
same bytes are written directly, and anything this module does not know to render exactly as rich would (a
terminal, ``FORCE_COLOR``/``TTY_COMPATIBLE``/``COLUMNS`` set, a non-UTF-8 stream, markup beyond a few plain style
tags, escaped brackets, possible ``:emoji:`` codes, characters other than printable ASCII, a line or a table
wider than the console) returns False/None so the caller prints through rich as before. A test draws random
tables and lines both ways and compares the bytes.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TextIO

__all__ = ["plain_line", "plain_stream", "plain_table"]

#: rich's markup tag (``rich.markup.RE_TAGS``) and emoji code (``rich._emoji_replace``) patterns
_TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_EMOJI = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
#: style tags that only colour or weight text (nothing of them is printed off a terminal)
_STYLES = frozenset({"bold", "dim", "italic", "red", "green", "yellow", "blue", "cyan", "magenta"})
#: printable ASCII: one terminal cell per character, nothing rich would expand (tabs) or strip (control codes)
_PRINTABLE = re.compile(r"[ -~]*")
#: rich's ``box.HEAVY_HEAD``: top, header row, header separator, body row, bottom (left, between, right, fill)
_TOP, _HEAD, _HEAD_SEP, _ROW, _BOTTOM = ("┏┳┓━", "┃┃┃ ", "┡╇┩━", "│││ ", "└┴┘─")


def plain_stream(stream: TextIO | None = None) -> TextIO | None:
    """``stream`` (default: stdout) when rich's console there would be no terminal and :data:`PIPE_WIDTH` wide
    (see :func:`magpie_core.cli.app._width`), else None."""
    stream = sys.stdout if stream is None else stream
    env = os.environ
    if sys.platform == "win32" or env.get("COLUMNS") or "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env:
        return None
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    isatty = getattr(stream, "isatty", None)
    try:
        return None if isatty is None or isatty() else stream
    except ValueError:  # a closed stream: let rich say what it says
        return None


def _width() -> int:
    from magpie_core.cli.app import PIPE_WIDTH

    return PIPE_WIDTH


def _unmarked(text: str, markup: bool) -> str | None:
    """``text`` as rich prints it off a terminal (style tags dropped), or None when that is not sure."""
    if _EMOJI.search(text) and any(m.group(2) for m in _EMOJI.finditer(text)):
        return None
    if markup and "[" in text:
        if "\\" in text:  # rich turns any backslash-bracket into a bracket
            return None
        open_tags: list[str] = []
        for match in _TAG.finditer(text):
            escapes, tag = match.group(2), match.group(3)
            name = tag[1:] if tag.startswith("/") else tag
            if escapes or (name and name not in _STYLES):
                return None
            if not tag.startswith("/"):
                open_tags.append(tag)
            elif not open_tags or (name and name not in open_tags):
                return None  # rich raises on a closing tag with nothing to close
            elif name:
                open_tags.remove(name)
            else:
                open_tags.pop()
        text = _TAG.sub("", text)
    return text if _PRINTABLE.fullmatch(text) else None


def plain_line(text: str, *, markup: bool = True) -> bool:
    """Write ``text`` and a newline as ``console.print(text, markup=markup)`` would to a pipe; False (nothing
    written) when that is not sure."""
    stream = plain_stream()
    plain = _unmarked(text, markup) if stream is not None else None
    if plain is None or len(plain) > _width():
        return False
    stream.write(plain + "\n")  # type: ignore[union-attr]
    return True


def _rule(parts: str, widths: list[int]) -> str:
    left, between, right, fill = parts
    return left + between.join(fill * w for w in widths) + right


def _row(parts: str, cells: Sequence[str], widths: list[int], right: Sequence[bool]) -> str:
    left, between, end, _ = parts
    padded = (
        " " + (c.rjust(w - 2) if r else c.ljust(w - 2)) + " " for c, w, r in zip(cells, widths, right, strict=True)
    )
    return left + between.join(padded) + end


def plain_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[bool], title: str | None = None
) -> bool:
    """Write the table ``rich.table.Table(title=title)`` draws to a pipe for these columns (no-wrap, right-justified
    where ``right``) and rows of strings; False (nothing written) when that is not sure."""
    stream = plain_stream()
    if stream is None or not rows:
        return False
    header = [_unmarked(c, True) for c in columns]
    body = [[_unmarked(c, True) for c in row] for row in rows]
    heading = _unmarked(title, True) if title else ""
    if heading is None or None in header or any(None in row or len(row) != len(columns) for row in body):
        return False
    cells: list[list[str]] = [header, *body]  # type: ignore[list-item]
    if any(c != c.strip() for row in cells for c in row) or heading != heading.strip():
        return False  # rich trims the edges of justified cells; not worth copying for names that never have them
    widths = [max(len(row[i]) for row in cells) + 2 for i in range(len(columns))]
    table_width = sum(widths) + len(widths) + 1
    if table_width > _width() or len(heading) > table_width:
        return False
    lines = []
    if title:
        left = (table_width - len(heading)) // 2
        lines.append(" " * left + heading + " " * (table_width - left - len(heading)))
    lines.append(_rule(_TOP, widths))
    lines.append(_row(_HEAD, cells[0], widths, right))
    lines.append(_rule(_HEAD_SEP, widths))
    lines.extend(_row(_ROW, row, widths, right) for row in cells[1:])
    lines.append(_rule(_BOTTOM, widths))
    stream.write("\n".join(lines) + "\n")
    return True
