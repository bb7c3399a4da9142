"""The root typer group: ``magpie``'s global options (into :data:`~magpie_core.cli.kit.STATE`), ``--version``,
``--gpu-info`` and logging; what commands share is :mod:`magpie_core.cli.kit`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from magpie_core.cli.kit import STATE, check_output_dir
from magpie_core.cli.lazy import LazyGroup
from magpie_core.cli.output import console

app = typer.Typer(
    name="magpie",
    cls=LazyGroup,
    help="Tell the truth about GPU kernel and LLM-inference performance.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
LazyGroup.root = app


def setup_logging(verbose: bool) -> None:
    level = logging.DEBUG if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("magpie").setLevel(logging.DEBUG if verbose else logging.INFO)


def _version_callback(value: bool) -> None:
    if value:
        from magpie_core import __version__

        console.print(f"magpie {__version__}")
        raise typer.Exit()


def _gpu_info_callback(ctx: typer.Context, value: bool) -> None:
    if value:  # `magpie gpu-info`, as the root group makes it
        ctx.command.get_command(ctx, "gpu-info").main(args=[], prog_name="magpie gpu-info")  # type: ignore[attr-defined]


@app.callback()
def main(
    config: Path | None = typer.Option(None, "--config", "-c", help="framework config.yaml"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="debug logging"),
    environment: str | None = typer.Option(None, "--environment", "-e", help="local, or an installed environment"),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1, help="parallel workers"),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-o", help="where run workspaces go", callback=check_output_dir
    ),
    docker_image: str | None = typer.Option(None, "--docker-image", help="image for -e container"),
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="print the version"
    ),
    gpu_info: bool = typer.Option(False, "--gpu-info", callback=_gpu_info_callback, help="same as gpu-info"),
) -> None:
    STATE.__init__(config, verbose, environment, workers, output_dir, docker_image)  # type: ignore[misc]  # afresh
    setup_logging(verbose)
