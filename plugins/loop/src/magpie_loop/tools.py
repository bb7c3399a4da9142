"""The loop's MCP tools: an agent drives the loop by folder, never carrying report paths between steps.

Every path goes through the server's trust policy (``ToolContext.check_path``); a step that cannot be
recorded is a tool error naming the file or field.
"""

from __future__ import annotations

from typing import Annotated, Any

from magpie_mcp import ToolContext, ToolFailure, ToolModel
from magpie_mcp.annotations import tool_meta
from pydantic import Field

from magpie_loop.state import STEPS, LoopError

LoopDir = Annotated[str, Field(description="the loop folder (under an allowed root)")]


class LoopRecordOut(ToolModel):
    record: dict[str, Any] = Field(description="loop.json: every recorded step")
    next: str = Field(description="the next step to take")


class LoopAddOut(ToolModel):
    recorded: str = Field(description="what was read and kept from the file")
    next: str


class LoopReportOut(ToolModel):
    conclusion: str = Field(description="'success' only when every condition holds; else names the failing ones")
    success: bool
    failing: list[str]
    conditions: list[dict[str, Any]]
    kernels: list[dict[str, Any]]
    compares: list[dict[str, Any]]
    end_to_end: dict[str, Any] | None
    report_json: str
    report_md: str


def _guard(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except LoopError as exc:
        raise ToolFailure(str(exc)) from exc


@tool_meta("Start an optimization loop", read_only=False, idempotent=False, open_world=False)
def loop_start(
    tool: ToolContext,
    loop_dir: LoopDir,
    name: Annotated[str | None, Field(description="a name for the loop (default: the folder's)")] = None,
) -> LoopRecordOut:
    """Start an optimization loop: an empty record (loop.json) in loop_dir; returns the record."""
    from magpie_loop.state import start_loop

    state = _guard(start_loop, tool.check_path(loop_dir, "loop_dir"), name)
    return LoopRecordOut(
        record=state.model_dump(mode="json"), next="loop_add(step='baseline', path=<benchmark report>)"
    )


@tool_meta("Record a loop step", read_only=False, idempotent=False, open_world=False)
def loop_add(
    tool: ToolContext,
    loop_dir: LoopDir,
    step: Annotated[str, Field(description=" | ".join(STEPS))],
    path: Annotated[str | None, Field(description="the report or trace to record (not for step 'kernel')")] = None,
    kernel: Annotated[str | None, Field(description="kernel: its name; compare: the kernel it is about")] = None,
    allow_different_workload: Annotated[
        bool, Field(description="final: give the end-to-end verdict even if the workload differs (labelled)")
    ] = False,
) -> LoopAddOut:
    """Record one loop step: baseline, profile, analysis, kernel (by name, from the analyses), compare, final."""
    from magpie_loop.steps import add_step, next_step

    folder = tool.check_path(loop_dir, "loop_dir")
    if step not in STEPS:
        raise ToolFailure(f"unknown step {step!r}: use one of {', '.join(STEPS)}")
    target = tool.check_path(path, "path") if path else None
    state, message = _guard(
        add_step, folder, step, target, kernel=kernel, allow_different_workload=allow_different_workload
    )
    return LoopAddOut(recorded=message, next=next_step(state))


@tool_meta("Loop status", read_only=True, idempotent=True, open_world=False)
def loop_status(tool: ToolContext, loop_dir: LoopDir) -> LoopRecordOut:
    """The loop's record (loop.json) and the next step to take."""
    from magpie_loop.state import load_state
    from magpie_loop.steps import next_step

    state = _guard(load_state, tool.check_path(loop_dir, "loop_dir"))
    return LoopRecordOut(record=state.model_dump(mode="json"), next=next_step(state))


@tool_meta("Write the loop's optimization report", read_only=False, idempotent=True, open_world=False)
def loop_report(tool: ToolContext, loop_dir: LoopDir) -> LoopReportOut:
    """Write the final optimization report; its conclusion is 'success' only when every condition holds."""
    from magpie_loop.conclude import build_report, write_report
    from magpie_loop.state import load_state

    folder = tool.check_path(loop_dir, "loop_dir")
    result = build_report(_guard(load_state, folder), folder)
    json_path, md_path = write_report(result, folder)
    data = result.model_dump(mode="json")
    keep = {k: data[k] for k in ("conclusion", "success", "failing", "conditions", "kernels", "compares", "end_to_end")}
    return LoopReportOut(**keep, report_json=str(json_path), report_md=str(md_path))


def register_tools(register: Any) -> None:
    for fn in (loop_start, loop_add, loop_status, loop_report):
        register(fn)
