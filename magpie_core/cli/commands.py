"""Commands that plugins add to the ``magpie`` command line.

Two ways, open to every distribution alike (magpie's own plugins use the first):

- **declared**: entry points of the group ``magpie.commands`` (:data:`COMMANDS_GROUP`); the name is the command
  word, the value ``module:function`` with ``function(cli: typer.Typer)`` adding that command to ``cli`` (the
  plugin's ``magpie_register_commands`` implementation, typically). The function is imported only when its
  command runs or ``magpie --help`` lists it (:class:`magpie_core.cli.lazy.LazyGroup`). A distribution whose
  ``magpie`` plugins are all disabled or failed (``MAGPIE_PLUGINS``) contributes no command, and running one of
  its commands says which distribution it comes from.
- **the hook** ``magpie_register_commands``: called for the loaded plugins whose distribution declares no
  ``magpie.commands`` entry point, before the command runs.

Each function adds its commands to a staging :class:`typer.Typer` of its own, so one that raises halfway adds
nothing; a command name that is taken already is skipped with a warning naming both."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import typer
from typer.models import CommandInfo

from magpie_core.plugins import PluginManager, PluginWarning, allowed_names, get_plugin_manager, installed_entry_points

__all__ = ["COMMANDS_GROUP", "CORE_COMMANDS", "DeclaredCommand", "add_plugin_commands", "command_word"]

#: core command -> the module that registers it on the root app, in the order ``magpie --help`` lists them
CORE_COMMANDS: dict[str, str] = {
    "gpu-info": "magpie_core.cli.gpu_info",
    "analyze": "magpie_core.cli.kernels",
    "compare": "magpie_core.cli.kernels",
    "plugins": "magpie_core.cli.plugins_cmd",
}

#: entry-point group of lazily loaded commands: command word -> ``module:function(cli)``
COMMANDS_GROUP = "magpie.commands"

#: Global options of the root command that take a value (to find the command word in argv).
_VALUED_GLOBALS = {"-c", "--config", "-e", "--environment", "-w", "--workers", "-o", "--output-dir", "--docker-image"}


@dataclass(frozen=True)
class DeclaredCommand:
    """One ``magpie.commands`` entry point: the command word, what registers it, and its distribution."""

    name: str
    value: str
    distribution: str
    entry_point: Any

    @property
    def module(self) -> str:
        return self.value.split(":", 1)[0].strip()


#: the declared commands of loaded plugins, by word (set by :func:`add_plugin_commands`, read by the lazy group)
DECLARED: dict[str, DeclaredCommand] = {}
#: declared commands whose distribution is installed but not loaded: word -> distribution
UNLOADED: dict[str, str] = {}


def command_name(info: CommandInfo) -> str:
    if info.name:
        return info.name
    callback = info.callback
    return callback.__name__.replace("_", "-") if callback else ""


def _names(cli: typer.Typer) -> set[str]:
    """The commands and command groups registered on ``cli`` so far."""
    return {command_name(c) for c in cli.registered_commands} | {g.name for g in cli.registered_groups if g.name}


def declared_commands() -> list[DeclaredCommand]:
    """Every entry point of :data:`COMMANDS_GROUP` of the installed distributions."""
    return [
        DeclaredCommand(ep.name, ep.value, ep.dist.name if ep.dist else "", ep)
        for ep in installed_entry_points(COMMANDS_GROUP)
    ]


def _loaded(manager: PluginManager, command: DeclaredCommand) -> bool:
    """Whether the distribution of ``command`` is in use: one of its ``magpie`` plugins is loaded, or it has
    none and ``MAGPIE_PLUGINS`` (when set) names it or the command."""
    plugins = manager.of_distribution(command.distribution)
    if plugins:
        return any(info.status == "loaded" for info in plugins)
    allowed = allowed_names()
    return allowed is None or bool({command.distribution, command.name} & allowed)


def add_plugin_commands(cli: typer.Typer, manager: PluginManager | None = None, word: str | None = None) -> list[str]:
    """Make the plugins' commands available on ``cli``; return the names of the commands added.

    The declared commands (``magpie.commands``) of loaded distributions are noted for the lazy group and
    credited to their plugins without importing anything. Unless ``word`` (the command about to run) is one of
    them, ``magpie_register_commands`` is then called for the plugins whose distribution declares none."""
    manager = manager or get_plugin_manager()
    DECLARED.clear()
    UNLOADED.clear()
    declaring: set[str] = set()
    for command in sorted(declared_commands(), key=lambda c: (c.name, c.distribution)):
        declaring.add(command.distribution)
        if not _loaded(manager, command):
            UNLOADED.setdefault(command.name, command.distribution)
        elif command.name in CORE_COMMANDS or command.name in DECLARED:
            other = DECLARED[command.name].distribution if command.name in DECLARED else "magpie-core"
            warnings.warn(
                f"command {command.name!r} from {command.distribution} is already taken by {other}; skipped",
                PluginWarning,
                stacklevel=2,
            )
        else:
            DECLARED[command.name] = command
            manager.credit("command", command.name, command.module)
    added = list(DECLARED)
    if word not in DECLARED:
        undeclared = tuple(
            name for name, info in manager.loaded_plugins().items() if info.distribution not in declaring
        )
        added += _add_from(cli, manager, only=undeclared)
    return added


def _add_from(cli: typer.Typer, manager: PluginManager, only: tuple[str, ...]) -> list[str]:
    """Ask the plugins ``only`` for their commands through the hook and add the new ones to ``cli``."""
    staged: list[typer.Typer] = []

    def make_kwargs() -> dict[str, typer.Typer]:
        staged[:] = [typer.Typer()]
        return {"cli": staged[0]}

    manager.call("magpie_register_commands", make_kwargs, only=only)
    return move_commands(staged[0], cli, manager) if staged else []


def move_commands(staged: typer.Typer, cli: typer.Typer, manager: PluginManager) -> list[str]:
    """Move the commands and groups registered on ``staged`` to ``cli``, skipping taken names; return those moved."""
    taken = _names(cli) | set(CORE_COMMANDS) | set(DECLARED)
    present = {c.callback for c in cli.registered_commands}
    added = []
    for info in staged.registered_commands:
        name = command_name(info)
        if info.callback in present:  # added by an earlier call (``run`` called again in one process)
            continue
        if name in taken:
            where = getattr(info.callback, "__module__", "?")
            warnings.warn(f"command {name!r} from {where} is already taken; skipped", PluginWarning, stacklevel=2)
            continue
        cli.registered_commands.append(info)
        taken.add(name)
        added.append(name)
        manager.credit("command", name, getattr(info.callback, "__module__", ""))
    cli.registered_groups.extend(g for g in staged.registered_groups if g.name not in taken)
    return added


def command_word(argv: list[str]) -> str | None:
    """The command the user typed (the first word that is neither a global option nor its value)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED_GLOBALS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def missing_plugin_message(cli: typer.Typer, argv: list[str]) -> str | None:
    """Why the command in ``argv`` is not there, when an installed distribution that is not loaded declares it."""
    word = command_word(argv)
    if word is None or word not in UNLOADED or word in DECLARED or word in _names(cli):
        return None
    return (
        f"'magpie {word}' comes from the plugin distribution {UNLOADED[word]}, which is not loaded "
        "(see 'magpie plugins'; MAGPIE_PLUGINS may exclude it)"
    )
