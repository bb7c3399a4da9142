"""Trace tools: ``gap_analysis`` (a job, the ``gap`` trace analyzer) and ``find_kernel_sources``.

Both call their analyzers through the plugin registry, so they work with whichever
plugin provides them; a missing one is a tool error that names the distribution to install.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from magpie_core import hookimpl
from magpie_core.config.loader import validate
from magpie_core.hookspecs import Register
from magpie_core.plugins import UnknownComponentError, get_plugin_manager
from magpie_mcp.annotations import tool_meta
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import Job, JobInfo
from magpie_mcp.models import ToolModel

#: the trace analyzer behind ``gap_analysis``, and the distribution that provides it
GAP_ANALYZER = ("gap", "magpie-gap-analysis")
#: the source finder behind ``find_kernel_sources``, and the distribution that provides it
SOURCE_FINDER = ("kernel-sources", "magpie-source-finder")


class GapKernel(ToolModel):
    """One row of the kernel table (the full table is the ``gap_analysis.csv`` resource)."""

    name: str = Field(description="kernel name as in the trace")
    calls: int = Field(description="launches in the window")
    total_us: float = Field(description="GPU time of all launches, microseconds")
    avg_us: float = Field(description="mean time per launch, microseconds")
    pct_total: float = Field(description="share of all kernel time, percent")
    family: str = Field("unknown", description="kernel family (gemm, attention, ...) from the name")


class OutputFile(ToolModel):
    name: str = Field(description="file name")
    uri: str = Field(description="the file as an MCP resource (resources/read)")


class GapResult(ToolModel):
    job: JobInfo = Field(description="the job that ran it (state, progress, log and report URIs)")
    output_dir: str | None = Field(None, description="where the CSV and JSON files were written")
    report_path: str | None = Field(None, description="gap_analysis.json on the server")
    num_ranks: int | None = Field(None, description="rank traces analyzed")
    total_duration_us: float | None = Field(None, description="kernel time of all ranks, microseconds")
    gpu_idle_pct: float | None = Field(None, description="share of the active span the GPU was idle, percent")
    launch_bound: bool | None = Field(None, description="kernels mostly shorter than their launch overhead")
    top_kernels: list[GapKernel] = Field(default_factory=list, description="the top_k kernels by GPU time")
    errors: list[str] = Field(default_factory=list, description="problems found (first 20)")
    errors_total: int = Field(0, description="how many problems in all")
    files: list[OutputFile] = Field(default_factory=list, description="tables and reports as MCP resources")


class KernelSource(ToolModel):
    """Where one kernel's source is (the source finder's fields; a finder may add more)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    kind: str | None = Field(None, description="what kind of source it is (library, generated, ...)")
    category: str | None = Field(None, description="kernel category (gemm, attention, ...)")
    source_repo: str | None = Field(None, description="the checkout it was found in")
    source_file: str | None = Field(None, description="the source file")
    line: int | None = Field(None, description="the line of the definition")
    upstream_url: str | None = Field(None, description="the upstream project")
    test_file: str | None = Field(None, description="a test of the kernel, when one was found")
    test_cmd: str | None = Field(None, description="how to run that test")
    notes: str | None = Field(None, description="how the match was made")
    source_resolution: str | None = Field(None, description="how sure the match is")
    source_error: str | None = Field(None, description="why nothing was found")


