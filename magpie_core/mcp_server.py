"""``magpie mcp``: magpie's tools for AI agents over the Model Context Protocol.

Built on the official ``mcp`` SDK (2.x, ``MCPServer``). Every tool is backed by
the same core API as the CLI, takes typed inputs and returns typed structured
output; a failure comes back as a tool error (``isError``) with a message that
names what is wrong. Long runs (``analyze``, ``compare``, ``benchmark``,
``gap_analysis``) are jobs: with ``wait=true`` (default) the call streams MCP
progress notifications and returns the report; with ``wait=false`` it returns
the job at once, and ``job_status`` / ``job_result`` / ``job_cancel`` follow it.
Plugins add tools through the ``magpie_register_mcp_tools`` hook.

Trust model: :mod:`magpie_core.mcp_trust` and ``docs/mcp.md``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from magpie_core import __version__
from magpie_core.config.benchmark import GapAnalysisConfig
from magpie_core.config.common import dump
from magpie_core.config.framework import FrameworkConfig
from magpie_core.config.kernel import CorrectnessConfig, KernelConfig, KernelConfigFile, PerformanceConfig
from magpie_core.config.loader import ConfigError, ConfigErrors, validate
from magpie_core.insights import (
    BenchmarkComparison,
    BenchmarkRun,
    Discovery,
    Suggestions,
    benchmark_run,
    compare_benchmark_reports,
    discover_kernels,
    find_benchmark_reports,
    load_report_file,
    suggest_optimizations,
)
from magpie_core.mcp_jobs import Job, JobInfo, JobManager
from magpie_core.mcp_trust import TrustPolicy
from magpie_core.pipelines.kernel_reports import AnalyzeReport, CompareReport
from magpie_core.pipelines.kernels import check_backends, file_environment, load_kernel_file
from magpie_core.plugins import PluginConflictError, UnknownComponentError, get_plugin_manager
from magpie_core.reports import GpuInfo, ToolInfo

log = logging.getLogger("magpie.mcp")

F = TypeVar("F", bound=Callable[..., Any])

#: failures a caller can fix: reported as tool errors with their message
EXPECTED_ERRORS = (
    ConfigError,
    ConfigErrors,
    ValidationError,
    ValueError,
    LookupError,
    PermissionError,
    OSError,
    PluginConflictError,
    NotImplementedError,
)


def tool_errors(fn: F) -> F:
    """Turn magpie's expected errors into MCP tool errors (``isError``) that keep their message."""

    def convert(exc: Exception) -> ToolError:
        if isinstance(exc, KeyError | UnknownComponentError) and exc.args:
            return ToolError(str(exc.args[0]))
        return ToolError(str(exc))

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ToolError:
                raise
            except EXPECTED_ERRORS as exc:
                raise convert(exc) from exc

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except EXPECTED_ERRORS as exc:
            raise convert(exc) from exc

    return wrapper  # type: ignore[return-value]


def not_available(what: str, exc: BaseException) -> ToolError:
    return ToolError(f"not available: {what} is not part of this magpie build ({exc})")


# --- typed inputs and outputs -----------------------------------------------------------

#: A command from a tool input: one argv list, or several run in order. Never a shell string.
ArgvCommand = list[str] | list[list[str]]


class KernelInput(BaseModel):
    """One kernel, as a tool input (the kernel YAML's fields; commands as argv lists)."""

    model_config = ConfigDict(extra="forbid")

    id: str = "kernel"
    type: str = Field("pytorch", description="kernel type: a type some installed kernel backend owns")
    entry: str | None = Field(None, description="'file.py:function' or 'module:function' (built-in harness)")
    reference: str | None = Field(None, description="reference implementation, same forms as entry")
    get_inputs: str | None = Field(None, description="function returning the inputs (default get_inputs)")
    get_init_inputs: str | None = None
    source_files: list[str] = Field(default_factory=list)
    working_dir: str | None = Field(None, description="relative to config_dir; must be under an allowed root")
    env: dict[str, str] = Field(default_factory=dict)
    compile_command: ArgvCommand | None = Field(None, description="argv list(s); run without a shell")
    testcase_command: ArgvCommand | None = Field(None, description="argv list(s); exit 0 means correct")
    prof_command: ArgvCommand | None = None
    device: str | None = Field(None, description="cpu, cuda, cuda:1, ... (default: the backend's)")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific options")

    def to_config(self) -> KernelConfig:
        return KernelConfig.model_validate(self.model_dump(exclude_none=True))


