"""Long MCP runs (analyze, compare, benchmark, gap analysis, or a plugin's) as jobs.

Each job is a child process, ``python -m magpie_mcp.jobs SPEC RESULT``, in its
own process group: the MCP server stays responsive, nothing a pipeline prints
can corrupt the stdio protocol stream, and ``job_cancel`` stops the job and
every process it started (its SIGTERM handler stops the groups that
:mod:`magpie_core.runtime.processes` created, then the server stops the job's own
group). The child prints one JSON line per progress message; the server turns
them into MCP progress notifications.

Every job belongs to the session that made it (:meth:`JobManager.get` with an owner) and has a secret
token (``Job.token``) that reaches it from any session: a job started with ``wait=false`` is *detached* and
outlives its session, up to its time limit.

A kernel job (analyze, compare) is started in a *warm* process when one is ready: after such a job ends and
nothing else runs, the server starts a spare job process that imports magpie and starts the kernel backends'
fork server (torch and the harness imported once, plus what the last kernel job's fork server had), then waits
on its stdin for the next kernel job. An agent's next compare then does not wait for those imports, and the
warm-up runs while nothing is timed (``mcp.warm_job_process: false``: never).

What a job does is its *runner*: a top-level function
``runner(args: dict, emit: Callable[[str], None]) -> (report: dict, report_path: str)``
that the child imports by its module and name. The built-in tools pass theirs;
a plugin's tool passes its own the same way (:meth:`JobManager.start`).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hmac
import importlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from magpie_core.runtime.processes import stop_group
from magpie_mcp.models import ToolModel

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
#: What a job runs, in the job process: ``(args, emit) -> (report, report_path)``.
Runner = Callable[[dict[str, Any], Callable[[str], None]], tuple[dict[str, Any], str]]
MAX_MESSAGES = 50
_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: a progress message that says how far the work is: "[3/8] kernel_a: passed"
_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
#: who owns a job when no session is known (stdio, in-process clients)
LOCAL_OWNER = "local"
#: owners of calls that came over HTTP without an MCP session (stateless / 2026-07-28 requests): each request
#: is its own owner, and they all share one quota (:func:`quota_group`), since nothing tells their clients apart
SESSIONLESS = "request:"
#: job tokens start with this: recognizable in arguments (the audit log redacts them) and never a job id
TOKEN_PREFIX = "mjt_"
#: the server environment a job process keeps (names or shell patterns): what magpie, Python and the
#: GPU stacks need to run. Everything else (cloud keys, the bearer token, ...) never reaches kernel
#: code; the operator adds names with ``mcp.job_env``.
JOB_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "TMPDIR",
    "TEMP",
    "TMP",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "CUDA_HOME",
    "CUDA_PATH",
    "ROCM_PATH",
    "HIP_PATH",
    "XDG_CACHE_HOME",
    "RAY_ADDRESS",
    "MAGPIE_*",
)
#: the largest job spec (its arguments) a call may save
MAX_SPEC_BYTES = 4 * 2**20


class JobInfo(ToolModel):
    """Where a job stands."""

    job_id: str = Field(description="the job's id (job_status / job_result / job_cancel, in the session that made it)")
    job_token: str | None = Field(
        None,
        description="a secret handle on this job: pass it as job_id from any session (a new connection, a CLI "
        "call) to follow, fetch or cancel the job; whoever holds it can, so keep it private",
    )
    kind: str = Field(description="what runs: analyze, compare, benchmark, gap_analysis, or a plugin's kind")
    state: JobState = Field(description="queued (waiting for a free slot), running, succeeded, failed, cancelled")
    started_at: str = Field(description="when the call made the job (UTC, ISO 8601)")
    finished_at: str | None = Field(None, description="when it ended (UTC), None while queued or running")
    elapsed_s: float = Field(description="seconds since it was made (until it ended)")
    progress: int = Field(0, description="steps done of ``total`` when the work counts its steps, else messages so far")
    total: int | None = Field(None, description="steps the work has, when known")
    message_count: int = Field(0, description="progress messages so far (monotonic)")
    last_message: str | None = Field(None, description="the latest progress message")
    messages: list[str] = Field(default_factory=list, description="recent progress messages (last 10)")
    error: str | None = Field(None, description="why it failed or was cancelled")
    report_path: str | None = Field(None, description="the report file the job wrote")
    log_path: str = Field(description="the job's log file (job process stderr and progress)")
    log_uri: str = Field(description="the job's log as an MCP resource (resources/read)")
    report_uri: str | None = Field(None, description="the job's report as an MCP resource, once it has one")


@dataclass(frozen=True)
class JobLimits:
    """The operator's limits on jobs (``mcp:`` block)."""

    max_concurrent: int = 2
    max_queued: int = 32
    #: per session: jobs running at once, jobs waiting (one session cannot lock out the others)
    max_session_running: int = 2
    max_session_queued: int = 16
    max_result_bytes: int = 64 * 2**20
    max_seconds: float = 6 * 3600
    keep_jobs: int = 100
    keep_days: float = 7.0
    #: keep a spare job process warm for the next kernel job (module docstring)
    warm_job_process: bool = True


