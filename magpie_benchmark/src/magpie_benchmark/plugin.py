"""Entry point: registers the ``magpie benchmark`` command (the benchmark's hooks and kinds come with the
distribution: the ``magpie.hookspecs`` entry point, :mod:`magpie_benchmark.hookspecs`).

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magpie_core import hookimpl

if TYPE_CHECKING:
    import typer


@hookimpl
def magpie_register_commands(cli: typer.Typer) -> None:
    from magpie_benchmark.cli import register

    register(cli)