class SourceRepo(ToolModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    name: str | None = Field(None, description="the checkout's project name")
    path: str | None = Field(None, description="where it is")
    commit: str | None = Field(None, description="its commit")
    symbols: int | None = Field(None, description="symbols indexed")


class KernelSources(ToolModel):
    sources: dict[str, KernelSource] = Field(description="kernel name -> where its source is")
    repos: list[SourceRepo] = Field(default_factory=list, description="the checkouts searched")
    errors: list[str] = Field(default_factory=list, description="problems found")


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


@tool_meta("Analyze profiler traces", read_only=False, destructive=False, idempotent=False, open_world=False)
async def gap_analysis(
    tool: ToolContext,
    trace_path: Annotated[
        str | None, Field(description="a trace file, a folder of rank traces, or a benchmark workspace")
    ] = None,
    top_k: Annotated[int, Field(ge=1, le=500, description="kernels returned, by GPU time")] = 20,
    start_pct: Annotated[float, Field(ge=0, le=100, description="window start, percent of the trace")] = 0.0,
    end_pct: Annotated[float, Field(ge=0, le=100, description="window end, percent of the trace")] = 100.0,
    min_duration_us: Annotated[float, Field(ge=0, description="ignore events shorter than this")] = 0.0,
    categories: Annotated[list[str] | None, Field(description="event categories to include")] = None,
    ignore_categories: Annotated[list[str] | None, Field(description="event categories to exclude")] = None,
    find_kernel_sources: Annotated[bool, Field(description="also map kernels to source files")] = False,
    kernel_source_repos: Annotated[
        list[str] | None, Field(description="checkouts to search for sources (under an allowed root)")
    ] = None,
    output_dir: Annotated[
        str | None, Field(description="where tables go (under a root; default: a fresh folder in output.directory)")
    ] = None,
    timeout_s: Annotated[
        float | None, Field(gt=0, description="stop the analysis after this long (capped by the server)")
    ] = None,
    wait: Annotated[bool, Field(description="false: return the job at once; follow it with job_status")] = True,
    trace_dir: Annotated[str | None, Field(description="AMD Magpie's name for trace_path")] = None,
) -> GapResult:
    """Kernel time tables, GPU idle gaps and launch-bound indicators from PyTorch profiler traces.

    Returns the top_k kernels and headline numbers; the full tables are resources (`files`)."""
    if (trace_path is None) == (trace_dir is None):
        raise ToolFailure("give trace_path (or AMD Magpie's trace_dir), one of them")
    component("trace_analyzer", *GAP_ANALYZER, "gap analysis")
    # the gap plugin's settings model, through the registry (its ``gap_analysis`` config block)
    settings = component("config_block", "benchmark.gap_analysis", GAP_ANALYZER[1], "gap analysis").model
    trace = tool.check_path(trace_path or trace_dir, "trace_path")  # type: ignore[arg-type]
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
    options = validate(settings, data, "tool input").model_dump(mode="json")
    # never the analyzer's default (next to the trace's folder, which may be outside every root)
    out = tool.out_dir(output_dir) if output_dir else tool.out_dir(None) / fresh_name("gap_analysis")
    args = {"trace_path": str(trace), "options": options, "output_dir": str(out)}
    job = tool.start_job("gap_analysis", args, run_gap_job, timeout_s=timeout_s)
    job = await tool.follow(job, wait)
    if job.result is None:
        return GapResult(job=job.info())
    return gap_result(job, top_k)


def fresh_name(prefix: str) -> str:
    """``prefix_<UTC time>_<random>``: a folder no earlier run wrote."""
    import datetime as dt
    import secrets

    return f"{prefix}_{dt.datetime.now(dt.UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


def gap_result(job: Job, top_k: int) -> GapResult:
    """The compact answer: headline numbers, the top_k kernels, and the files as resources."""
    from magpie_mcp.resources import file_uri, job_files

    r = job.result or {}
    kernels = [
        GapKernel(
            name=str(k.get("name")),
            calls=int(k.get("calls") or 0),
            total_us=float(k.get("self_cuda_total_us") or 0),
            avg_us=float(k.get("avg_time_us") or 0),
            pct_total=float(k.get("pct_total") or 0),
            family=str(k.get("family") or "unknown"),
        )
        for k in list(r.get("top_kernels") or [])[:top_k]
    ]
    errors = [str(e) for e in r.get("errors") or []]
    if errors and not kernels:
        # nothing was analyzed: a failure, not a result with a side note
        raise ToolFailure(f"gap_analysis job {job.id}: the trace could not be analyzed: {'; '.join(errors[:5])}")
    return GapResult(
        job=job.info(),
        output_dir=r.get("output_dir"),
        report_path=job.report_path,
        num_ranks=r.get("num_ranks"),
        total_duration_us=r.get("total_duration_us"),
        gpu_idle_pct=r.get("gpu_idle_pct"),
        launch_bound=r.get("launch_bound"),
        top_kernels=kernels,
        errors=errors[:20],
        errors_total=len(errors),
        files=[OutputFile(name=name, uri=file_uri(job, name)) for name in job_files(job)],
    )


@tool_meta("Find kernel sources", read_only=True, idempotent=True, open_world=False)
def find_kernel_sources(
    tool: ToolContext,
    kernel_names: Annotated[list[str], Field(min_length=1, description="GPU kernel names from a trace")],
    repos: Annotated[list[str], Field(description="local checkouts to search (under an allowed root)")],
) -> KernelSources:
    """Map GPU kernel names to their source files in local checkouts (offline)."""
    finder = component("source_finder", *SOURCE_FINDER, "finding kernel sources")
    checked = [str(tool.check_path(r, "repo")) for r in repos]
    kernels = [{"name": n, "parsed": None} for n in kernel_names]  # the finder parses the names
    # the finder's cache of earlier checkouts lives under the output folder: nothing outside the roots is read
    cache = str(tool.out_dir(None) / "source_cache")
    summary = finder.find(kernels, {"repos": checked, "cache_dir": cache, "clone": False})
    return KernelSources(
        sources=summary.get("sources", {}), repos=summary.get("repos", []), errors=summary.get("errors", [])
    )


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(gap_analysis)
    register(find_kernel_sources)
