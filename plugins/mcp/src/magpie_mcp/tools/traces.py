"""Trace tools: ``gap_analysis`` (a job, the ``gap`` trace analyzer) and ``find_kernel_sources``.

Both call their analyzers through the plugin registry, so they work with whichever
plugin provides them; a missing one is a tool error that names the distribution to install.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from magpie_core import hookimpl
from magpie_core.config.loader import validate
from magpie_core.hookspecs import Register
from magpie_core.plugins import UnknownComponentError, get_plugin_manager
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel

#: the trace analyzer behind ``gap_analysis``, and the distribution that provides it
GAP_ANALYZER = ("gap", "magpie-gap-analysis")
#: the source finder behind ``find_kernel_sources``, and the distribution that provides it
SOURCE_FINDER = ("kernel-sources", "magpie-source-finder")


class GapResult(ToolModel):
    job: JobInfo
    report_path: str | None = None
    total_duration_us: float | None = None
    gpu_idle_pct: float | None = None
    launch_bound: bool | None = None
    top_kernels: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    result: dict[str, Any] | None = None


class KernelSources(ToolModel):
    sources: dict[str, dict[str, Any]]
    repos: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


def component(kind: str, name: str, distribution: str, what: str) -> Any:
    """The registered component, or a tool error saying which distribution provides it."""
    try:
        return get_plugin_manager().get(kind, name)
    except UnknownComponentError as exc:
        raise ToolFailure(f"not available: {what} needs the plugin distribution {distribution} ({exc})") from exc


def run_gap_job(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """Job runner (in the job process): the ``gap`` trace analyzer."""
    name, distribution = GAP_ANALYZER
    analyzer = component("trace_analyzer", name, distribution, "gap analysis")
    emit(f"gap analysis of {args['trace_path']}")
    output_dir = Path(args["output_dir"]) if args.get("output_dir") else None
    summary: dict[str, Any] = analyzer.analyze(Path(args["trace_path"]), args["options"], output_dir)
    return summary, str(summary.get("json_path") or "")


async def gap_analysis(
    tool: ToolContext,
    trace_path: Annotated[str, Field(description="a trace file, a folder of rank traces, or a workspace")],
    top_k: Annotated[int, Field(ge=1)] = 20,
    start_pct: Annotated[float, Field(ge=0, le=100)] = 0.0,
    end_pct: Annotated[float, Field(ge=0, le=100)] = 100.0,
    min_duration_us: Annotated[float, Field(ge=0)] = 0.0,
    categories: list[str] | None = None,
    ignore_categories: list[str] | None = None,
    find_kernel_sources: bool = False,
    kernel_source_repos: list[str] | None = None,
    output_dir: Annotated[str | None, Field(description="default: next to the traces")] = None,
    wait: bool = True,
) -> GapResult:
    """Kernel time tables, GPU idle gaps and launch-bound indicators from PyTorch profiler traces."""
    from magpie_core.config.benchmark import GapAnalysisConfig

    component("trace_analyzer", *GAP_ANALYZER, "gap analysis")
    trace = tool.check_path(trace_path, "trace_path")
    if not trace.exists():
        raise ToolFailure(f"trace path not found: {trace}")
    data: dict[str, Any] = {
        "enabled": True,
        "top_k": top_k,
        "trace_start_pct": start_pct,
        "trace_end_pct": end_pct,
        "min_duration_us": min_duration_us,
        "find_kernel_sources": find_kernel_sources,
    }
    if categories is not None:
        data["categories"] = categories
    if ignore_categories is not None:
        data["ignore_categories"] = ignore_categories
    if kernel_source_repos is not None:
        data["kernel_source_repos"] = [str(tool.check_path(r, "kernel source repo")) for r in kernel_source_repos]
    options = validate(GapAnalysisConfig, data, "tool input").model_dump(mode="json")
    args = {
        "trace_path": str(trace),
        "options": options,
        "output_dir": str(tool.out_dir(output_dir)) if output_dir else None,
    }
    job = await tool.follow(tool.start_job("gap_analysis", args, run_gap_job), wait)
    if job.result is None:
        return GapResult(job=job.info())
    r = job.result
    return GapResult(
        job=job.info(),
        report_path=job.report_path,
        total_duration_us=r.get("total_duration_us"),
        gpu_idle_pct=r.get("gpu_idle_pct"),
        launch_bound=r.get("launch_bound"),
        top_kernels=list(r.get("top_kernels") or [])[:top_k],
        errors=list(r.get("errors") or []),
        result=r,
    )


def find_kernel_sources(
    tool: ToolContext,
    kernel_names: Annotated[list[str], Field(min_length=1, description="GPU kernel names from a trace")],
    repos: Annotated[list[str], Field(description="local checkouts to search (under an allowed root)")],
) -> KernelSources:
    """Map GPU kernel names to their source files in local checkouts (offline)."""
    finder = component("source_finder", *SOURCE_FINDER, "finding kernel sources")
    checked = [str(tool.check_path(r, "repo")) for r in repos]
    kernels = [{"name": n, "parsed": None} for n in kernel_names]  # the finder parses the names
    summary = finder.find(kernels, {"repos": checked, "cache_dir": None, "clone": False})
    return KernelSources(
        sources=summary.get("sources", {}), repos=summary.get("repos", []), errors=summary.get("errors", [])
    )


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(gap_analysis)
    register(find_kernel_sources)
