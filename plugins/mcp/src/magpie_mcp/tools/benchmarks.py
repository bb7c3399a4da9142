"""Serving-benchmark tools: ``benchmark`` (a job, like ``magpie benchmark``) and the benchmark results."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from magpie_core import hookimpl
from magpie_core.hookspecs import Register
from magpie_core.plugins import get_plugin_manager
from magpie_mcp.annotations import tool_meta
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel
from magpie_mcp.reports import BenchmarkRun, benchmark_run, find_benchmark_reports, load_report_file
from magpie_mcp.trust import check_benchmark_config

if TYPE_CHECKING:
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.run_config import RunOverrides

log = logging.getLogger("magpie.mcp")


class BenchmarkResult(ToolModel):
    job: JobInfo = Field(description="the job that ran it (state, progress, log and report URIs)")
    success: bool | None = Field(None, description="the run completed without errors (None while running)")
    report_path: str | None = Field(None, description="benchmark_report.json on the server")
    summary: BenchmarkRun | None = Field(None, description="throughput and latency in brief")
    report_uri: str | None = Field(None, description="the full report as an MCP resource (resources/read)")


class BenchmarkRuns(ToolModel):
    root: str = Field(description="the folder searched")
    runs: list[BenchmarkRun] = Field(description="runs found, newest first")


class BenchmarkDetail(ToolModel):
    summary: BenchmarkRun = Field(description="throughput and latency in brief")
    report: dict[str, Any] = Field(
        description="the report's sections asked for (all when none were named); keys as in benchmark_report.json"
    )


def run_benchmark_job(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """Job runner (in the job process): the benchmark pipeline."""
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.pipeline import run_benchmark

    config = BenchmarkConfig.model_validate(args["config"])
    emit(f"benchmark {config.framework} {config.model} ({config.run_mode})")
    report = run_benchmark(config, Path(args["output_dir"]))
    folder = getattr(report, "workspace_dir", None) or report.workspace or ""
    return report.model_dump(mode="json"), str(Path(folder) / "benchmark_report.json")


def benchmark_config_for(
    tool: ToolContext, framework: str | None, benchmark_config: str | None, overrides: RunOverrides
) -> BenchmarkConfig:
    """The benchmark config of a tool call: the YAML it names (checked), with the call's overrides."""
    try:
        from magpie_benchmark.config import BenchmarkConfig
        from magpie_benchmark.run_config import apply_overrides, load_benchmark_config
    except ImportError as exc:  # magpie-core, another distribution
        raise ToolFailure(f"not available: benchmark mode is not part of this magpie build ({exc})") from exc
    if framework is None and benchmark_config is None:
        raise ToolFailure("give framework or benchmark_config")
    config = (
        load_benchmark_config(tool.check_path(benchmark_config, "benchmark_config"))
        if benchmark_config
        else BenchmarkConfig()
    )
    config = apply_overrides(config, framework, overrides, from_file=benchmark_config is not None)
    check_benchmark_config(tool.policy, config)
    if config.run_mode != "external" and not config.model:
        raise ToolFailure("no model: set model or benchmark.model in the config")
    if config.run_mode != "external" or config.run_kind == "diagnostic":
        get_plugin_manager().get("serving_framework", config.framework)
    return config