#: job kinds that run kernels: their next job gets the warm spare process, and one ending starts a spare
WARM_KINDS = frozenset({"analyze", "compare"})


class Job:
    def __init__(self, kind: str, folder: Path, owner: str = LOCAL_OWNER) -> None:
        #: never a number: clients that read tool arguments as JSON (the MCP Inspector's CLI) turned an id of
        #: digits, or digits around one "e", into a number, and an id like 1234e5678901 into infinity
        self.id = "j" + uuid.uuid4().hex[:12]
        #: 256 random bits: the id is short and appears in folder names and URIs, so it is no credential;
        #: the token is what lets another session reach the job (kept in memory only, never on disk)
        self.token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.kind = kind
        self.owner = owner
        #: returned to the client with wait=false: the job outlives its session (until its time limit)
        self.detached = False
        self.folder = folder
        self.started = time.monotonic()
        self.started_at = dt.datetime.now(dt.UTC).isoformat()
        self.finished_at: str | None = None
        self.finished_mono: float | None = None
        self.state: JobState = "queued"
        self.messages: list[str] = []
        self.progress = 0
        self.step = 0
        self.total: int | None = None
        self.error: str | None = None
        self.result: dict[str, Any] | None = None
        self.report_path: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.timeout_s = JobLimits.max_seconds
        self.done = threading.Event()
        self.lock = threading.Lock()

    @property
    def log_path(self) -> Path:
        return self.folder / "job.log"

    def info(self, ref: str | None = None) -> JobInfo:
        """Where the job stands; ``ref`` is how the caller named it (its id, or its token from another
        session): the resource URIs use the same name, so a token holder can read them too."""
        end = self.finished_mono or time.monotonic()
        ref = ref or self.id
        return JobInfo(
            job_id=self.id,
            job_token=self.token,
            kind=self.kind,
            state=self.state,
            started_at=self.started_at,
            finished_at=self.finished_at,
            elapsed_s=round(end - self.started, 3),
            progress=min(self.step, self.total) if self.total else self.progress,
            total=self.total,
            message_count=self.progress,
            last_message=self.messages[-1] if self.messages else None,
            messages=self.messages[-10:],
            error=self.error,
            report_path=self.report_path,
            log_path=str(self.log_path),
            log_uri=f"magpie://jobs/{ref}/log",
            report_uri=f"magpie://jobs/{ref}/report" if self.result is not None else None,
        )

    def _message(self, text: str) -> None:
        step = _STEP.match(text)
        with self.lock:
            self.progress += 1
            if step:
                self.step, self.total = max(self.step, int(step.group(1))), int(step.group(2))
            self.messages = [*self.messages[-MAX_MESSAGES:], text]


def runner_path(runner: Runner) -> str:
    """``module:name`` of a top-level function, as the job process imports it."""
    qualname = getattr(runner, "__qualname__", "")
    module = getattr(runner, "__module__", None)
    if not module or not qualname or "<" in qualname or "." in qualname:
        raise ValueError(f"a job runner must be a top-level function of an importable module, not {runner!r}")
    return f"{module}:{qualname}"


