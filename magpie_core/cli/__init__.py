"""The ``magpie`` command line.

The shell (global options, exit codes: :mod:`magpie_core.cli.app`) and the core's own commands
(``analyze``, ``compare``, ``plugins``, ``gpu-info``) live here, a module each, imported only
when that command runs (:mod:`magpie_core.cli.lazy`); every other command comes from a plugin through
``magpie_register_commands``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from magpie_core.cli.app import EXIT_USAGE, app, err_console

__all__ = ["app", "main", "run"]

#: core commands that need no plugin command registered (``plugins`` lists the commands each plugin adds)
_WITHOUT_PLUGIN_COMMANDS = frozenset({"analyze", "compare", "gpu-info"})


def run(argv: list[str] | None = None) -> None:
    from magpie_core.cli.argv import expand_multi_value_options
    from magpie_core.cli.blas import one_blas_thread
    from magpie_core.cli.commands import add_plugin_commands, command_word, missing_plugin_message

    one_blas_thread()
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        word = command_word(args)
        if word not in _WITHOUT_PLUGIN_COMMANDS:
            add_plugin_commands(app, word=word)
        missing = missing_plugin_message(app, args)
        if missing:
            err_console.print(f"[red]error:[/red] {missing}", soft_wrap=True)
            raise SystemExit(EXIT_USAGE)
        app(args=expand_multi_value_options(args), prog_name="magpie")
    except Exception as exc:  # the policy's last line: one message, never a traceback (see cli.failures)
        raise SystemExit(_uncaught(exc, args)) from None


def main() -> NoReturn:
    """The ``magpie`` executable: :func:`run`, then :func:`leave` with its exit code."""
    try:
        run()
    except SystemExit as exc:
        leave(exc.code)
    leave(0)


def leave(code: object) -> NoReturn:
    """End the process with ``code`` the way ``sys.exit`` would, minus the interpreter's teardown.

    Tearing down the modules a command imported (numpy, pydantic, typer, ...) takes 40-50 ms on this kind of
    machine, as long as a trace analysis of 150 MB. What a process must do before it ends still happens: the
    ``atexit`` functions run (they stop the processes magpie started, flush logs, join multiprocessing children)
    and stdout/stderr are flushed. Whenever skipping the rest could lose something, the normal exit runs instead:
    another thread is still alive (the interpreter would join it), the code is not an int (``sys.exit`` prints
    it), or flushing fails (a closed pipe: Python's own exit reports it).
    """
    status = 0 if code is None else code
    if not isinstance(status, int) or threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(status & 0xFF)


def _uncaught(exc: Exception, args: list[str]) -> int:
    from magpie_core.cli import failures
    from magpie_core.cli.app import escape

    if isinstance(exc, OSError):
        err_console.print(f"[red]error:[/red] {escape(failures.describe_os_error(exc))}", soft_wrap=True)
        return EXIT_USAGE
    log = failures.write_error_log(exc, args)
    err_console.print(f"[red]error:[/red] {escape(failures.internal_error_message(exc, log))}", soft_wrap=True)
    return failures.EXIT_INTERNAL