@tool_meta("Benchmark LLM serving", read_only=False, destructive=False, idempotent=False, open_world=True)
async def benchmark(
    tool: ToolContext,
    framework: Annotated[str | None, Field(description="serving framework plugin name (vllm, sglang, ...)")] = None,
    benchmark_config: Annotated[str | None, Field(description="benchmark YAML path (under an allowed root)")] = None,
    model: Annotated[str | None, Field(description="model name or path the server serves")] = None,
    precision: Annotated[str | None, Field(description="fp8, bf16, fp16, fp4, ...")] = None,
    tp: Annotated[int | None, Field(ge=1, le=64, description="tensor parallel size (GPUs)")] = None,
    concurrency: Annotated[int | None, Field(ge=1, le=100_000, description="requests in flight")] = None,
    input_len: Annotated[int | None, Field(ge=1, description="prompt tokens per request")] = None,
    output_len: Annotated[int | None, Field(ge=1, description="generated tokens per request")] = None,
    torch_profiler: Annotated[bool | None, Field(description="collect PyTorch profiler traces")] = None,
    run_mode: Annotated[str | None, Field(description="local | docker | external")] = None,
    run_kind: Annotated[str | None, Field(description="measurement | diagnostic")] = None,
    base_url: Annotated[
        str | None, Field(description="benchmark an already running server (loopback or an operator-allowed host)")
    ] = None,
    timeout: Annotated[
        float | None, Field(gt=0, description="seconds for the whole run (capped by the server)")
    ] = None,
    output_dir: Annotated[str | None, Field(description="where the run's workspace goes (default: config)")] = None,
    wait: Annotated[bool, Field(description="false: return the job at once; follow it with job_status")] = True,
) -> BenchmarkResult:
    """Benchmark an LLM serving framework under a streaming load (same pipeline as `magpie benchmark`).

    Load goes only to loopback servers or hosts the operator allowed (mcp.benchmark_hosts)."""
    from magpie_benchmark.run_config import RunOverrides  # the command line's type: the same overrides, one meaning

    overrides = RunOverrides(
        model=model,
        precision=precision,
        tp=tp,
        concurrency=concurrency,
        input_len=input_len,
        output_len=output_len,
        torch_profiler=torch_profiler,
        run_mode=run_mode,
        run_kind=run_kind,
        base_url=base_url,
        timeout=timeout,
    )
    config = benchmark_config_for(tool, framework, benchmark_config, overrides)
    args = {"config": config.model_dump(mode="json"), "output_dir": str(tool.out_dir(output_dir))}
    job = await tool.follow(tool.start_job("benchmark", args, run_benchmark_job), wait)
    if job.result is None:
        return BenchmarkResult(job=job.info())
    return BenchmarkResult(
        job=job.info(),
        success=bool(job.result.get("success")),
        report_path=job.report_path,
        summary=benchmark_run(Path(job.report_path or "."), job.result),
        report_uri=job.info().report_uri,
    )


@tool_meta("List benchmark runs", read_only=True, idempotent=True, open_world=False)
def list_benchmark_results(
    tool: ToolContext,
    output_dir: Annotated[str | None, Field(description="where benchmark workspaces are (default: config)")] = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="at most this many runs, newest first")] = 50,
) -> BenchmarkRuns:
    """Previous benchmark runs (benchmark_<framework>_<time>/benchmark_report.json), newest first."""
    root = tool.out_dir(output_dir)
    runs = []
    for path in find_benchmark_reports(root, limit):
        try:
            runs.append(benchmark_run(path, load_report_file(path)))
        except ValueError as exc:
            log.warning("skipping %s: %s", path, exc)
    return BenchmarkRuns(root=str(root), runs=runs)


@tool_meta("Read a benchmark run", read_only=True, idempotent=True, open_world=False)
def get_benchmark_result(
    tool: ToolContext,
    path: Annotated[str | None, Field(description="a benchmark_report.json or its workspace folder")] = None,
    sections: Annotated[list[str] | None, Field(description="only these top-level keys")] = None,
    workspace_dir: Annotated[str | None, Field(description="AMD Magpie's name for path")] = None,
) -> BenchmarkDetail:
    """One benchmark run: its summary and the report (or the sections asked for)."""
    if (path is None) == (workspace_dir is None):
        raise ToolFailure("give path (or AMD Magpie's workspace_dir), one of them")
    report = load_report_file(tool.check_path(path or workspace_dir, "path"))  # type: ignore[arg-type]
    where = Path(report.pop("_path"))
    if report.get("mode") not in (None, "benchmark"):
        raise ToolFailure(f"{where} is a {report.get('mode')} report, not a benchmark report")
    summary = benchmark_run(where, report)
    if sections:
        unknown = [s for s in sections if s not in report]
        if unknown:
            raise ToolFailure(f"no section(s) {', '.join(unknown)} in {where} (have: {', '.join(sorted(report))})")
        report = {s: report[s] for s in sections}
    return BenchmarkDetail(summary=summary, report=report)


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(benchmark)
    register(list_benchmark_results)
    register(get_benchmark_result)
