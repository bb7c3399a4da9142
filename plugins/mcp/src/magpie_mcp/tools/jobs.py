"""Job tools: follow, fetch and cancel the long runs of the calling session (any tool's jobs).

Also AMD Magpie's names for them (``ray_task_status``, ``ray_task_result``, ``ray_task_cancel``,
``ray_task_list``, with ``task_id``): the same tools, so an agent written for AMD Magpie works.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from magpie_core import hookimpl
from magpie_core.hookspecs import Register
from magpie_mcp.annotations import tool_meta
from magpie_mcp.context import ToolContext, finished
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel

JobId = Annotated[
    str,
    Field(
        description="a job id from a tool's result or job_list (this session's jobs), or a job's job_token "
        "(from any session: a new connection reaches a job started with wait=false)"
    ),
]
TaskId = Annotated[str, Field(description="AMD Magpie's name for job_id (an id or a job token)")]
WaitS = Annotated[float, Field(ge=0, le=3600, description="wait up to this long for it to finish")]
#: AMD Magpie's ray_task_* tools take these; accepted and ignored (jobs run where the server runs them)
RayAddress = Annotated[str, Field(description="AMD Magpie compatibility; ignored")]


class JobResult(ToolModel):
    job: JobInfo = Field(description="where the job stands")
    report: dict[str, Any] | None = Field(
        None, description="the job's report, shaped as the tool that started it returns it (kind says which)"
    )


class JobList(ToolModel):
    jobs: list[JobInfo] = Field(description="this session's jobs, oldest first")


@tool_meta("Job status", read_only=True, idempotent=True, open_world=False)
def job_status(tool: ToolContext, job_id: JobId) -> JobInfo:
    """State, elapsed time and recent progress messages of a job of this session (or of the job a token names)."""
    return tool.jobs.get(job_id).info(job_id)


@tool_meta("Job result", read_only=True, idempotent=True, open_world=False)
async def job_result(tool: ToolContext, job_id: JobId, wait_s: WaitS = 0) -> JobResult:
    """The report of a finished job (a tool error if it failed or was cancelled). While waiting (wait_s) the
    call sends progress notifications at least every 2 s; giving up the wait leaves the job running."""
    job = tool.jobs.get(job_id)
    if wait_s:
        await tool.watch(job, wait_s)
    finished(job)
    return JobResult(job=job.info(job_id), report=job.result)


@tool_meta("Cancel a job", read_only=False, destructive=True, idempotent=True, open_world=False)
async def job_cancel(tool: ToolContext, job_id: JobId) -> JobInfo:
    """Stop a queued or running job of this session (or the job a token names) and every process it started."""
    import anyio.to_thread

    jobs = tool.jobs
    job = await anyio.to_thread.run_sync(jobs.cancel, job_id)
    return job.info(job_id)


@tool_meta("List jobs", read_only=True, idempotent=True, open_world=False)
def job_list(tool: ToolContext) -> JobList:
    """Every job of this session, oldest first."""
    return JobList(jobs=[j.info() for j in tool.jobs.list()])


# --- AMD Magpie's names ----------------------------------------------------------------------


@tool_meta("Job status (AMD Magpie name)", read_only=True, idempotent=True, open_world=False)
def ray_task_status(
    tool: ToolContext, task_id: TaskId, ray_cluster_address: RayAddress = "", ray_shared_storage_path: RayAddress = ""
) -> JobInfo:
    """AMD Magpie's name for job_status."""
    return job_status(tool, task_id)


@tool_meta("Job result (AMD Magpie name)", read_only=True, idempotent=True, open_world=False)
async def ray_task_result(
    tool: ToolContext, task_id: TaskId, ray_cluster_address: RayAddress = "", ray_shared_storage_path: RayAddress = ""
) -> JobResult:
    """AMD Magpie's name for job_result."""
    return await job_result(tool, task_id, 0)


@tool_meta("Cancel a job (AMD Magpie name)", read_only=False, destructive=True, idempotent=True, open_world=False)
async def ray_task_cancel(
    tool: ToolContext, task_id: TaskId, ray_cluster_address: RayAddress = "", ray_shared_storage_path: RayAddress = ""
) -> JobInfo:
    """AMD Magpie's name for job_cancel."""
    return await job_cancel(tool, task_id)


@tool_meta("List jobs (AMD Magpie name)", read_only=True, idempotent=True, open_world=False)
def ray_task_list(
    tool: ToolContext, ray_cluster_address: RayAddress = "", ray_shared_storage_path: RayAddress = ""
) -> JobList:
    """AMD Magpie's name for job_list."""
    return job_list(tool)


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    for tool in (job_status, job_result, job_cancel, job_list):
        register(tool)
    for alias in (ray_task_status, ray_task_result, ray_task_cancel, ray_task_list):
        register(alias)