class HostInfo(BaseModel):
    hostname: str
    platform: str
    machine: str
    cpu_count: int | None
    python: str
    magpie_version: str


class HardwareSpec(BaseModel):
    gpu_count: int
    gpus: list[GpuInfo]
    tools: list[ToolInfo]
    host: HostInfo
    message: str | None = None


class PluginEntry(BaseModel):
    name: str
    module: str
    distribution: str
    version: str
    status: str
    error: str | None = None
    kinds: list[str]
    hooks: list[str]
    components: dict[str, list[str]]


class PluginList(BaseModel):
    plugins: list[PluginEntry]
    components: dict[str, list[str]] = Field(description="kind -> component names available")


class AnalyzeResult(BaseModel):
    job: JobInfo
    passed: bool | None = Field(None, description="every kernel correct and no stage failed (None while running)")
    report_path: str | None = None
    report: AnalyzeReport | None = None


class CompareResult(BaseModel):
    job: JobInfo
    winner_id: str | None = None
    verdict: str | None = None
    report_path: str | None = None
    report: CompareReport | None = None


class CreatedConfig(BaseModel):
    yaml: str
    path: str | None = None
    kernel_ids: list[str]


class BenchmarkResult(BaseModel):
    job: JobInfo
    success: bool | None = None
    report_path: str | None = None
    summary: BenchmarkRun | None = None
    report: dict[str, Any] | None = None


class GapResult(BaseModel):
    job: JobInfo
    report_path: str | None = None
    total_duration_us: float | None = None
    gpu_idle_pct: float | None = None
    launch_bound: bool | None = None
    top_kernels: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    result: dict[str, Any] | None = None


class KernelSources(BaseModel):
    sources: dict[str, dict[str, Any]]
    repos: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


class BenchmarkRuns(BaseModel):
    root: str
    runs: list[BenchmarkRun]


class BenchmarkDetail(BaseModel):
    summary: BenchmarkRun
    report: dict[str, Any]


class JobResult(BaseModel):
    job: JobInfo
    report: dict[str, Any] | None = None


class JobList(BaseModel):
    jobs: list[JobInfo]


# --- the server ------------------------------------------------------------------------------


