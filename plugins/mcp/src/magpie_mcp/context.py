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
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_mcp.audit import AuditLog
from magpie_mcp.config import McpConfig, mcp_config
from magpie_mcp.jobs import Job, JobLimits, JobManager, Runner, session_owner
from magpie_mcp.trust import TrustError, TrustPolicy, resolve_programs

if TYPE_CHECKING:
    from magpie_core.config.defaults import FrameworkConfig

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


class ToolContext:
    """The server's state, as a tool sees it: config, trust policy, output folder, jobs.

    * ``framework``: the framework config (``magpie -c config.yaml mcp``); ``config``: its ``mcp:`` block.
    * ``policy``: the trust policy; :meth:`check_path` resolves a path from a tool input and
      refuses one outside the allowed workspace roots (a tool error naming the path and the roots).
    * ``output_dir``: where runs go (``output.directory``); :meth:`out_dir` checks an override.
    * ``jobs``: the calling session's jobs; :meth:`start_job` runs work in a job process and
      :meth:`follow` waits for it (heartbeat progress) or detaches it; :meth:`watch` follows one for a while.
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
        self.audit = AuditLog(self._audit_path())
        self.job_manager = JobManager(
            self.output_dir / "mcp_jobs",
            self.cwd,
            limits_from_config(self.config),
            keep_env=self.config.job_env,
            secret_env=[self.config.auth_token_env] if self.config.auth_token_env else [],
        )

    def _audit_path(self) -> Path | None:
        """Where the audit log goes: ``mcp.audit_log`` relative to the output folder (None: no log)."""
        if not self.config.audit_log:
            return None
        return (self.output_dir / Path(self.config.audit_log).expanduser()).resolve()

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
        if self.audit.path is not None and resolved == self.audit.path:
            # every session's calls are in it: the operator's file
            raise TrustError(f"{what} {resolved} is the server's audit log, which only the operator reads")
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
        """Wait for ``job`` (when asked), forwarding its progress (:class:`ProgressStream`: each message as an
        MCP log notification, and MCP progress with a heartbeat at least every :data:`HEARTBEAT_S` seconds).

        ``wait=False`` detaches the job: the call returns at once with the job's token, and the job runs on
        when the session ends (until it finishes or reaches its time limit). With ``wait=True`` a job that
        failed or was cancelled is a tool error, and cancelling the call cancels the job.
        """
        import anyio  # here: tool modules load with every magpie command
        import anyio.to_thread

        if not wait:
            job.detached = True
            return job
        try:
            await self.watch(job, None)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.job_manager.cancel, job.id)
            raise
        return finished(job)

    async def watch(self, job: Job, wait_s: float | None) -> None:
        """Send ``job``'s progress to the current call until it ends or ``wait_s`` seconds have passed
        (None: until it ends). Leaving early (the call cancelled) leaves the job alone."""
        import anyio

        stream = ProgressStream(self, job)
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            done = job.done.is_set()
            await stream.update(done)
            if done or (deadline is not None and time.monotonic() >= deadline):
                return
            await anyio.sleep(POLL_S)


#: longest silence of a waiting call: standard clients (MCP Inspector: 60 s) give up on a request that sends
#: nothing, and many reset their timeout on each progress notification; the issue asks for at most 5 s
HEARTBEAT_S = 2.0
#: how often a waiting call looks at its job
POLL_S = 0.2
#: seconds after which a heartbeat has covered half of the way to the next step (it never reaches it)
HALF_WAY_S = 30.0


class ProgressStream:
    """What one waiting call sends about a job: each new progress message as an MCP log notification
    (logger ``magpie.job.<id>``), and MCP progress notifications that always carry a total and always increase.

    The scale: when the work reports steps (``[3/8] kernel_a: passed``) the total is the steps plus one (writing
    the report) and ``progress`` is the steps done; before that the total is 1. Between messages a heartbeat goes
    out every :data:`HEARTBEAT_S` seconds, moving ``progress`` a little towards the next step (never reaching it,
    so the value increases as the spec requires) with a message saying the job's state, time and limit. At the
    end ``progress`` equals the total.
    """

    def __init__(self, tool: ToolContext, job: Job) -> None:
        self.tool = tool
        self.job = job
        self.messages = 0  # job messages already forwarded
        self.value = -1.0  # the last progress value sent (none yet)
        self.base = 0.0
        self.base_since = time.monotonic()
        self.last_sent = 0.0

    async def update(self, done: bool) -> None:
        job = self.job
        with job.lock:
            count, step, steps, messages, state = job.progress, job.step, job.total, list(job.messages), job.state
        fresh = messages[-(count - self.messages) :] if count > self.messages else []
        self.messages = max(self.messages, count)
        for text in fresh:
            await self.tool.log("info", text, f"magpie.job.{job.id}")
        now = time.monotonic()
        if not (fresh or done) and now - self.last_sent < HEARTBEAT_S:
            return
        total = float(steps + 1) if steps else 1.0
        base = float(min(step, steps)) if steps else 0.0
        if base != self.base:
            self.base, self.base_since = base, now
        if done:
            value = total
        else:
            waited = now - self.base_since
            value = base + min(1.0, total - base) * waited / (waited + HALF_WAY_S)
            # the scale changed (steps became known) below a long heartbeat's value: still increase
            value = max(value, self.value + 1e-6)
        if value <= self.value:
            return
        self.value, self.last_sent = value, now
        await self.tool.report_progress(round(value, 6), total, fresh[-1] if fresh else self._heartbeat(state))

    def _heartbeat(self, state: str) -> str:
        job = self.job
        elapsed = time.monotonic() - job.started
        last = f"; last: {job.messages[-1]}" if job.messages else ""
        if state == "queued":
            return f"{job.kind} job {job.id} queued, waiting for a free slot ({elapsed:.0f} s)"
        return f"{job.kind} job {job.id} {state}, {elapsed:.0f} s (time limit {job.timeout_s:g} s){last}"


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
        benchmark_hosts=tuple(config.benchmark_hosts),
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
        warm_job_process=config.warm_job_process,
    )


def finished(job: Job) -> Job:
    """``job``, or a tool error when it failed or was cancelled."""
    if job.state == "failed":
        raise ToolFailure(f"{job.kind} job {job.id} failed: {job.error}")
    if job.state == "cancelled":
        raise ToolFailure(f"{job.kind} job {job.id} was cancelled: {job.error}")
    return job
