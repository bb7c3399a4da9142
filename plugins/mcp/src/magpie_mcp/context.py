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
import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_mcp.config import McpConfig, mcp_config
from magpie_mcp.jobs import LOCAL_OWNER, Job, JobLimits, JobManager, Runner
from magpie_mcp.trust import TrustError, TrustPolicy, resolve_programs

if TYPE_CHECKING:
    from magpie_core.config.framework import FrameworkConfig

log = logging.getLogger("magpie.mcp")

#: The SDK's request context of the tool call in progress (set by the server around each async call).
CURRENT_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("magpie_mcp_request", default=None)


class ToolFailure(Exception):
    """A tool could not do what was asked; the client gets a tool error with this message.

    ``ValueError``, ``LookupError``, ``OSError``, ``PermissionError`` (a trust violation) and
    config errors become tool errors the same way; anything else is a crash.
    """


class SessionJobs:
    """The jobs of one MCP session: what ``tool.jobs`` is during a call.

    ``get``/``list``/``cancel`` see only the jobs this session made; an HTTP client cannot list,
    read or cancel another session's jobs, and an unknown id does not reveal other ids.
    """

    def __init__(self, manager: JobManager, owner: str) -> None:
        self.manager = manager
        self.owner = owner

    def get(self, job_id: str) -> Job:
        return self.manager.get(job_id, self.owner)

    def list(self) -> list[Job]:
        return self.manager.list(self.owner)

    def cancel(self, job_id: str) -> Job:
        return self.manager.cancel(job_id, self.owner)

    def start(self, kind: str, args: dict[str, Any], runner: Runner, timeout_s: float | None = None) -> Job:
        return self.manager.start(kind, args, runner, self.owner, timeout_s)


#: owners of calls that came over HTTP without an MCP session (stateless / 2026-07-28 requests)
SESSIONLESS = "request:"


def session_owner(request: Any) -> str:
    """Who a call comes from.

    A streamable-HTTP session (its ``Mcp-Session-Id``: the SDK routes a request only to the session
    it names, and with a bearer token only for the credential that opened it); stdio's one client;
    or, for an HTTP request without a session (the 2026-07-28 protocol is sessionless), the request
    alone: its jobs are its own and end with it (:meth:`ToolContext.follow` refuses ``wait=false``).
    """
    headers = getattr(request, "headers", None) if request is not None else None
    if headers is None:
        return LOCAL_OWNER
    session = headers.get("mcp-session-id")
    if session:
        return f"http:{session}"
    return f"{SESSIONLESS}{id(getattr(request, 'request_context', request))}"


