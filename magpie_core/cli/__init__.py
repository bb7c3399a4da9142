"""The ``magpie`` command line. Each command lives in its own module."""

from magpie_core.cli import (  # noqa: F401  (importing registers the commands)
    benchmark,
    gap,
    gpu_info,
    kernels,
    mcp,
    plugins_cmd,
)
from magpie_core.cli.app import app

__all__ = ["app"]


def run(argv: list[str] | None = None) -> None:
    import sys

    from magpie_core.cli.gap import expand_multi_value_options

    args = sys.argv[1:] if argv is None else argv
    app(args=expand_multi_value_options(list(args)), prog_name="magpie")
