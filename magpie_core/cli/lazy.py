"""The root command group, which imports a command's module only when that command runs or is listed.

Two kinds of commands load this way: the core's own (:data:`CORE_COMMANDS`, a module each, registering on the root app)
and the commands plugins declare in the ``magpie.commands`` entry-point group (:mod:`magpie_core.cli.commands`):
``magpie gap`` imports the gap plugin's command module, not the MCP server's or the benchmark pipeline's. Click asks
:class:`LazyGroup` for a command to run it, to show its help, or to list it in ``magpie --help``."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from typer.core import TyperGroup, TyperOption

__all__ = ["LazyGroup"]

# typer's help shows `<bool>` beside every on/off flag, which takes no value: show nothing there instead
_value_type = TyperOption.display_type_rich
TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else _value_type(self, ctx)  # type: ignore[method-assign]


class LazyGroup(TyperGroup):
    """typer's group, with the core commands and the declared plugin commands made on first use."""

    #: the root typer app whose group this is (set by :mod:`magpie_core.cli.app`, which imports this module)
    root: Any = None

    def list_commands(self, ctx: Any) -> list[str]:
        from magpie_core.cli.commands import CORE_COMMANDS, DECLARED

        return list(dict.fromkeys([*CORE_COMMANDS, *DECLARED, *self.commands]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        from magpie_core.cli.commands import CORE_COMMANDS, DECLARED

        if cmd_name not in self.commands:
            if cmd_name in CORE_COMMANDS:
                self.commands[cmd_name] = _load_core(cmd_name)
            elif cmd_name in DECLARED:
                self.commands.update(_load_declared(cmd_name, taken=set(self.commands)))
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        from magpie_core.cli.commands import CORE_COMMANDS, DECLARED

        if args and args[0] not in self.commands and args[0] not in CORE_COMMANDS and args[0] not in DECLARED:
            # an unknown command: typer's "did you mean" looks only at the commands made, so make the core's
            for name in CORE_COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


def _click_options() -> dict[str, Any]:
    root = LazyGroup.root
    return {"pretty_exceptions_short": root.pretty_exceptions_short, "rich_markup_mode": root.rich_markup_mode}


def _load_core(name: str) -> Any:
    """Import the module of core command ``name`` and make its click command as typer would."""
    from typer.main import get_command_from_info

    from magpie_core.cli.commands import CORE_COMMANDS, command_name

    importlib.import_module(CORE_COMMANDS[name])  # registers the command on the root app
    info = next(c for c in LazyGroup.root.registered_commands if command_name(c) == name)
    return get_command_from_info(info, **_click_options())


def _load_declared(name: str, taken: set[str]) -> dict[str, Any]:
    """Call the function that declared command ``name`` on a staging app and make click commands of what it
    added (every command and group it added whose name is free, ``name`` among them); a function that fails to
    import or raises adds nothing and is reported as a plugin warning."""
    import typer
    from typer.main import get_command_from_info, get_group_from_info

    from magpie_core.cli.commands import DECLARED, command_name
    from magpie_core.plugins import PluginWarning

    declared = DECLARED[name]
    staged = typer.Typer()
    try:
        declared.entry_point.load()(staged)
    except Exception as exc:  # a broken plugin command must not take the command line down
        warnings.warn(
            f"command {name!r} of distribution {declared.distribution!r} failed to load: {type(exc).__name__}: {exc}",
            PluginWarning,
            stacklevel=2,
        )
        return {}
    made: dict[str, Any] = {}
    for info in staged.registered_commands:
        if command_name(info) not in taken:
            made[command_name(info)] = get_command_from_info(info, **_click_options())
    for group in staged.registered_groups:
        if group.name and group.name not in taken:
            made[group.name] = get_group_from_info(group, suggest_commands=True, **_click_options())
    return made
