"""Entry point: adds the benchmark's hooks and kinds (serving frameworks, benchmark checks) and registers the
``magpie benchmark`` command.

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magpie_core import hookimpl

if TYPE_CHECKING:
    import typer

    from magpie_core.plugins import PluginManager


@hookimpl
def magpie_add_hookspecs(pluginmanager: PluginManager) -> None:
    from magpie_benchmark import hookspecs

    pluginmanager.add_kinds(hookspecs, hookspecs.KINDS)


@hookimpl
def magpie_register_commands(cli: typer.Typer) -> None:
    from magpie_benchmark.cli import register

    register(cli)
