"""The loop's MCP tools: an agent drives the loop by folder, never carrying report paths between steps.

Every path goes through the server's trust policy (``ToolContext.check_path``); a step that cannot be
recorded is a tool error naming the file or field.
"""

from __future__ import annotations

from typing import Annotated, Any

from magpie_mcp import ToolContext, ToolFailure
from pydantic import Field

from magpie_loop.state import STEPS, LoopError

LoopDir = Annotated[str, Field(description="the loop folder (under an allowed root)")]


def _guard(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except LoopError as exc:
        raise ToolFailure(str(exc)) from exc


def loop_start(tool: ToolContext, loop_dir: LoopDir, name: str | None = None) -> dict[str, Any]:
    """Start an optimization loop: an empty record (loop.json) in loop_dir; returns the record."""
    from magpie_loop.state import start_loop

    state = _guard(start_loop, tool.check_path(loop_dir, "loop_dir"), name)
    return {"record": state.model_dump(mode="json"), "next": "loop_add(step='baseline', path=<benchmark report>)"}


def loop_add(
    tool: ToolContext,
    loop_dir: LoopDir,
    step: Annotated[str, Field(description=" | ".join(STEPS))],
    path: Annotated[str | None, Field(description="the report or trace to record (not for step 'kernel')")] = None,
    kernel: Annotated[str | None, Field(description="kernel: its name; compare: the kernel it is about")] = None,
    allow_different_workload: bool = False,
) -> dict[str, Any]:
    """Record one loop step: baseline, profile, analysis, kernel (by name, from the analyses), compare, final."""
    from magpie_loop.steps import add_step, next_step

    folder = tool.check_path(loop_dir, "loop_dir")
    if step not in STEPS:
        raise ToolFailure(f"unknown step {step!r}: use one of {', '.join(STEPS)}")
    target = tool.check_path(path, "path") if path else None
    state, message = _guard(
        add_step, folder, step, target, kernel=kernel, allow_different_workload=allow_different_workload
    )
    return {"recorded": message, "next": next_step(state)}


def loop_status(tool: ToolContext, loop_dir: LoopDir) -> dict[str, Any]:
    """The loop's record (loop.json) and the next step to take."""
    from magpie_loop.state import load_state
    from magpie_loop.steps import next_step

    state = _guard(load_state, tool.check_path(loop_dir, "loop_dir"))
    return {"record": state.model_dump(mode="json"), "next": next_step(state)}


def loop_report(tool: ToolContext, loop_dir: LoopDir) -> dict[str, Any]:
    """Write the final optimization report; its conclusion is 'success' only when every condition holds."""
    from magpie_loop.conclude import build_report, write_report
    from magpie_loop.state import load_state

    folder = tool.check_path(loop_dir, "loop_dir")
    result = build_report(_guard(load_state, folder), folder)
    json_path, md_path = write_report(result, folder)
    return {**result.model_dump(mode="json"), "report_json": str(json_path), "report_md": str(md_path)}


def register_tools(register: Any) -> None:
    for fn in (loop_start, loop_add, loop_status, loop_report):
        register(fn)
