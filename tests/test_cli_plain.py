"""The CLI's rich-free printing to a pipe (:mod:`magpie_core.cli.plain`) writes exactly rich's bytes.

Random tables and lines (kernel-like names, numbers, markup, brackets, colons, non-ASCII) are printed both ways:
through a real rich ``Console`` configured as the CLI's is off a terminal, and through :mod:`magpie_core.cli.plain`.
Whenever the plain path takes a case it must write the same bytes; the cases the CLI prints in practice (plain
kernel tables, device lines) must be taken, or the fast path would silently never run.
"""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.table import Table

from magpie_core.cli.app import PIPE_WIDTH
from magpie_core.cli.plain import plain_line, plain_stream, plain_table

_PIECES = [
    "void",
    "at::native::",
    "elementwise_kernel",
    "<float, 4>",
    "(anonymous namespace)",
    " ",
    "_",
    "x",
    "128x128",
    "[bold]",
    "[/bold]",
    "[yellow]",
    "[/yellow]",
    "[1]",
    "[/]",
    "\\[",
    ":smile:",
    ":",
    "::",
    "é",
    "…",
    "\t",
    "12.34",
    "[link=x]",
    "[/red]",
]


def _text(rng: random.Random, pieces: list[str]) -> str:
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))


class _Pipe:
    """stdout as the test captures it (not a terminal), read with :meth:`getvalue`."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def getvalue(self) -> str:
        return self._capsys.readouterr().out


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> _Pipe:
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    return _Pipe(capsys)


def _rich(render: object, **kwargs: object) -> str:
    buf = io.StringIO()
    Console(file=buf, highlight=False, width=PIPE_WIDTH).print(render, **kwargs)
    return buf.getvalue()


def _rich_table(
    columns: list[str], rows: list[list[str]], right: list[bool], title: str | None, no_wrap: bool = True
) -> str:
    """The table as rich draws it: no-wrap columns as ``magpie gap``'s, wrapping ones as ``print_rows``'s."""
    table = Table(title=title)
    for col, r in zip(columns, right, strict=True):
        table.add_column(col, justify="right" if r else "left", no_wrap=no_wrap)
    for row in rows:
        table.add_row(*row)
    try:
        return _rich(table)
    except Exception as exc:  # rich refuses some markup (a closing tag with nothing open): plain must decline it
        return f"rich raised {type(exc).__name__}"


@pytest.mark.parametrize("seed", range(300))
def test_random_tables_match_rich(pipe: _Pipe, seed: int) -> None:
    rng = random.Random(seed)
    pieces = _PIECES if seed % 2 else [*_PIECES[:5], *_PIECES[6:9], "12.34"]  # half of them plain, as real tables are
    n_cols = rng.randint(1, 6)
    columns = [_text(rng, pieces) or "c" for _ in range(n_cols)]
    rows = [[_text(rng, pieces) for _ in range(n_cols)] for _ in range(rng.randint(0, 5))]
    right = [rng.random() < 0.5 for _ in range(n_cols)]
    title = rng.choice([None, "top 3 kernels (1 rank(s))", _text(rng, pieces) or None])
    if plain_table(columns, rows, right=right, title=title):
        assert pipe.getvalue() == _rich_table(columns, rows, right, title, no_wrap=seed % 3 != 0)
    else:
        assert pipe.getvalue() == ""


@pytest.mark.parametrize("seed", range(300))
def test_random_lines_match_rich(pipe: _Pipe, seed: int) -> None:
    rng = random.Random(seed)
    text = _text(rng, [*_PIECES, "rank 0 device 0: busy 1.00 us, ", "warning: ", "(5.1% of active span)"])
    markup = rng.random() < 0.7
    if plain_line(text, markup=markup):
        try:
            expected = _rich(text, markup=markup)
        except Exception as exc:
            expected = f"rich raised {type(exc).__name__}"
        assert pipe.getvalue() == expected
    else:
        assert pipe.getvalue() == ""


def test_what_the_cli_prints_takes_the_plain_path(pipe: _Pipe) -> None:
    columns = ["#", "kernel", "category", "calls", "total (us)"]
    rows = [["1", "void at::native::vectorized_elementwise_kernel<4, float>", "elementwise", "10", "611.71"]]
    right = [True, False, False, True, True]
    assert plain_table(columns, rows, right=right, title="top 1 kernels (1 rank(s))")
    line = "rank 0 device 0: busy 1.00 us, idle 2.00 us (5.1% of active span), 49 gaps  [bold]LAUNCH-BOUND[/bold]"
    assert plain_line(line)
    assert plain_line("[yellow]warning:[/yellow] rank 1 (a.json): 3 events skipped")
    assert plain_line("  largest gap 4.03 us at +636.19 us; CPU op: aten::mm; next: x", markup=False)
    assert pipe.getvalue() == (
        _rich_table(columns, rows, right, "top 1 kernels (1 rank(s))")
        + _rich(line)
        + _rich("[yellow]warning:[/yellow] rank 1 (a.json): 3 events skipped")
        + _rich("  largest gap 4.03 us at +636.19 us; CPU op: aten::mm; next: x", markup=False)
    )


def test_terminal_or_forced_colour_goes_through_rich(pipe: _Pipe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain_stream() is None and not plain_line("x")
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("COLUMNS", "80")
    assert plain_stream() is None
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert plain_stream() is None and pipe.getvalue() == ""


def test_the_random_tables_often_take_the_plain_path(pipe: _Pipe) -> None:
    """Guards the test above: a generator that never reached the plain path would prove nothing."""
    taken = 0
    for seed in range(0, 300, 2):  # the plain half
        rng = random.Random(seed)
        pieces = [*_PIECES[:5], *_PIECES[6:9], "12.34"]
        n_cols = rng.randint(1, 6)
        rows = [[_text(rng, pieces) or "y" for _ in range(n_cols)] for _ in range(rng.randint(1, 5))]
        taken += plain_table([f"c{i}" for i in range(n_cols)], rows, right=[False] * n_cols, title="t")
    pipe.getvalue()
    assert taken == 150
