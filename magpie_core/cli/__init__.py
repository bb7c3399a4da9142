"""The ``magpie`` command line.

The shell (the root group: :mod:`magpie_core.cli.app`; global options, exit codes: :mod:`magpie_core.cli.kit`) and
the core's own commands (``analyze``, ``compare``, ``plugins``, ``gpu-info``) live here, a module each, imported only
when that command runs (:mod:`magpie_core.cli.lazy`); every other command comes from a plugin: declared in the
``magpie.commands`` entry-point group, or added by ``magpie_register_commands`` (:mod:`magpie_core.cli.commands`)."""

from __future__ import annotations

import sys

from magpie_core.cli.app import app
from magpie_core.cli.kit import EXIT_USAGE, err_console, escape

__all__ = ["app", "main", "run"]

#: core commands that need no plugin command registered (``plugins`` lists the commands each plugin adds)
_WITHOUT_PLUGIN_COMMANDS = frozenset({"analyze", "compare", "gpu-info"})


def run(argv: list[str] | None = None) -> None:
    from magpie_core.cli.argv import expand_multi_value_options
    from magpie_core.cli.commands import add_plugin_commands, command_word, missing_plugin_message

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        word = command_word(args)
        if word not in _WITHOUT_PLUGIN_COMMANDS:
            add_plugin_commands(app, word=word)
        missing = missing_plugin_message(app, args)
        if missing:
            err_console.print(f"[red]error:[/red] {escape(missing)}", soft_wrap=True)
            raise SystemExit(EXIT_USAGE)
        app(args=expand_multi_value_options(args), prog_name="magpie")
    except Exception as exc:  # the policy's last line: one message, never a traceback (see cli.failures)
        raise SystemExit(_uncaught(exc, args)) from None


def main() -> None:
    """The ``magpie`` executable: :func:`run` (its ``SystemExit`` carries the exit code)."""
    run()


def _uncaught(exc: Exception, args: list[str]) -> int:
    from magpie_core.cli import failures

    if isinstance(exc, OSError):
        err_console.print(f"[red]error:[/red] {escape(failures.describe_os_error(exc))}", soft_wrap=True)
        return EXIT_USAGE
    log = failures.write_error_log(exc, args)
    err_console.print(f"[red]error:[/red] {escape(failures.internal_error_message(exc, log))}", soft_wrap=True)
    return failures.EXIT_INTERNAL