class MagpieTools:
    """State shared by the tools: trust policy, framework config, jobs."""

    def __init__(self, framework: FrameworkConfig, cwd: Path) -> None:
        self.framework = framework
        self.cwd = cwd.resolve()
        self.policy = TrustPolicy.from_roots(framework.mcp.allowed_roots, self.cwd)
        self.output_dir = (self.cwd / framework.output.directory).resolve()
        self.jobs = JobManager(self.output_dir / "mcp_jobs", self.cwd)

    # -- helpers -----------------------------------------------------------------------

    def out_dir(self, output_dir: str | None) -> Path:
        return self.policy.check_path(output_dir or self.output_dir, "output_dir")

    def kernel_file(
        self, kernel_config: str | None, kernels: list[KernelInput] | None, config_dir: str | None
    ) -> tuple[KernelConfigFile, Path]:
        if (kernel_config is None) == (not kernels):
            raise ValueError("give either kernel_config (a kernel YAML path) or kernels (a list), not both or neither")
        if kernel_config is not None:
            path = self.policy.check_path(kernel_config, "kernel_config")
            file = load_kernel_file(path)
            folder = path.parent
        else:
            file = validate(
                KernelConfigFile,
                {"kernels": [k.to_config().model_dump(exclude_unset=True) for k in kernels or []]},
                "tool input",
            )
            folder = self.policy.check_path(config_dir or self.cwd, "config_dir")
        self.policy.check_kernel_file(file, folder)
        check_backends(file)
        return file, folder

    def kernel_job_args(
        self,
        file: KernelConfigFile,
        folder: Path,
        *,
        environment: str | None,
        workers: int | None,
        measure_performance: bool,
        output_dir: str | None,
        performance: PerformanceConfig | None,
        correctness: CorrectnessConfig | None,
    ) -> dict[str, Any]:
        updates: dict[str, Any] = {}
        if performance is not None:
            updates["performance"] = performance
        if correctness is not None:
            updates["correctness"] = correctness
        if updates:
            file = file.model_copy(update=updates)
        framework = self.framework
        defaults = {"ray_config": framework.ray_config.model_dump(exclude_none=True)} if framework.ray_config else {}
        env_name = environment or file_environment(file) or framework.scheduler.environment
        get_plugin_manager().get("environment", env_name)
        scheduler = file.scheduler
        return {
            "file": dump(file),
            "config_dir": str(folder),
            "output_dir": str(self.out_dir(output_dir)),
            "environment": env_name,
            "workers": workers or (scheduler.max_workers if scheduler else None) or framework.scheduler.max_workers,
            "measure_performance": measure_performance,
            "environment_defaults": defaults,
        }

    async def follow(self, job: Job, ctx: Context | None, wait: bool) -> Job:
        """Wait for ``job`` (when asked), forwarding its progress messages as MCP progress notifications."""
        if not wait:
            return job
        sent = 0
        try:
            while not job.done.is_set():
                if ctx is not None and job.progress > sent:
                    sent = job.progress
                    await ctx.report_progress(sent, None, job.messages[-1] if job.messages else None)
                await anyio.sleep(0.2)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.jobs.cancel, job.id)
            raise
        if ctx is not None and job.progress > sent:
            await ctx.report_progress(job.progress, job.progress, job.messages[-1] if job.messages else None)
        if job.state == "failed":
            raise ToolError(f"{job.kind} job {job.id} failed: {job.error}")
        if job.state == "cancelled":
            raise ToolError(f"{job.kind} job {job.id} was cancelled")
        return job


