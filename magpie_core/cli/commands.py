"""Commands that plugins add to the ``magpie`` command line (``magpie_register_commands``).

Each plugin adds its commands to a staging :class:`typer.Typer` of its own call, so a plugin
that raises halfway adds nothing; the commands are then moved onto the root app. A command
name that is taken already is skipped with a warning naming both.

When the command about to run is one of magpie's own plugin commands (:data:`FIRST_PARTY_COMMANDS`) and
its plugin is loaded, only that plugin is asked: the other plugins' command modules are not imported (the
whole point of ``magpie gap`` starting fast). ``magpie --help``, ``magpie plugins`` and any other command
word ask every plugin, so a third-party command works as before.
"""

from __future__ import annotations

import warnings

import typer
from typer.models import CommandInfo

from magpie_core.cli.lazy import CORE_COMMANDS
from magpie_core.plugins import PluginManager, PluginWarning, get_plugin_manager

#: Commands that come from magpie's own plugin distributions -> (distribution, its folder here): that plugin
#: alone is asked when its command runs, and a clear message says what to install when it is missing.
FIRST_PARTY_COMMANDS = {
    "benchmark": ("magpie-benchmark", "magpie_benchmark"),
    "gap": ("magpie-gap-analysis", "plugins/gap_analysis"),
    "inference": ("magpie-inference-analysis", "plugins/inference_analysis"),
    "mcp": ("magpie-mcp", "plugins/mcp"),
    "targeted-trace": ("magpie-targeted-trace", "plugins/targeted_trace"),
    "loop": ("magpie-loop", "plugins/loop"),
    "report": ("magpie-report", "plugins/report"),
}

#: Global options of the root command that take a value (to find the command word in argv).
_VALUED_GLOBALS = {"-c", "--config", "-e", "--environment", "-w", "--workers", "-o", "--output-dir", "--docker-image"}


def command_name(info: CommandInfo) -> str:
    if info.name:
        return info.name
    callback = info.callback
    return callback.__name__.replace("_", "-") if callback else ""


def _names(cli: typer.Typer) -> set[str]:
    """The commands and command groups registered on ``cli`` so far."""
    return {command_name(c) for c in cli.registered_commands} | {g.name for g in cli.registered_groups if g.name}


def add_plugin_commands(cli: typer.Typer, manager: PluginManager | None = None, word: str | None = None) -> list[str]:
    """Call ``magpie_register_commands`` and add what the plugins registered; return the names added.

    ``word``: the command about to run; when magpie's own plugin that provides it is loaded, that plugin alone
    is asked, and every plugin only when it did not add ``word``.
    """
    manager = manager or get_plugin_manager()
    owner = _owner(manager, word)
    if owner is not None:
        added = _add_from(cli, manager, only=(owner,))
        if word in _names(cli):
            return added
    return _add_from(cli, manager, only=None)


def _owner(manager: PluginManager, word: str | None) -> str | None:
    """The loaded plugin of magpie's own distribution that provides command ``word``, if any."""
    if word not in FIRST_PARTY_COMMANDS:
        return None
    loaded = manager.loaded_of(FIRST_PARTY_COMMANDS[word][0])
    return loaded[0] if len(loaded) == 1 else None


def _add_from(cli: typer.Typer, manager: PluginManager, only: tuple[str, ...] | None) -> list[str]:
    """Ask the plugins (``only`` these, or all) for their commands and add the new ones to ``cli``."""
    staged: list[typer.Typer] = []

    def make_kwargs() -> dict[str, typer.Typer]:
        staged[:] = [typer.Typer()]
        return {"cli": staged[0]}

    manager.call("magpie_register_commands", make_kwargs, only=only)
    taken = _names(cli) | set(CORE_COMMANDS)
    present = {c.callback for c in cli.registered_commands}
    added = []
    for info in staged[0].registered_commands if staged else []:
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
    if staged:
        cli.registered_groups.extend(g for g in staged[0].registered_groups if g.name not in taken)
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
    """Why the command in ``argv`` is not there, when it is one of magpie's own plugin commands."""
    word = command_word(argv)
    present = _names(cli)
    if word not in FIRST_PARTY_COMMANDS or word in present:
        return None
    distribution, folder = FIRST_PARTY_COMMANDS[word]
    return (
        f"'magpie {word}' comes from the plugin distribution {distribution} ({folder}), which is not installed "
        "or not loaded (see 'magpie plugins'; MAGPIE_PLUGINS may exclude it)"
    )
