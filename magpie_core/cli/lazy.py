"""The root command group, which imports a core command's module only when that command runs.

Each core command (``analyze``, ``compare``, ...) lives in a module that pulls in what it needs (config
models, the kernel pipelines); importing all of them cost every ``magpie`` run ~0.3 s CPU
before it did anything. :data:`CORE_COMMANDS` names the module of each; :class:`LazyGroup` imports it when
click asks for that command (to run it, to show its help, or to list it in ``magpie --help``). Plugin commands
are added to the group as before (:mod:`magpie_core.cli.commands`).
"""

from __future__ import annotations

import importlib
from typing import Any

from typer.core import TyperGroup

__all__ = ["CORE_COMMANDS", "LazyGroup"]

#: core command -> the module that registers it on the root app, in the order ``magpie --help`` lists them
CORE_COMMANDS: dict[str, str] = {
    "gpu-info": "magpie_core.cli.gpu_info",
    "analyze": "magpie_core.cli.kernels",
    "compare": "magpie_core.cli.kernels",
    "plugins": "magpie_core.cli.plugins_cmd",
}


class LazyGroup(TyperGroup):
    """typer's group, with the core commands made from their modules on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(dict.fromkeys([*CORE_COMMANDS, *self.commands]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in CORE_COMMANDS:
            self.commands[cmd_name] = _load(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and args[0] not in CORE_COMMANDS:
            # an unknown command: typer's "did you mean" looks only at the commands made, so make them all
            for name in CORE_COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


def _load(name: str) -> Any:
    """Import the module of core command ``name`` and make its click command as typer would."""
    from typer.main import get_command_from_info

    from magpie_core.cli.app import app
    from magpie_core.cli.commands import command_name

    importlib.import_module(CORE_COMMANDS[name])
    info = next(c for c in app.registered_commands if command_name(c) == name)
    return get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )
