"""Long MCP runs (analyze, compare, benchmark, gap analysis, or a plugin's) as jobs.

Each job is a child process, ``python -m magpie_mcp.jobs SPEC RESULT``, in its
own process group: the MCP server stays responsive, nothing a pipeline prints
can corrupt the stdio protocol stream, and ``job_cancel`` stops the job and
every process it started (its SIGTERM handler stops the groups that
:mod:`magpie_core.processes` created, then the server stops the job's own
group). The child prints one JSON line per progress message; the server turns
them into MCP progress notifications.

What a job does is its *runner*: a top-level function
``runner(args: dict, emit: Callable[[str], None]) -> (report: dict, report_path: str)``
that the child imports by its module and name. The built-in tools pass theirs;
a plugin's tool passes its own the same way (:meth:`JobManager.start`).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from magpie_core.processes import stop_group
from magpie_mcp.models import ToolModel

JobState = Literal["running", "succeeded", "failed", "cancelled"]
#: What a job runs, in the job process: ``(args, emit) -> (report, report_path)``.
Runner = Callable[[dict[str, Any], Callable[[str], None]], tuple[dict[str, Any], str]]
MAX_MESSAGES = 50
_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")


class JobInfo(ToolModel):
    """Where a job stands."""

    job_id: str
    kind: str
    state: JobState
    started_at: str
    finished_at: str | None = None
    elapsed_s: float
    progress: int = Field(0, description="progress messages so far (monotonic)")
    last_message: str | None = None
    messages: list[str] = Field(default_factory=list, description="recent progress messages")
    error: str | None = None
    report_path: str | None = None
    log_path: str | None = None


class Job:
    def __init__(self, kind: str, folder: Path) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.kind = kind
        self.folder = folder
        self.started = time.monotonic()
        self.started_at = dt.datetime.now(dt.UTC).isoformat()
        self.finished_at: str | None = None
        self.finished_mono: float | None = None
        self.state: JobState = "running"
        self.messages: list[str] = []
        self.progress = 0
        self.error: str | None = None
        self.result: dict[str, Any] | None = None
        self.report_path: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.done = threading.Event()
        self.listeners: list[Callable[[int, str], None]] = []
        self.lock = threading.Lock()

    def info(self) -> JobInfo:
        end = self.finished_mono or time.monotonic()
        return JobInfo(
            job_id=self.id,
            kind=self.kind,
            state=self.state,
            started_at=self.started_at,
            finished_at=self.finished_at,
            elapsed_s=round(end - self.started, 3),
            progress=self.progress,
            last_message=self.messages[-1] if self.messages else None,
            messages=self.messages[-10:],
            error=self.error,
            report_path=self.report_path,
            log_path=str(self.folder / "job.log"),
        )

    def _message(self, text: str) -> None:
        with self.lock:
            self.progress += 1
            self.messages = [*self.messages[-MAX_MESSAGES:], text]
            listeners = list(self.listeners)
            n = self.progress
        for listener in listeners:
            listener(n, text)


def runner_path(runner: Runner) -> str:
    """``module:name`` of a top-level function, as the job process imports it."""
    qualname = getattr(runner, "__qualname__", "")
    module = getattr(runner, "__module__", None)
    if not module or not qualname or "<" in qualname or "." in qualname:
        raise ValueError(f"a job runner must be a top-level function of an importable module, not {runner!r}")
    return f"{module}:{qualname}"


class JobManager:
    """Starts, tracks and cancels job processes. Thread-safe."""

    def __init__(self, folder: Path, cwd: Path) -> None:
        self.folder = folder
        self.cwd = cwd
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, kind: str, args: dict[str, Any], runner: Runner) -> Job:
        """Run ``runner(args, emit)`` in a job process; ``kind`` names the job (``analyze``, ``my_sweep``)."""
        if not _KIND.fullmatch(kind):
            raise ValueError(f"bad job kind {kind!r}: lowercase letters, digits and _")
        target = runner_path(runner)
        job = Job(kind, self.folder)
        job.folder = self.folder / f"{kind}_{job.id}"
        job.folder.mkdir(parents=True, exist_ok=True)
        spec = job.folder / "spec.json"
        spec.write_text(json.dumps({"kind": kind, "runner": target, "args": args}, indent=2))
        log = (job.folder / "job.log").open("wb")
        job.proc = subprocess.Popen(
            [sys.executable, "-m", "magpie_mcp.jobs", str(spec), str(job.folder / "result.json")],
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"},
        )
        log.close()
        with self._lock:
            self.jobs[job.id] = job
        threading.Thread(target=self._follow, args=(job,), name=f"magpie-job-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self.jobs.get(job_id)
        if job is None:
            known = ", ".join(sorted(self.jobs)) or "none"
            raise KeyError(f"no job {job_id!r} (jobs of this server: {known})")
        return job

    def list(self) -> list[Job]:
        with self._lock:
            return sorted(self.jobs.values(), key=lambda j: j.started)

    def cancel(self, job_id: str) -> Job:
        job = self.get(job_id)
        with job.lock:
            if job.state != "running":
                return job
            job.state = "cancelled"
            job.error = "cancelled by the client"
        if job.proc is not None:
            stop_group(job.proc, grace_s=10.0)
        job.done.wait(timeout=15)
        return job

    def shutdown(self) -> None:
        for job in self.list():
            if job.state == "running":
                self.cancel(job.id)

    def _follow(self, job: Job) -> None:
        assert job.proc is not None and job.proc.stdout is not None
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
        code = job.proc.wait()
        self._finish(job, code)

    def _finish(self, job: Job, code: int) -> None:
        result_path = job.folder / "result.json"
        result: dict[str, Any] | None = None
        if result_path.is_file():
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
                    job.error = (result or {}).get("error") or _exit_reason(code, job.folder / "job.log")
            job.finished_at = dt.datetime.now(dt.UTC).isoformat()
            job.finished_mono = time.monotonic()
        job._message(f"{job.kind} {job.state}")
        job.done.set()


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


def run_job(spec_path: Path, result_path: Path) -> int:
    from magpie_core.processes import stop_started

    def on_term(signum: int, frame: Any) -> None:
        stop_started()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    spec = json.loads(spec_path.read_text())
    try:
        report, report_path = _load_runner(spec["runner"])(spec["args"], emit)
        payload: dict[str, Any] = {"ok": True, "report": report, "report_path": report_path}
    except Exception as exc:
        payload = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(result_path)
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(run_job(Path(sys.argv[1]), Path(sys.argv[2])))
