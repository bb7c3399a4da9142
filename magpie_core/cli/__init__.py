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


def run() -> None:
    app()
