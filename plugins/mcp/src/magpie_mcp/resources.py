"""What the server offers besides tools: job logs, reports and report files as MCP resources, a few
prompts, and the logging capability (job progress as ``notifications/message``).

Resources are templates a client reads with ``resources/read``; each is checked against the
calling session (another session's job is "not found", like for the job tools). ``{job_id}`` may be the
job's token instead, from any session (the ``JobInfo`` a token holder gets carries URIs with the token):

* ``magpie://jobs/{job_id}/log``: the job's log (job process stderr and progress; last 256 KiB);
* ``magpie://jobs/{job_id}/report``: the job's report (JSON, as the tool returns it);
* ``magpie://jobs/{job_id}/files/{name}``: a text file the job wrote next to its report
  (``gap_analysis.csv``, ``summary.txt``, ...); ``files`` lists them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field

from magpie_mcp.context import ToolContext
from magpie_mcp.jobs import Job, session_owner

LOG_TAIL_BYTES = 256 * 1024
MAX_FILE_BYTES = 4 * 1024 * 1024
TEXT_SUFFIXES = {".csv", ".json", ".txt", ".log", ".yaml", ".yml", ".md", ".html"}
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _job(context: ToolContext, job_id: str, ctx: Context) -> Job:
    """The calling session's job, or the job whose token ``job_id`` is; another session's is "not found"
    (its id not confirmed)."""
    try:
        return context.job_manager.get(job_id, session_owner(ctx))
    except KeyError as exc:
        raise ResourceNotFoundError(str(exc.args[0])) from None


def job_files(job: Job) -> dict[str, Path]:
    """Text files a job wrote next to its report (and its own folder's result), by name."""
    folders = [Path(job.report_path).parent] if job.report_path else []
    files: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.is_symlink() and path.suffix.lower() in TEXT_SUFFIXES:
                files.setdefault(path.name, path)
    return files


def file_uri(job: Job, name: str) -> str:
    return f"magpie://jobs/{job.id}/files/{name}"


def add_job_resources(server: MCPServer, context: ToolContext) -> None:
    """Register the job resource templates, the prompts and the logging capability on ``server``."""

    @server.resource(
        "magpie://jobs/{job_id}/log",
        name="job_log",
        title="Job log",
        description="a job's log: its process stderr and progress messages (last 256 KiB)",
        mime_type="text/plain",
    )
    def job_log(job_id: str, ctx: Context) -> str:
        path = _job(context, job_id, ctx).log_path
        with path.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - LOG_TAIL_BYTES))
            return f.read().decode(errors="replace")

    @server.resource(
        "magpie://jobs/{job_id}/report",
        name="job_report",
        title="Job report",
        description="a finished job's report (JSON), as the tool that started it returns it",
        mime_type="application/json",
    )
    def job_report(job_id: str, ctx: Context) -> str:
        job = _job(context, job_id, ctx)
        if job.result is None:
            raise ResourceError(f"job {job_id} has no report (state: {job.state})")
        return json.dumps(job.result, indent=1)

    @server.resource(
        "magpie://jobs/{job_id}/files/{name}",
        name="job_file",
        title="Job output file",
        description="a text file a job wrote next to its report (CSV tables, summaries)",
        mime_type="text/plain",
    )
    def job_file(job_id: str, name: str, ctx: Context) -> str:
        files = job_files(_job(context, job_id, ctx))
        if name not in files:
            have = ", ".join(files) or "none"
            raise ResourceError(f"job {job_id} has no file {name!r} (files: {have})")
        path = files[name]
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ResourceError(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MiB; read {path} directly")
        return path.read_text(errors="replace")

    add_prompts(server)
    add_logging(server)


def add_prompts(server: MCPServer) -> None:
    @server.prompt(name="evaluate_kernel", title="Evaluate a kernel")
    def evaluate_kernel(
        kernel_file: Annotated[str, Field(description="the kernel's Python file (under an allowed root)")],
        function: Annotated[str, Field(description="the function or nn.Module in it to evaluate")] = "forward",
        reference: Annotated[str, Field(description="reference implementation, 'file.py:function' (optional)")] = "",
    ) -> str:
        """Check a kernel's correctness and time it with magpie's harness."""
        ref = f" against {reference}" if reference else ""
        return (
            f"Use magpie to evaluate the kernel `{function}` in `{kernel_file}`{ref}: call `analyze` with "
            f'kernels=[{{"id": "{function}", "entry": "{kernel_file}:{function}"'
            + (f', "reference": "{reference}"' if reference else "")
            + "}]. Report correctness first, then the median time with its confidence interval; then call "
            "`suggest_optimizations` with the job_id."
        )

    @server.prompt(name="find_bottlenecks", title="Find bottlenecks in a trace")
    def find_bottlenecks(
        trace_path: Annotated[str, Field(description="a PyTorch profiler trace or a folder of rank traces")],
        top_k: Annotated[int, Field(ge=1, le=500, description="kernels to report, by GPU time")] = 10,
    ) -> str:
        """Find where GPU time goes in a PyTorch profiler trace."""
        return (
            f"Call `gap_analysis` with trace_path={trace_path!r} and top_k={top_k}. Summarize GPU idle share, "
            "whether the run is launch-bound, and the kernels with the largest share of GPU time; read the full "
            "table from the resource URIs in the result only when needed."
        )


def add_logging(server: MCPServer) -> None:
    """Declare the logging capability (``logging/setLevel``): job progress arrives as log notifications."""
    from mcp_types import SetLevelRequestParams

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> dict[str, Any]:
        return {}

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
