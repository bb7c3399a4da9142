"""Job tools: follow, fetch and cancel the long runs of this server (any tool's jobs)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from magpie_core import hookimpl
from magpie_core.hookspecs import Register
from magpie_mcp.context import ToolContext, finished
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel


class JobResult(ToolModel):
    job: JobInfo
    report: dict[str, Any] | None = None


class JobList(ToolModel):
    jobs: list[JobInfo]


def job_status(tool: ToolContext, job_id: str) -> JobInfo:
    """State, elapsed time and recent progress messages of a job."""
    return tool.jobs.get(job_id).info()


async def job_result(
    tool: ToolContext,
    job_id: str,
    wait_s: Annotated[float, Field(ge=0, le=3600, description="wait up to this long for it to finish")] = 0,
) -> JobResult:
    """The report of a finished job (a tool error if it failed or was cancelled)."""
    import anyio.to_thread

    job = tool.jobs.get(job_id)
    if wait_s:
        await anyio.to_thread.run_sync(job.done.wait, wait_s)
    finished(job)
    return JobResult(job=job.info(), report=job.result)


async def job_cancel(tool: ToolContext, job_id: str) -> JobInfo:
    """Stop a running job and every process it started."""
    import anyio.to_thread

    job = await anyio.to_thread.run_sync(tool.jobs.cancel, job_id)
    return job.info()


def job_list(tool: ToolContext) -> JobList:
    """Every job of this server, oldest first."""
    return JobList(jobs=[j.info() for j in tool.jobs.list()])


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(job_status)
    register(job_result)
    register(job_cancel)
    register(job_list)
