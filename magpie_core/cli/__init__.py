"""The ``magpie`` command line.

The shell (global options, exit codes: :mod:`magpie_core.cli.app`) and the core's own commands
(``analyze``, ``compare``, ``benchmark``, ``plugins``, ``gpu-info``) live here, a module each;
every other command comes from a plugin through ``magpie_register_commands``.
"""

from __future__ import annotations

import sys

from magpie_core.cli import (  # noqa: F401  (importing registers the commands)
    benchmark,
    gpu_info,
    kernels,
    plugins_cmd,
)
from magpie_core.cli.app import EXIT_USAGE, app, err_console

__all__ = ["app", "run"]


def run(argv: list[str] | None = None) -> None:
    from magpie_core.cli.argv import expand_multi_value_options
    from magpie_core.cli.commands import add_plugin_commands, missing_plugin_message

    args = sys.argv[1:] if argv is None else list(argv)
    add_plugin_commands(app)
    missing = missing_plugin_message(app, args)
    if missing:
        err_console.print(f"[red]error:[/red] {missing}", soft_wrap=True)
        raise SystemExit(EXIT_USAGE)
    app(args=expand_multi_value_options(args), prog_name="magpie")
