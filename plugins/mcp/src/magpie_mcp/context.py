"""What every MCP tool can receive from the server: :class:`ToolContext`.

A tool is a plain typed function registered through ``magpie_register_mcp_tools``.
When one of its parameters is annotated :class:`ToolContext`, the server passes
its one context object there and leaves the parameter out of the tool's input
schema; built-in tools and a plugin's tools get the same object::

    from magpie_mcp import ToolContext

    def count_files(tool: ToolContext, folder: str = ".") -> dict[str, int]:
        root = tool.check_path(folder, "folder")  # an error outside the allowed roots
        return {"files": sum(1 for p in root.rglob("*") if p.is_file())}

This module imports no MCP SDK (tool modules load with every ``magpie`` command);
the server that does is :mod:`magpie_mcp.server`.
"""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_mcp.config import McpConfig, mcp_config
from magpie_mcp.jobs import Job, JobManager, Runner
from magpie_mcp.trust import TrustPolicy

if TYPE_CHECKING:
    from magpie_core.config.framework import FrameworkConfig

#: The SDK's request context of the tool call in progress (set by the server around each async call).
CURRENT_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("magpie_mcp_request", default=None)


class ToolFailure(Exception):
    """A tool could not do what was asked; the client gets a tool error with this message.

    ``ValueError``, ``LookupError``, ``OSError``, ``PermissionError`` (a trust violation) and
    config errors become tool errors the same way; anything else is a crash.
    """


class ToolContext:
    """The server's state, as a tool sees it: config, trust policy, output folder, jobs.

    * ``framework``: the framework config (``magpie -c config.yaml mcp``); ``config``: its ``mcp:`` block.
    * ``policy``: the trust policy; :meth:`check_path` resolves a path from a tool input and
      refuses one outside the allowed workspace roots (a tool error naming the path and the roots).
    * ``output_dir``: where runs go (``output.directory``); :meth:`out_dir` checks an override.
    * ``jobs``: the server's jobs; :meth:`start_job` runs work in a job process and :meth:`follow`
      waits for it, sending its progress messages as MCP progress notifications.
    * ``request``: the MCP SDK's request context of the current call (async tools; else None).
    """

    def __init__(self, framework: FrameworkConfig, cwd: Path, config: McpConfig | None = None) -> None:
        self.framework = framework
        self.config = config or mcp_config(framework)
        self.cwd = cwd.resolve()
        self.policy = TrustPolicy.from_roots(self.config.allowed_roots, self.cwd)
        self.output_dir = (self.cwd / framework.output.directory).resolve()
        self.jobs = JobManager(self.output_dir / "mcp_jobs", self.cwd)

    @property
    def request(self) -> Any:
        """The SDK's ``Context`` of the tool call in progress (progress, logging), or None."""
        return CURRENT_REQUEST.get()

    def check_path(self, path: str | Path, what: str) -> Path:
        """``path`` (relative to the server's CWD) resolved; a tool error when outside every allowed root."""
        return self.policy.check_path(path, what)

    def out_dir(self, output_dir: str | Path | None) -> Path:
        """Where a run writes: ``output_dir`` when given (checked), else the configured output folder."""
        return self.policy.check_path(output_dir or self.output_dir, "output_dir")

    def start_job(self, kind: str, args: dict[str, Any], runner: Runner) -> Job:
        """Run ``runner(args, emit)`` in a job process (see :mod:`magpie_mcp.jobs`)."""
        return self.jobs.start(kind, args, runner)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """An MCP progress notification for the current call (nothing when the client asked for none)."""
        request = self.request
        if request is not None:
            await request.report_progress(progress, total, message)

    async def follow(self, job: Job, wait: bool) -> Job:
        """Wait for ``job`` (when asked), forwarding its progress messages as MCP progress notifications.

        A job that failed or was cancelled is a tool error; cancelling the call cancels the job.
        """
        import anyio  # here: tool modules load with every magpie command
        import anyio.to_thread

        if not wait:
            return job
        sent = 0
        try:
            while not job.done.is_set():
                if job.progress > sent:
                    sent = job.progress
                    await self.report_progress(sent, None, job.messages[-1] if job.messages else None)
                await anyio.sleep(0.2)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.jobs.cancel, job.id)
            raise
        if job.progress > sent:
            await self.report_progress(job.progress, job.progress, job.messages[-1] if job.messages else None)
        return finished(job)


def finished(job: Job) -> Job:
    """``job``, or a tool error when it failed or was cancelled."""
    if job.state == "failed":
        raise ToolFailure(f"{job.kind} job {job.id} failed: {job.error}")
    if job.state == "cancelled":
        raise ToolFailure(f"{job.kind} job {job.id} was cancelled")
    return job
