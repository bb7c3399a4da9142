"""Entry point: registers the ``magpie benchmark`` command.

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
