"""``magpie loop start|add|status|report``: the loop record from the command line.

Exit codes: 0 ok (``report``: the conclusion is success), 1 ``report`` written but the conclusion is
not success, 2 a step that cannot be recorded (the message names the file or field).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from magpie_core.cli.kit import UsageError, console, handle_errors
from magpie_loop.basics import STEPS, LoopError

F = TypeVar("F", bound=Callable[..., Any])

loop_app = typer.Typer(
    help="The optimization loop as one record: baseline, profile, analyses, kernels, compares, final, report.",
    no_args_is_help=True,
)


def loop_errors(fn: F) -> F:
    """A LoopError is a usage error (exit 2, one line)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LoopError as exc:
            raise UsageError(str(exc)) from exc

    return handle_errors(wrapper)  # type: ignore[return-value]


@loop_app.command("start")
@loop_errors
def start(
    loop_dir: Path = typer.Argument(..., help="the loop folder (created)"),
    name: str | None = typer.Option(None, "--name", help="a name for the loop (default: the folder's)"),
) -> None:
    """Start a loop: an empty record (loop.json) in LOOP_DIR."""
    from magpie_loop.state import start_loop, state_path

    state = start_loop(loop_dir, name)
    console.print(f"loop {state.name} started: {state_path(loop_dir)}", markup=False)
    console.print("next: magpie loop add DIR baseline <benchmark_report.json>", markup=False)


@loop_app.command("add")
@loop_errors
def add(
    loop_dir: Path = typer.Argument(..., help="the loop folder"),
    step: str = typer.Argument(..., help=" | ".join(STEPS)),
    target: str = typer.Argument(..., help="the report / trace to record (kernel: the kernel name)"),
    kernel: str | None = typer.Option(None, "--kernel", help="compare: the selected kernel it is about"),
    source_file: str | None = typer.Option(None, "--source-file", help="kernel: a source given by hand (not exact)"),
    allow_different_workload: bool = typer.Option(
        False, "--allow-different-workload", help="final: compare even if the workload differs (labelled)"
    ),
) -> None:
    """Record one step of the loop."""
    from magpie_loop.steps import add_step

    if step == "kernel":
        _, message = add_step(loop_dir, step, None, kernel=target, source_file=source_file)
    else:
        _, message = add_step(
            loop_dir, step, Path(target), kernel=kernel, allow_different_workload=allow_different_workload
        )
    console.print(message, markup=False, soft_wrap=True)


@loop_app.command("status")
@loop_errors
def status(
    loop_dir: Path = typer.Argument(..., help="the loop folder"),
    as_json: bool = typer.Option(False, "--json", help="print loop.json"),
) -> None:
    """What the loop has recorded, and the next step."""
    from magpie_loop.state import load_state
    from magpie_loop.steps import as_json as dump
    from magpie_loop.steps import status_lines

    state = load_state(loop_dir)
    if as_json:
        typer.echo(dump(state))
        return
    for line in status_lines(state):
        console.print(line, markup=False, soft_wrap=True)


@loop_app.command("report")
@loop_errors
def report(
    loop_dir: Path = typer.Argument(..., help="the loop folder"),
    as_json: bool = typer.Option(False, "--json", help="print the report JSON"),
) -> None:
    """Write the final optimization report (loop_report.json and .md) and print its conclusion."""
    from magpie_loop.conclude import build_report, write_report
    from magpie_loop.state import load_state

    result = build_report(load_state(loop_dir), loop_dir)
    json_path, md_path = write_report(result, loop_dir)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        for c in result.conditions:
            console.print(f"  [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}", markup=False, soft_wrap=True)
        console.print(f"conclusion: {result.conclusion}", markup=False, soft_wrap=True)
        console.print(f"report: {md_path} and {json_path}", markup=False)
    raise typer.Exit(0 if result.success else 1)
