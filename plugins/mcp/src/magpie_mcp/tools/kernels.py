"""Kernel tools: ``analyze``, ``compare`` (jobs, like ``magpie analyze/compare``) and ``create_kernel_config``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from magpie_core import hookimpl
from magpie_core.config.common import dump
from magpie_core.config.kernel import CorrectnessConfig, KernelConfig, KernelConfigFile, PerformanceConfig
from magpie_core.config.loader import validate
from magpie_core.hookspecs import Register
from magpie_core.pipelines.kernel_reports import AnalyzeReport, CompareReport
from magpie_core.plugins import get_plugin_manager
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel

#: A command from a tool input: one argv list, or several run in order. Never a shell string.
ArgvCommand = list[str] | list[list[str]]


class KernelInput(ToolModel):
    """One kernel, as a tool input (the kernel YAML's fields; commands as argv lists)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

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


class AnalyzeResult(ToolModel):
    job: JobInfo
    passed: bool | None = Field(None, description="every kernel correct and no stage failed (None while running)")
    report_path: str | None = None
    report: AnalyzeReport | None = None


class CompareResult(ToolModel):
    job: JobInfo
    winner_id: str | None = None
    verdict: str | None = None
    report_path: str | None = None
    report: CompareReport | None = None


class CreatedConfig(ToolModel):
    yaml: str
    path: str | None = None
    kernel_ids: list[str]


# --- helpers ---------------------------------------------------------------------------


def kernel_file(
    tool: ToolContext, kernel_config: str | None, kernels: list[KernelInput] | None, config_dir: str | None
) -> tuple[KernelConfigFile, Path]:
    """The kernel file a tool call names (a YAML path or inline kernels), checked against the trust policy."""
    from magpie_core.pipelines.kernels import check_backends, load_kernel_file

    if (kernel_config is None) == (not kernels):
        raise ValueError("give either kernel_config (a kernel YAML path) or kernels (a list), not both or neither")
    if kernel_config is not None:
        path = tool.check_path(kernel_config, "kernel_config")
        file = load_kernel_file(path)
        folder = path.parent
    else:
        data = {"kernels": [k.to_config().model_dump(exclude_unset=True) for k in kernels or []]}
        file = validate(KernelConfigFile, data, "tool input")
        folder = tool.check_path(config_dir or tool.cwd, "config_dir")
    tool.policy.check_kernel_file(file, folder)
    check_backends(file)
    return file, folder


def kernel_job_args(
    tool: ToolContext,
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
    """The arguments of an analyze/compare job: the file (with the call's overrides) and where it runs."""
    from magpie_core.pipelines.kernels import block_options, file_environment

    updates: dict[str, Any] = {"performance": performance, "correctness": correctness}
    file = file.model_copy(update={k: v for k, v in updates.items() if v is not None})
    framework = tool.framework
    env_name = environment or file_environment(file) or framework.scheduler.environment
    get_plugin_manager().get("environment", env_name)
    scheduler = file.scheduler
    return {
        "file": dump(file),
        "config_dir": str(folder),
        "output_dir": str(tool.out_dir(output_dir)),
        "environment": env_name,
        "workers": workers or (scheduler.max_workers if scheduler else None) or framework.scheduler.max_workers,
        "measure_performance": measure_performance,
        "environment_defaults": block_options(framework),
    }


def _pipeline_args(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[KernelConfigFile, dict[str, Any]]:
    file = KernelConfigFile.model_validate(args["file"])
    return file, {
        "config_dir": Path(args["config_dir"]),
        "output_dir": Path(args["output_dir"]),
        "environment": args["environment"],
        "workers": int(args["workers"]),
        "measure_performance": bool(args["measure_performance"]),
        "progress": emit,
        "environment_defaults": args.get("environment_defaults") or {},
    }


def run_analyze_job(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """Job runner (in the job process): the analyze pipeline."""
    from magpie_core.pipelines.kernels import analyze

    file, common = _pipeline_args(args, emit)
    report = analyze(file, **common)
    return report.model_dump(mode="json"), str(Path(report.workspace or "") / "analyze_report.json")


def run_compare_job(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """Job runner (in the job process): the compare pipeline."""
    from magpie_core.pipelines.compare import compare

    file, common = _pipeline_args(args, emit)
    report = compare(file, baseline=args.get("baseline"), min_effect=float(args["min_effect"]), **common)
    return report.model_dump(mode="json"), str(Path(report.workspace or "") / "compare_report.json")


# --- tools -----------------------------------------------------------------------------


async def analyze(
    tool: ToolContext,
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
    file, folder = kernel_file(tool, kernel_config, kernels, config_dir)
    args = kernel_job_args(
        tool,
        file,
        folder,
        environment=environment,
        workers=workers,
        measure_performance=measure_performance,
        output_dir=output_dir,
        performance=performance,
        correctness=correctness,
    )
    job = await tool.follow(tool.start_job("analyze", args, run_analyze_job), wait)
    if job.result is None:
        return AnalyzeResult(job=job.info())
    report = AnalyzeReport.model_validate(job.result)
    return AnalyzeResult(
        job=job.info(), passed=all(r.passed for r in report.results), report_path=job.report_path, report=report
    )


async def compare(
    tool: ToolContext,
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
    file, folder = kernel_file(tool, kernel_config, kernels, config_dir)
    if len(file.all_kernels()) < 2:
        raise ToolFailure("compare needs at least two kernels")
    if baseline is not None:
        file.model_copy(update={"baseline": baseline}).baseline_index()  # a bad baseline fails now
    args = kernel_job_args(
        tool,
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
    job = await tool.follow(tool.start_job("compare", args, run_compare_job), wait)
    if job.result is None:
        return CompareResult(job=job.info())
    report = CompareReport.model_validate(job.result)
    return CompareResult(
        job=job.info(), winner_id=report.winner_id, verdict=report.verdict, report_path=job.report_path, report=report
    )


def create_kernel_config(
    tool: ToolContext,
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
        path = tool.check_path(output_path, "output_path")
        if path.exists() and not overwrite:
            raise ToolFailure(f"{path} exists; pass overwrite=true to replace it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return CreatedConfig(yaml=text, path=str(path) if path else None, kernel_ids=[k.id for k in file.all_kernels()])


@hookimpl
def magpie_register_mcp_tools(register: Register) -> None:
    register(analyze)
    register(compare)
    register(create_kernel_config)