class ToolContext:
    """The server's state, as a tool sees it: config, trust policy, output folder, jobs.

    * ``framework``: the framework config (``magpie -c config.yaml mcp``); ``config``: its ``mcp:`` block.
    * ``policy``: the trust policy; :meth:`check_path` resolves a path from a tool input and
      refuses one outside the allowed workspace roots (a tool error naming the path and the roots).
    * ``output_dir``: where runs go (``output.directory``); :meth:`out_dir` checks an override.
    * ``jobs``: the calling session's jobs; :meth:`start_job` runs work in a job process and
      :meth:`follow` waits for it, sending its progress as MCP progress and log notifications.
    * ``request``: the MCP SDK's request context of the current call (else None).
    """

    def __init__(
        self, framework: FrameworkConfig, cwd: Path, config: McpConfig | None = None, policy: TrustPolicy | None = None
    ) -> None:
        self.framework = framework
        self.config = config or mcp_config(framework)
        self.cwd = cwd.resolve()
        self.policy = policy or policy_from_config(self.config, self.cwd)
        self.output_dir = (self.cwd / framework.output.directory).resolve()
        if self.output_dir == Path(self.output_dir.anchor):
            raise ValueError("output.directory is the file system root: name a folder for magpie's results")
        self.job_manager = JobManager(
            self.output_dir / "mcp_jobs",
            self.cwd,
            limits_from_config(self.config),
            keep_env=self.config.job_env,
            secret_env=[self.config.auth_token_env] if self.config.auth_token_env else [],
        )

    @property
    def request(self) -> Any:
        """The SDK's ``Context`` of the tool call in progress (progress, logging), or None."""
        return CURRENT_REQUEST.get()

    @property
    def owner(self) -> str:
        """The session the current call belongs to."""
        return session_owner(self.request)

    @property
    def jobs(self) -> SessionJobs:
        """The calling session's jobs."""
        return SessionJobs(self.job_manager, self.owner)

    def check_path(self, path: str | Path, what: str) -> Path:
        """``path`` (relative to the server's CWD) resolved; a tool error unless it is under an allowed root
        or in the configured output folder (the operator's choice, where magpie writes its runs)."""
        try:
            resolved = self.policy.check_path(path, what)
        except TrustError:
            resolved = (self.cwd / Path(str(path)).expanduser()).resolve()
            if not (resolved == self.output_dir or resolved.is_relative_to(self.output_dir)):
                raise
        jobs = self.job_manager.folder
        if resolved == jobs or resolved.is_relative_to(jobs):
            # job folders belong to their sessions: read them through the job tools and resources
            raise TrustError(f"{what} {resolved} is in the server's job folders; use job_result or the job resources")
        return resolved

    def out_dir(self, output_dir: str | Path | None) -> Path:
        """Where a run writes: ``output_dir`` when given (checked like :meth:`check_path`), else the
        configured output folder (``output.directory``)."""
        return self.check_path(output_dir, "output_dir") if output_dir else self.output_dir

    def start_job(self, kind: str, args: dict[str, Any], runner: Runner, timeout_s: float | None = None) -> Job:
        """Run ``runner(args, emit)`` in a job process of the calling session (see :mod:`magpie_mcp.jobs`),
        stopped after ``timeout_s`` (at most the server's ``max_timeout_s``; every job also has the
        server's ``max_job_seconds``)."""
        if timeout_s is not None:
            self.policy.check_timeouts({"timeout_s": timeout_s}, kind)
        return self.jobs.start(kind, args, runner, timeout_s)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """An MCP progress notification for the current call (nothing when the client asked for none)."""
        request = self.request
        if request is not None:
            await request.report_progress(progress, total, message)

    async def log(self, level: str, message: str, logger: str = "magpie") -> None:
        """An MCP logging notification (``notifications/message``) for the current call."""
        request = self.request
        if request is None:
            return
        with warnings.catch_warnings():  # the SDK marks the logging capability deprecated as of 2026-07-28
            warnings.simplefilter("ignore")
            try:
                await request.log(level, message, logger_name=logger)
            except Exception as exc:  # a client that cannot take logs must not fail the call
                log.debug("log notification not sent: %s", exc)

    async def follow(self, job: Job, wait: bool) -> Job:
        """Wait for ``job`` (when asked), forwarding each progress message as an MCP progress notification
        (with the total when the work has one) and as a log notification (logger ``magpie.job.<id>``).

        A job that failed or was cancelled is a tool error; cancelling the call cancels the job.
        """
        import anyio  # here: tool modules load with every magpie command
        import anyio.to_thread

        if not wait:
            if job.owner.startswith(SESSIONLESS):
                await anyio.to_thread.run_sync(self.job_manager.cancel, job.id, None, "refused")
                raise ToolFailure(
                    "wait=false needs an MCP session to come back to the job, and this HTTP request has none "
                    "(a stateless or 2026-07-28 request): call with wait=true, or connect with a session"
                )
            return job
        sent = [0, 0.0]  # messages forwarded, last progress value sent
        try:
            while True:
                done = job.done.is_set()
                await self._forward(job, sent, done)
                if done:
                    break
                await anyio.sleep(0.2)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.job_manager.cancel, job.id)
            raise
        return finished(job)

    async def _forward(self, job: Job, sent: list[Any], done: bool) -> None:
        """Send the messages of ``job`` not sent yet; progress counts steps when the work says how many."""
        with job.lock:
            count, step, total, messages = job.progress, job.step, job.total, list(job.messages)
        if count <= sent[0]:
            return
        fresh = messages[-(count - sent[0]) :]
        sent[0] = count
        for text in fresh:
            await self.log("info", text, f"magpie.job.{job.id}")
        value, of = (step, total) if total else (count, count if done else None)
        if done and total:
            value = max(value, sent[1])
        if value > sent[1]:
            sent[1] = value
            await self.report_progress(value, of, fresh[-1])


def policy_from_config(config: McpConfig, cwd: Path) -> TrustPolicy:
    """The trust policy an ``mcp:`` block describes (roots default to ``cwd``)."""
    return TrustPolicy.from_roots(
        config.allowed_roots,
        cwd,
        programs=resolve_programs(config.allow_commands),
        allow_env=frozenset(config.allow_env),
        modules=tuple(config.allowed_modules),
        max_timeout_s=config.max_timeout_s,
        backend_options=config.allow_backend_options,
        ray_addresses=tuple(config.ray_addresses),
    )


def limits_from_config(config: McpConfig) -> JobLimits:
    return JobLimits(
        max_concurrent=config.max_concurrent_jobs,
        max_queued=config.max_queued_jobs,
        max_session_running=config.max_session_jobs,
        max_session_queued=config.max_session_queued,
        max_result_bytes=config.max_result_bytes,
        max_seconds=config.max_job_seconds,
        keep_jobs=config.keep_jobs,
        keep_days=config.keep_days,
    )


def finished(job: Job) -> Job:
    """``job``, or a tool error when it failed or was cancelled."""
    if job.state == "failed":
        raise ToolFailure(f"{job.kind} job {job.id} failed: {job.error}")
    if job.state == "cancelled":
        raise ToolFailure(f"{job.kind} job {job.id} was cancelled: {job.error}")
    return job
