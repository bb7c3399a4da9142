"""The advice plugin's MCP tools: ``discover_kernels``, ``suggest_optimizations``, ``compare_benchmark_reports``.

Registered through ``magpie_register_mcp_tools`` like any plugin's tools; paths from tool
inputs go through the server's trust policy (:class:`magpie_mcp.ToolContext`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from magpie_mcp import ToolContext, ToolFailure
from magpie_mcp.annotations import tool_meta
from magpie_mcp.reports import load_report_file
from pydantic import Field

from magpie_advice import comparison, discovery, suggestions
from magpie_core import hookimpl
from magpie_core.hookspecs import Register


@tool_meta("Discover kernels", read_only=True, idempotent=True, open_world=False)
def discover_kernels(
    tool: ToolContext,
    path: Annotated[str | None, Field(description="folder to search (under an allowed root; default: CWD)")] = None,
    max_depth: Annotated[int, Field(ge=0, le=20, description="folder levels searched below path")] = 6,
    max_results: Annotated[int, Field(ge=1, le=5000, description="stop after this many findings")] = 500,
    project_path: Annotated[str | None, Field(description="AMD Magpie's name for path")] = None,
) -> discovery.Discovery:
    """Kernel sources (.cu/.hip, Python with kernel decorators, KernelBench-style modules) and kernel YAMLs."""
    if path is not None and project_path is not None:
        raise ToolFailure("give path or project_path (AMD Magpie's name), not both")
    root = tool.check_path(path or project_path or ".", "path")
    if not root.is_dir():
        raise ToolFailure(f"{root} is not a folder")
    return discovery.discover_kernels(root, max_depth=max_depth, max_results=max_results)


@tool_meta("Suggest optimizations", read_only=True, idempotent=True, open_world=False)
def suggest_optimizations(
    tool: ToolContext,
    report_path: Annotated[str | None, Field(description="a report JSON or a run workspace folder")] = None,
    job_id: Annotated[str | None, Field(description="or: a finished job of this session")] = None,
    peak_tflops: Annotated[float | None, Field(gt=0, description="device peak, for roofline position")] = None,
    peak_bandwidth_gbps: Annotated[float | None, Field(gt=0, description="device peak DRAM bandwidth")] = None,
    analysis_result: Annotated[
        str | None, Field(description="AMD Magpie's name: a report as JSON text", max_length=4_000_000)
    ] = None,
) -> suggestions.Suggestions:
    """What to try next, derived from a report's measurements (correctness, timing spread, launch-bound
    notes, profiler counters and roofline position, speedup verdicts, trace gaps), with the evidence."""
    peaks = {"peak_tflops": peak_tflops, "peak_bandwidth_gbps": peak_bandwidth_gbps}
    if analysis_result is not None:
        if report_path is not None or job_id is not None:
            raise ToolFailure("give one of report_path, job_id, analysis_result")
        try:
            data = json.loads(analysis_result)
        except json.JSONDecodeError as exc:
            raise ToolFailure(f"analysis_result is not JSON: {exc.msg} at line {exc.lineno}") from exc
        if not isinstance(data, dict):
            raise ToolFailure("analysis_result must be a JSON object (a report)")
        return suggestions.suggest_optimizations(data, "analysis_result", **peaks)
    if (report_path is None) == (job_id is None):
        raise ToolFailure("give report_path or job_id")
    if job_id is not None:
        job = tool.jobs.get(job_id)
        if job.result is None:
            raise ToolFailure(f"job {job_id} has no report (state: {job.state})")
        return suggestions.suggest_optimizations(job.result, job.report_path or job_id, **peaks)
    report = load_report_file(tool.check_path(report_path, "report_path"))  # type: ignore[arg-type]
    return suggestions.suggest_optimizations(report, report.pop("_path"), **peaks)


@tool_meta("Compare benchmark runs", read_only=True, idempotent=True, open_world=False)
def compare_benchmark_reports(
    tool: ToolContext,
    paths: Annotated[
        list[str] | None, Field(min_length=2, description="benchmark reports or workspaces; first = base")
    ] = None,
    top_k: Annotated[int, Field(ge=1, le=100, description="kernels per run in the time-share table")] = 10,
    workspace_dirs: Annotated[list[str] | None, Field(min_length=2, description="AMD Magpie's name for paths")] = None,
    allow_different_workload: Annotated[
        bool, Field(description="give verdicts even when the workload fingerprints differ (labelled)")
    ] = False,
    min_effect: Annotated[float, Field(ge=0, le=10, description="smallest change called (0.02 = 2%)")] = 0.02,
) -> comparison.BenchmarkComparison:
    """Throughput, latency and GPU-idle side by side, change vs the first run, top-kernel time shares, and
    each run's end-to-end verdict against the first per metric (IMPROVED / REGRESSED / WITHIN NOISE /
    NOT COMPARABLE), with a 95% interval over repeat means and the run-to-run noise floor."""
    if (paths is None) == (workspace_dirs is None):
        raise ToolFailure("give paths (or AMD Magpie's workspace_dirs), one of them")
    paths = paths or workspace_dirs or []
    loaded = []
    for p in paths:
        report = load_report_file(tool.check_path(p, "path"))
        loaded.append((Path(report.pop("_path")), report))
    return comparison.compare_benchmark_reports(
        loaded, top_k, allow_different_workload=allow_different_workload, min_effect=min_effect
    )


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(discover_kernels)
    register(suggest_optimizations)
    register(compare_benchmark_reports)