def build_server(framework: FrameworkConfig | None = None, cwd: Path | None = None) -> tuple[MCPServer, MagpieTools]:
    """The MCP server with every built-in tool and every plugin-contributed tool."""
    state = MagpieTools(framework or FrameworkConfig(), cwd or Path.cwd())
    server: MCPServer = MCPServer(
        "magpie",
        version=__version__,
        instructions=(
            "magpie measures GPU kernels and LLM serving honestly: correctness before speed, timings with "
            "confidence intervals. Start with hardware_spec and discover_kernels; run analyze or compare; "
            "ask suggest_optimizations about a report. Long runs: pass wait=false and poll job_status."
        ),
    )

    def add(fn: Callable[..., Any]) -> None:
        server.add_tool(tool_errors(fn), name=fn.__name__, structured_output=True)

    # -- machine and plugins -------------------------------------------------------------

    def hardware_spec(
        device_id: Annotated[int | None, Field(description="one GPU by index; all when omitted", ge=0)] = None,
    ) -> HardwareSpec:
        """GPUs (vendor, name, arch, memory, driver), the compilers/profilers found, and the host."""
        from magpie_core.cli.gpu_info import collect_gpu_info

        info = collect_gpu_info()
        gpus = [GpuInfo.model_validate(g) for g in info["gpus"]]
        if device_id is not None:
            chosen = [g for g in gpus if g.index == device_id]
            if not chosen:
                have = ", ".join(str(g.index) for g in gpus) or "none"
                raise ToolError(f"no GPU with index {device_id} (GPUs here: {have})")
            gpus = chosen
        return HardwareSpec(
            gpu_count=len(info["gpus"]),
            gpus=gpus,
            tools=[ToolInfo.model_validate(t) for t in info["tools"]],
            host=HostInfo(
                hostname=platform.node(),
                platform=platform.platform(),
                machine=platform.machine(),
                cpu_count=os.cpu_count(),
                python=sys.version.split()[0],
                magpie_version=__version__,
            ),
            message=info["message"],
        )

    def list_plugins() -> PluginList:
        """Installed magpie plugins: distribution, version, load status and the components each provides."""
        manager = get_plugin_manager()
        plugins = [PluginEntry.model_validate(p.as_dict()) for p in manager.plugins.values()]
        from magpie_core.plugins import KIND_HOOKS

        return PluginList(plugins=plugins, components={k: sorted(manager.components(k)) for k in KIND_HOOKS})

    # -- kernels ----------------------------------------------------------------------------

    async def analyze(
        ctx: Context,
        kernel_config: Annotated[str | None, Field(description="path of a kernel YAML")] = None,
        kernels: Annotated[list[KernelInput] | None, Field(description="kernels given inline")] = None,
        config_dir: Annotated[str | None, Field(description="folder inline kernels are relative to")] = None,
        environment: Annotated[str | None, Field(description="local, ray, ... (default: config)")] = None,
        workers: Annotated[int | None, Field(ge=1)] = None,
        measure_performance: bool = True,
        performance: PerformanceConfig | None = None,
        correctness: CorrectnessConfig | None = None,
        output_dir: str | None = None,
        wait: Annotated[bool, Field(description="false: return the job at once; follow it with job_status")] = True,
    ) -> AnalyzeResult:
        """Compile, check and time independent kernels (same pipeline as `magpie analyze`)."""
        file, folder = state.kernel_file(kernel_config, kernels, config_dir)
        args = state.kernel_job_args(
            file,
            folder,
            environment=environment,
            workers=workers,
            measure_performance=measure_performance,
            output_dir=output_dir,
            performance=performance,
            correctness=correctness,
        )
        job = await state.follow(state.jobs.start("analyze", args), ctx, wait)
        if job.result is None:
            return AnalyzeResult(job=job.info())
        report = AnalyzeReport.model_validate(job.result)
        return AnalyzeResult(
            job=job.info(), passed=all(r.passed for r in report.results), report_path=job.report_path, report=report
        )

    async def compare(
        ctx: Context,
        kernel_config: Annotated[str | None, Field(description="path of a kernel YAML with >= 2 kernels")] = None,
        kernels: Annotated[list[KernelInput] | None, Field(description="variants given inline (>= 2)")] = None,
        config_dir: str | None = None,
        baseline: Annotated[int | str | None, Field(description="baseline: index or id (default 0)")] = None,
        min_effect: Annotated[float, Field(ge=0, description="smallest speedup called FASTER/SLOWER")] = 0.02,
        environment: str | None = None,
        workers: Annotated[int | None, Field(ge=1)] = None,
        measure_performance: bool = True,
        performance: PerformanceConfig | None = None,
        correctness: CorrectnessConfig | None = None,
        output_dir: str | None = None,
        wait: bool = True,
    ) -> CompareResult:
        """Compare variants under identical inputs and settings; rank the correct ones (like `magpie compare`)."""
        file, folder = state.kernel_file(kernel_config, kernels, config_dir)
        if len(file.all_kernels()) < 2:
            raise ToolError("compare needs at least two kernels")
        if baseline is not None:
            file.model_copy(update={"baseline": baseline}).baseline_index()  # a bad baseline fails now
        args = state.kernel_job_args(
            file,
            folder,
            environment=environment,
            workers=workers,
            measure_performance=measure_performance,
            output_dir=output_dir,
            performance=performance,
            correctness=correctness,
        )
        args.update(baseline=baseline, min_effect=min_effect)
        job = await state.follow(state.jobs.start("compare", args), ctx, wait)
        if job.result is None:
            return CompareResult(job=job.info())
        report = CompareReport.model_validate(job.result)
        return CompareResult(
            job=job.info(),
            winner_id=report.winner_id,
            verdict=report.verdict,
            report_path=job.report_path,
            report=report,
        )

    def create_kernel_config(
        kernels: Annotated[list[KernelInput], Field(min_length=1)],
        output_path: Annotated[str | None, Field(description="write the YAML here (under an allowed root)")] = None,
        baseline: int | str | None = None,
        performance: PerformanceConfig | None = None,
        correctness: CorrectnessConfig | None = None,
        overwrite: bool = False,
    ) -> CreatedConfig:
        """A validated kernel YAML for `magpie analyze/compare -k`, optionally written to a file."""
        import yaml

        data: dict[str, Any] = {"kernels": [k.to_config().model_dump(exclude_unset=True) for k in kernels]}
        if baseline is not None:
            data["baseline"] = baseline
        if performance is not None:
            data["performance"] = performance.model_dump(exclude_unset=True)
        if correctness is not None:
            data["correctness"] = correctness.model_dump(exclude_unset=True)
        file = validate(KernelConfigFile, data, "tool input")
        if baseline is not None:
            file.baseline_index()
        text = yaml.safe_dump(dump(file), sort_keys=False)
        path: Path | None = None
        if output_path:
            path = state.policy.check_path(output_path, "output_path")
            if path.exists() and not overwrite:
                raise ToolError(f"{path} exists; pass overwrite=true to replace it")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return CreatedConfig(yaml=text, path=str(path) if path else None, kernel_ids=[k.id for k in file.all_kernels()])

    def discover_kernels_tool(
        path: Annotated[str, Field(description="folder to search (under an allowed root)")] = ".",
        max_depth: Annotated[int, Field(ge=0, le=20)] = 6,
        max_results: Annotated[int, Field(ge=1, le=5000)] = 500,
    ) -> Discovery:
        """Kernel sources (.cu/.hip, Python with kernel decorators, KernelBench-style modules) and kernel YAMLs."""
        root = state.policy.check_path(path, "path")
        if not root.is_dir():
            raise ToolError(f"{root} is not a folder")
        return discover_kernels(root, max_depth=max_depth, max_results=max_results)

    discover_kernels_tool.__name__ = "discover_kernels"

    def suggest_optimizations_tool(
        report_path: Annotated[str | None, Field(description="a report JSON or a run workspace folder")] = None,
        job_id: Annotated[str | None, Field(description="or: a finished job of this server")] = None,
        peak_tflops: Annotated[float | None, Field(gt=0, description="device peak, for roofline position")] = None,
        peak_bandwidth_gbps: Annotated[float | None, Field(gt=0, description="device peak DRAM bandwidth")] = None,
    ) -> Suggestions:
        """What to try next, derived from a report's measurements (correctness, timing spread, launch-bound
        notes, profiler counters and roofline position, speedup verdicts, trace gaps), with the evidence."""
        if (report_path is None) == (job_id is None):
            raise ToolError("give report_path or job_id")
        if job_id is not None:
            job = state.jobs.get(job_id)
            if job.result is None:
                raise ToolError(f"job {job_id} has no report (state: {job.state})")
            return suggest_optimizations(
                job.result, job.report_path or job_id, peak_tflops=peak_tflops, peak_bandwidth_gbps=peak_bandwidth_gbps
            )
        path = state.policy.check_path(report_path, "report_path")  # type: ignore[arg-type]
        report = load_report_file(path)
        return suggest_optimizations(
            report, report.pop("_path"), peak_tflops=peak_tflops, peak_bandwidth_gbps=peak_bandwidth_gbps
        )

    suggest_optimizations_tool.__name__ = "suggest_optimizations"

    # -- serving benchmarks and traces -------------------------------------------------------------

    async def benchmark(
        ctx: Context,
        framework: Annotated[str | None, Field(description="serving framework plugin name")] = None,
        benchmark_config: Annotated[str | None, Field(description="benchmark YAML path")] = None,
        model: str | None = None,
        precision: str | None = None,
        tp: Annotated[int | None, Field(ge=1)] = None,
        concurrency: Annotated[int | None, Field(ge=1)] = None,
        input_len: Annotated[int | None, Field(ge=1)] = None,
        output_len: Annotated[int | None, Field(ge=1)] = None,
        torch_profiler: bool | None = None,
        run_mode: Annotated[str | None, Field(description="local | docker | external")] = None,
        run_kind: Annotated[str | None, Field(description="measurement | diagnostic")] = None,
        base_url: Annotated[str | None, Field(description="benchmark an already running server")] = None,
        timeout: Annotated[float | None, Field(gt=0)] = None,
        output_dir: str | None = None,
        wait: bool = True,
    ) -> BenchmarkResult:
        """Benchmark an LLM serving framework under a streaming load (same pipeline as `magpie benchmark`)."""
        try:
            from magpie_core.config.benchmark import BenchmarkConfig
            from magpie_core.pipelines.benchmark import apply_overrides, load_benchmark_config
        except ImportError as exc:
            raise not_available("benchmark mode", exc) from exc
        if framework is None and benchmark_config is None:
            raise ToolError("give framework or benchmark_config")
        config = (
            load_benchmark_config(state.policy.check_path(benchmark_config, "benchmark_config"))
            if benchmark_config
            else BenchmarkConfig()
        )
        overrides = {
            "model": model,
            "precision": precision,
            "tp": tp,
            "concurrency": concurrency,
            "input_len": input_len,
            "output_len": output_len,
            "torch_profiler": torch_profiler,
            "run_mode": run_mode,
            "run_kind": run_kind,
            "base_url": base_url,
            "docker_image": None,
            "timeout": timeout,
        }
        config = apply_overrides(config, framework, overrides)
        if config.run_mode != "external" and not config.model:
            raise ToolError("no model: set model or benchmark.model in the config")
        if config.run_mode != "external" or config.run_kind == "diagnostic":
            get_plugin_manager().get("serving_framework", config.framework)
        args = {"config": config.model_dump(mode="json"), "output_dir": str(state.out_dir(output_dir))}
        job = await state.follow(state.jobs.start("benchmark", args), ctx, wait)
        if job.result is None:
            return BenchmarkResult(job=job.info())
        return BenchmarkResult(
            job=job.info(),
            success=bool(job.result.get("success")),
            report_path=job.report_path,
            summary=benchmark_run(Path(job.report_path or "."), job.result),
            report=job.result,
        )

    async def gap_analysis(
        ctx: Context,
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
        try:
            import magpie_core.pipelines.gap  # noqa: F401
        except ImportError as exc:
            raise not_available("gap analysis", exc) from exc
        trace = state.policy.check_path(trace_path, "trace_path")
        if not trace.exists():
            raise ToolError(f"trace path not found: {trace}")
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
            data["kernel_source_repos"] = [
                str(state.policy.check_path(r, "kernel source repo")) for r in kernel_source_repos
            ]
        config = validate(GapAnalysisConfig, data, "tool input")
        args = {
            "trace_path": str(trace),
            "config": config.model_dump(mode="json"),
            "output_dir": str(state.out_dir(output_dir)) if output_dir else None,
        }
        job = await state.follow(state.jobs.start("gap_analysis", args), ctx, wait)
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
        kernel_names: Annotated[list[str], Field(min_length=1, description="GPU kernel names from a trace")],
        repos: Annotated[list[str], Field(description="local checkouts to search (under an allowed root)")],
    ) -> KernelSources:
        """Map GPU kernel names to their source files in local checkouts (offline)."""
        try:
            from magpie_core.trace.kernel_names import parse_many
        except ImportError as exc:
            raise not_available("kernel-name parsing", exc) from exc
        try:
            finder = get_plugin_manager().get("trace_analyzer", "kernel-sources")
        except UnknownComponentError as exc:
            raise not_available("the kernel source finder", exc) from exc
        checked = [str(state.policy.check_path(r, "repo")) for r in repos]
        parsed = parse_many(kernel_names)
        payload = [{"name": n, "parsed": parsed[n].model_dump()} for n in kernel_names]
        summary = finder.analyze(
            payload, {"repos": checked, "cache_dir": None, "clone": False}, state.output_dir / "kernel_sources"
        )
        return KernelSources(
            sources=summary.get("sources", {}), repos=summary.get("repos", []), errors=summary.get("errors", [])
        )

    def list_benchmark_results(
        output_dir: Annotated[str | None, Field(description="where benchmark workspaces are (default: config)")] = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
    ) -> BenchmarkRuns:
        """Previous benchmark runs (benchmark_<framework>_<time>/benchmark_report.json), newest first."""
        root = state.out_dir(output_dir)
        runs = []
        for path in find_benchmark_reports(root, limit):
            try:
                runs.append(benchmark_run(path, load_report_file(path)))
            except ValueError as exc:
                log.warning("skipping %s: %s", path, exc)
        return BenchmarkRuns(root=str(root), runs=runs)

    def get_benchmark_result(
        path: Annotated[str, Field(description="a benchmark_report.json or its workspace folder")],
        sections: Annotated[list[str] | None, Field(description="only these top-level keys")] = None,
    ) -> BenchmarkDetail:
        """One benchmark run: its summary and the report (or the sections asked for)."""
        file = state.policy.check_path(path, "path")
        report = load_report_file(file)
        where = Path(report.pop("_path"))
        if report.get("mode") not in (None, "benchmark"):
            raise ToolError(f"{where} is a {report.get('mode')} report, not a benchmark report")
        summary = benchmark_run(where, report)
        if sections:
            unknown = [s for s in sections if s not in report]
            if unknown:
                raise ToolError(f"no section(s) {', '.join(unknown)} in {where} (have: {', '.join(sorted(report))})")
            report = {s: report[s] for s in sections}
        return BenchmarkDetail(summary=summary, report=report)

    def compare_benchmark_reports_tool(
        paths: Annotated[list[str], Field(min_length=2, description="benchmark reports or workspaces; first = base")],
        top_k: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> BenchmarkComparison:
        """Throughput, latency and GPU-idle side by side, change vs the first run, and top-kernel time shares."""
        loaded = []
        for p in paths:
            report = load_report_file(state.policy.check_path(p, "path"))
            loaded.append((Path(report.pop("_path")), report))
        return compare_benchmark_reports(loaded, top_k)

    compare_benchmark_reports_tool.__name__ = "compare_benchmark_reports"

    # -- jobs ------------------------------------------------------------------------------------

    def job_status(job_id: str) -> JobInfo:
        """State, elapsed time and recent progress messages of a job."""
        return state.jobs.get(job_id).info()

    async def job_result(
        job_id: str,
        wait_s: Annotated[float, Field(ge=0, le=3600, description="wait up to this long for it to finish")] = 0,
    ) -> JobResult:
        """The report of a finished job (a tool error if it failed or was cancelled)."""
        job = state.jobs.get(job_id)
        if wait_s:
            await anyio.to_thread.run_sync(job.done.wait, wait_s)
        if job.state == "failed":
            raise ToolError(f"{job.kind} job {job.id} failed: {job.error}")
        if job.state == "cancelled":
            raise ToolError(f"{job.kind} job {job.id} was cancelled")
        return JobResult(job=job.info(), report=job.result)

    async def job_cancel(job_id: str) -> JobInfo:
        """Stop a running job and every process it started."""
        job = await anyio.to_thread.run_sync(state.jobs.cancel, job_id)
        return job.info()

    def job_list() -> JobList:
        """Every job of this server, oldest first."""
        return JobList(jobs=[j.info() for j in state.jobs.list()])

    builtins = [
        hardware_spec,
        list_plugins,
        analyze,
        compare,
        create_kernel_config,
        discover_kernels_tool,
        suggest_optimizations_tool,
        benchmark,
        gap_analysis,
        find_kernel_sources,
        list_benchmark_results,
        get_benchmark_result,
        compare_benchmark_reports_tool,
        job_status,
        job_result,
        job_cancel,
        job_list,
    ]
    for fn in builtins:
        add(fn)
    taken = {fn.__name__ for fn in builtins}
    for name, fn in get_plugin_manager().components("mcp_tool").items():
        owner = get_plugin_manager().owner("mcp_tool", name)
        if name in taken:
            log.warning("plugin %r: MCP tool %r clashes with a built-in tool; skipped", owner.plugin, name)
            continue
        try:
            server.add_tool(tool_errors(fn), name=name)
        except Exception as exc:  # a broken plugin tool must not take the server down
            log.warning("plugin %r: MCP tool %r could not be added: %s", owner.plugin, name, exc)
    return server, state


TRANSPORTS = ("stdio", "streamable-http")


def serve(
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    framework: FrameworkConfig | None = None,
) -> None:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP)."""
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r} (use {' or '.join(TRANSPORTS)})")
    server, state = build_server(framework)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        state.jobs.shutdown()