class JobManager:
    """Starts, queues, tracks, times out, cancels and prunes job processes. Thread-safe.

    Every job has an owner (the MCP session that made it); ``get``/``list``/``cancel`` with an
    owner see only that owner's jobs, and an unknown id never reveals the ids of others.
    """

    def __init__(
        self,
        folder: Path,
        cwd: Path,
        limits: JobLimits | None = None,
        keep_env: Iterable[str] = (),
        secret_env: Iterable[str] = (),
    ) -> None:
        """``keep_env``: server variables jobs keep besides :data:`JOB_ENV`; ``secret_env``: never (the token's)."""
        self.folder = folder
        self.cwd = cwd
        self.limits = limits or JobLimits()
        self.keep_env = (*JOB_ENV, *keep_env)
        self.secret_env = frozenset(secret_env)
        self.jobs: dict[str, Job] = {}
        self._queue: list[tuple[Job, Path]] = []
        self._lock = threading.RLock()
        self._closed = False
        #: a started job process waiting for its kernel job (None: none yet, or taken)
        self._spare: subprocess.Popen[bytes] | None = None
        self.prune_folders()

    def start(
        self, kind: str, args: dict[str, Any], runner: Runner, owner: str = LOCAL_OWNER, timeout_s: float | None = None
    ) -> Job:
        """Run ``runner(args, emit)`` in a job process (now, or queued until a slot is free).

        The job is stopped after ``timeout_s`` seconds of running, or the server's limit if smaller.
        """
        if not _KIND.fullmatch(kind):
            raise ValueError(f"bad job kind {kind!r}: lowercase letters, digits and _")
        target = runner_path(runner)
        text = json.dumps({"kind": kind, "runner": target, "args": args}, indent=2)
        if len(text) > MAX_SPEC_BYTES:
            raise ValueError(f"{kind}: the call's arguments are {len(text)} bytes, more than {MAX_SPEC_BYTES} allowed")
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            self.prune()
            self._admit(owner)
            job = Job(kind, self.folder, owner)
            job.timeout_s = min(timeout_s or self.limits.max_seconds, self.limits.max_seconds)
            job.folder = self.folder / f"{kind}_{job.id}"
            job.folder.mkdir(parents=True, exist_ok=True)
            spec = job.folder / "spec.json"
            spec.write_text(text)
            job.log_path.touch()
            self.jobs[job.id] = job
            self._queue.append((job, spec))
            self._dispatch()
        return job

    def get(self, job_id: str, owner: str | None = None) -> Job:
        """The job ``job_id`` (of ``owner`` when given), or the job whose token ``job_id`` is (any owner);
        an error naming only the id asked for (a token is not echoed)."""
        if job_id.startswith(TOKEN_PREFIX):
            job = self.by_token(job_id)
            if job is None:
                raise KeyError("no job with this job token (it is wrong, or the job was pruned)")
            return job
        with self._lock:
            job = self.jobs.get(job_id)
        if job is None or (owner is not None and job.owner != owner):
            raise KeyError(
                f"no job {job_id!r} in this session (job_list shows this session's jobs; from another session "
                "pass the job's job_token)"
            )
        return job

    def by_token(self, token: str) -> Job | None:
        """The job whose token is ``token``; compared in constant time (no timing hints about tokens)."""
        with self._lock:
            jobs = list(self.jobs.values())
        match = None
        for job in jobs:
            if hmac.compare_digest(job.token.encode(), token.encode()):
                match = job
        return match

    def list(self, owner: str | None = None) -> list[Job]:
        with self._lock:
            jobs = [j for j in self.jobs.values() if owner is None or j.owner == owner]
        return sorted(jobs, key=lambda j: j.started)

    def cancel(self, job_id: str, owner: str | None = None, reason: str = "cancelled by the client") -> Job:
        job = self.get(job_id, owner)
        with self._lock, job.lock:
            if job.state not in ("queued", "running"):
                return job
            was_queued = job.state == "queued"
            job.state = "cancelled"
            job.error = reason
            if was_queued:
                self._queue = [(j, s) for j, s in self._queue if j is not job]
        if was_queued:
            self._mark_done(job)
            return job
        if job.proc is not None:
            stop_group(job.proc, grace_s=10.0)
        job.done.wait(timeout=15)
        return job

    def cancel_owner(self, owner: str, reason: str) -> int:
        """Cancel every queued or running job of ``owner`` (its session ended) that a call was waiting for;
        how many. Detached jobs (``wait=false``: their token went to the client) run on to their time limit."""
        live = [j for j in self.list(owner) if j.state in ("queued", "running") and not j.detached]
        for job in live:
            self.cancel(job.id, owner, reason)
        return len(live)

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            stop_group(spare, grace_s=2.0)
        for job in self.list():
            if job.state in ("queued", "running"):
                self.cancel(job.id, reason="the server stopped")

    # --- internals --------------------------------------------------------------------

    def _running(self) -> int:
        return sum(1 for j in self.jobs.values() if j.state == "running")

    def _running_by_owner(self) -> Counter[str]:
        return Counter(quota_group(j.owner) for j in self.jobs.values() if j.state == "running")

    def _admit(self, owner: str) -> None:
        """Refuse a new job of ``owner`` when it would wait beyond its session's or the server's limit
        (called with the lock held); a session's own limits come first, so one cannot fill the queue."""
        limits = self.limits
        group = quota_group(owner)
        running = self._running_by_owner()[group]
        queued = sum(1 for j, _ in self._queue if quota_group(j.owner) == group)
        must_wait = running >= limits.max_session_running or self._running() >= limits.max_concurrent
        if must_wait and queued >= limits.max_session_queued:
            raise ValueError(
                f"too many jobs in this session: {running} running and {queued} waiting (per-session limits "
                f"mcp.max_session_jobs={limits.max_session_running}, mcp.max_session_queued="
                f"{limits.max_session_queued}); wait for one to finish or cancel one"
            )
        if must_wait and len(self._queue) >= limits.max_queued:
            raise ValueError(
                f"too many jobs: {self._running()} running and {len(self._queue)} queued "
                "(the server's limit); wait for one to finish or cancel one"
            )

    def _next(self) -> int | None:
        """The queue index to start next: the oldest job of the session with the fewest running jobs,
        among sessions below their running limit (fair between sessions); None when none may start."""
        running = self._running_by_owner()
        groups = [quota_group(j.owner) for j, _ in self._queue]
        eligible = [i for i, group in enumerate(groups) if running[group] < self.limits.max_session_running]
        return min(eligible, key=lambda i: running[groups[i]], default=None)

    def _dispatch(self) -> None:
        """Start queued jobs while there are free slots (called with the lock held)."""
        while self._queue and self._running() < self.limits.max_concurrent and not self._closed:
            index = self._next()
            if index is None:
                return
            job, spec = self._queue.pop(index)
            self._launch(job, spec)

    def _launch(self, job: Job, spec: Path) -> None:
        job.state = "running"
        result = job.folder / "result.json"
        job.proc = self._hand_to_spare(job, spec, result) if job.kind in WARM_KINDS else None
        if job.proc is None:
            with job.log_path.open("ab") as log:
                job.proc = self._job_process([str(spec), str(result)], log, subprocess.DEVNULL)
        threading.Thread(target=self._follow, args=(job,), name=f"magpie-job-{job.id}", daemon=True).start()
        timer = threading.Timer(job.timeout_s, self._expire, args=(job,))
        timer.daemon = True
        timer.start()

    def _job_process(self, args: list[str], log: Any, stdin: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "magpie_mcp.jobs", *args],
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=stdin,
            start_new_session=True,
            env={
                **job_environment(os.environ, self.keep_env, self.secret_env),
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
            },
        )

    def _hand_to_spare(self, job: Job, spec: Path, result: Path) -> subprocess.Popen[bytes] | None:
        """The spare process, now running ``job`` (None: there is none, or it died)."""
        spare, self._spare = self._spare, None
        if spare is None or spare.poll() is not None or spare.stdin is None:
            return None
        try:
            spare.stdin.write((json.dumps([str(spec), str(result), str(job.log_path)]) + "\n").encode())
            spare.stdin.close()
        except OSError:
            stop_group(spare, grace_s=1.0)
            return None
        job._message("started in a warm job process")
        return spare

    def _start_spare(self, preload: list[str]) -> None:
        """A spare job process for the next kernel job, when none is waiting (called with the lock held)."""
        if not self.limits.warm_job_process or self._closed or (self._spare and self._spare.poll() is None):
            return
        with (self.folder / "spare.log").open("ab") as log:
            self._spare = self._job_process(["--spare", json.dumps(preload)], log, subprocess.PIPE)

    def _expire(self, job: Job) -> None:
        with job.lock:
            if job.state != "running":
                return
            job.state = "failed"
            job.error = f"stopped: the job ran past its time limit of {job.timeout_s:g} s"
        if job.proc is not None:
            stop_group(job.proc, grace_s=10.0)

    def _follow(self, job: Job) -> None:
        assert job.proc is not None and job.proc.stdout is not None
        with job.log_path.open("a", errors="replace") as log:
            for raw in job.proc.stdout:
                line = raw.decode(errors="replace").strip()
                if not line:
                    continue
                try:
                    event = json.loads(line)
                    text = str(event.get("message", line))
                except (json.JSONDecodeError, AttributeError):
                    text = line
                job._message(text)
                log.write(f"[progress] {text}\n")
                log.flush()
        code = job.proc.wait()
        self._finish(job, code)

    def _finish(self, job: Job, code: int) -> None:
        result_path = job.folder / "result.json"
        result: dict[str, Any] | None = None
        if result_path.is_file() and result_path.stat().st_size > self.limits.max_result_bytes:
            limit = self.limits.max_result_bytes
            result = {"error": f"its report is larger than this server keeps (mcp.max_result_bytes={limit})"}
        elif result_path.is_file():
            try:
                result = json.loads(result_path.read_text())
            except json.JSONDecodeError:
                result = None
        with job.lock:
            if job.state == "running":
                if result is not None and result.get("ok"):
                    job.state = "succeeded"
                    job.result = result.get("report")
                    job.report_path = result.get("report_path")
                else:
                    job.state = "failed"
                    job.error = (result or {}).get("error") or _exit_reason(code, job.log_path)
        job._message(f"{job.kind} {job.state}")
        with self._lock:  # warm up while nothing runs (nothing being timed), before a waiting client goes on
            if job.kind in WARM_KINDS and not self._running() and not self._queue:
                self._start_spare(_read_preload(job.folder))
        self._mark_done(job)
        with self._lock:
            self._dispatch()

    def _mark_done(self, job: Job) -> None:
        with job.lock:
            job.finished_at = dt.datetime.now(dt.UTC).isoformat()
            job.finished_mono = time.monotonic()
        job.done.set()

    # --- retention --------------------------------------------------------------------

    def prune(self) -> None:
        """Forget finished jobs beyond ``keep_jobs`` or older than ``keep_days``, and delete their folders."""
        with self._lock:
            finished = sorted((j for j in self.jobs.values() if j.done.is_set()), key=lambda j: j.started)
            cutoff = time.monotonic() - self.limits.keep_days * 86400
            excess = max(0, len(finished) - self.limits.keep_jobs)
            doomed = [j for i, j in enumerate(finished) if i < excess or (j.finished_mono or 0) < cutoff]
            for job in doomed:
                del self.jobs[job.id]
        for job in doomed:
            self._remove_folder(job.folder)

    def prune_folders(self) -> None:
        """Job folders left by earlier servers: keep the newest ``keep_jobs`` younger than ``keep_days``."""
        if not self.folder.is_dir():
            return
        folders = sorted(
            (p for p in self.folder.iterdir() if p.is_dir() and (p / "spec.json").is_file()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        cutoff = time.time() - self.limits.keep_days * 86400
        for i, path in enumerate(folders):
            if i >= self.limits.keep_jobs or path.stat().st_mtime < cutoff:
                self._remove_folder(path)

    def _remove_folder(self, path: Path) -> None:
        # only ever a job folder directly inside our own jobs folder
        if path.parent.resolve() == self.folder.resolve() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def quota_group(owner: str) -> str:
    """Whose quota a job counts against: its session's; every sessionless request shares one."""
    return SESSIONLESS if owner.startswith(SESSIONLESS) else owner


def session_owner(request: Any) -> str:
    """Who a call comes from.

    A streamable-HTTP session (its ``Mcp-Session-Id``: the SDK routes a request only to the session
    it names, and with a bearer token only for the credential that opened it); stdio's one client;
    or, for an HTTP request without a session (the 2026-07-28 protocol is sessionless), the request
    alone: no later request sees its jobs except through their job tokens.
    """
    headers = getattr(request, "headers", None) if request is not None else None
    if headers is None:
        return LOCAL_OWNER
    session = headers.get("mcp-session-id")
    if session:
        return f"http:{session}"
    return f"{SESSIONLESS}{id(getattr(request, 'request_context', request))}"


def job_environment(source: Mapping[str, str], keep: Iterable[str], secret: Iterable[str]) -> dict[str, str]:
    """The variables of ``source`` whose names match ``keep`` (names or shell patterns), minus ``secret``."""
    patterns, drop = tuple(keep), frozenset(secret)
    return {
        name: value
        for name, value in source.items()
        if name not in drop and any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }


def _exit_reason(code: int, log: Path) -> str:
    what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    try:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
    except OSError:
        tail = ""
    return f"job process ended without a result ({what})" + (f":\n{tail}" if tail else "")


# --- the job process --------------------------------------------------------------


def emit(message: str) -> None:
    """Send one progress message to the server (job process only)."""
    sys.stdout.write(json.dumps({"message": message}) + "\n")
    sys.stdout.flush()


def _load_runner(target: str) -> Runner:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


#: job kind -> the report page's mode (the same modes the CLI commands draw)
PAGE_KINDS = {"analyze": "analyze", "compare": "compare", "benchmark": "benchmark", "gap_analysis": "gap"}


def write_page(kind: str, report: dict[str, Any], report_path: str) -> None:
    """``report.html`` beside the run's report, through the core's call point, as the CLI writes it (a
    rendering failure is logged there and never fails the job)."""
    if kind not in PAGE_KINDS or not report_path:
        return
    from magpie_core.report_pages import write_report_html

    write_report_html(PAGE_KINDS[kind], report, Path(report_path).parent)


#: what the job's fork server preloaded (written by the job process, read for the next spare)
PRELOAD_FILE = "fork_server_preload.json"


def _read_preload(folder: Path) -> list[str]:
    try:
        modules = json.loads((folder / PRELOAD_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [m for m in modules if isinstance(m, str)] if isinstance(modules, list) else []


def _write_preload(folder: Path) -> None:
    """The modules this job's fork server imported, if it started one."""
    from magpie_core.measurement.worker_client import fork_server_modules

    modules = fork_server_modules()
    if modules:
        (folder / PRELOAD_FILE).write_text(json.dumps(modules))


def wait_as_spare(preload: list[str]) -> int:
    """A spare job process: import magpie, start the kernel backends' fork server with ``preload``, then run
    the one job the server hands over on stdin (``[spec, result, log]``; stdin closed: the server is gone)."""
    from magpie_core.measurement.worker_client import warm_fork_server
    from magpie_core.pipelines.compare import compare  # noqa: F401  (the pipelines and plugins, imported ahead)

    warm_fork_server(preload)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    spec, result, log = json.loads(line)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)  # from now on this process's stderr is the job's log
    os.close(fd)
    return run_job(Path(spec), Path(result))


def run_job(spec_path: Path, result_path: Path) -> int:
    from magpie_core.runtime.processes import stop_started

    def on_term(signum: int, frame: Any) -> None:
        stop_started()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    spec = json.loads(spec_path.read_text())
    try:
        report, report_path = _load_runner(spec["runner"])(spec["args"], emit)
        write_page(spec["kind"], report, report_path)
        _write_preload(spec_path.parent)
        payload: dict[str, Any] = {"ok": True, "report": report, "report_path": report_path}
    except Exception as exc:
        payload = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(result_path)
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    if sys.argv[1] == "--spare":
        raise SystemExit(wait_as_spare(json.loads(sys.argv[2])))
    raise SystemExit(run_job(Path(sys.argv[1]), Path(sys.argv[2])))
