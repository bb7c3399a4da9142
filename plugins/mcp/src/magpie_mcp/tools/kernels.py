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
from magpie_mcp.annotations import tool_meta
from magpie_mcp.context import ToolContext, ToolFailure
from magpie_mcp.jobs import JobInfo
from magpie_mcp.models import ToolModel

#: A command from a tool input: one argv list, or several run in order. Never a shell string.
ArgvCommand = list[str] | list[list[str]]


class KernelInput(ToolModel):
    """One kernel, as a tool input (the kernel YAML's fields; commands as argv lists)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field("kernel", description="a name for the kernel, unique in the call")
    type: str = Field("pytorch", description="kernel type: a type some installed kernel backend owns")
    entry: str | None = Field(None, description="'file.py:function' or 'module:function' (built-in harness)")
    reference: str | None = Field(None, description="reference implementation, same forms as entry")
    get_inputs: str | None = Field(None, description="function returning the inputs (default get_inputs)")
    get_init_inputs: str | None = Field(None, description="function returning constructor args (default none)")
    source_files: list[str] = Field(default_factory=list, description="the kernel's source files (under a root)")
    working_dir: str | None = Field(None, description="relative to config_dir; must be under an allowed root")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="extra environment: only variables on the server's allowlist (CUDA_LAUNCH_BLOCKING, "
        "OMP_NUM_THREADS, ...) or ones the operator allowed",
    )
    compile_command: ArgvCommand | None = Field(
        None, description="argv list(s), run without a shell; refused unless the operator allowed the program"
    )
    testcase_command: ArgvCommand | None = Field(
        None, description="argv list(s), exit 0 means correct; refused unless the operator allowed the program"
    )
    prof_command: ArgvCommand | None = Field(
        None, description="argv list(s) to profile; refused unless the operator allowed the program"
    )
    device: str | None = Field(None, description="cpu, cuda, cuda:1, ... (default: the backend's)")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="backend options: torch_compile (true or {mode, fullgraph, dynamic, backend}), arch, binary, "
        "argtypes, returns_status, output_args, compile_timeout_seconds, harness_launches; others (compiler "
        "flags, torch.compile options dicts) only if the operator allowed them",
    )

    def to_config(self) -> KernelConfig:
        return KernelConfig.model_validate(self.model_dump(exclude_none=True))


class AnalyzeResult(ToolModel):
    job: JobInfo = Field(description="the job that ran it (state, progress, log and report URIs)")
    passed: bool | None = Field(None, description="every kernel correct and no stage failed (None while running)")
    report_path: str | None = Field(None, description="analyze_report.json on the server")
    report: AnalyzeReport | None = Field(None, description="the report (None while running)")


class CompareResult(ToolModel):
    job: JobInfo = Field(description="the job that ran it (state, progress, log and report URIs)")
    winner_id: str | None = Field(None, description="the fastest correct kernel, when the verdict is clear")
    verdict: str | None = Field(None, description="FASTER / SAME / SLOWER / UNSTABLE summary of the ranking")
    report_path: str | None = Field(None, description="compare_report.json on the server")
    report: CompareReport | None = Field(None, description="the report (None while running)")


class CreatedConfig(ToolModel):
    yaml: str = Field(description="the kernel YAML")
    path: str | None = Field(None, description="where it was written, when output_path was given")
    kernel_ids: list[str] = Field(description="the ids of the kernels in it")


# --- helpers ---------------------------------------------------------------------------


def kernel_file(
    tool: ToolContext,
    kernel_config: str | None,
    kernels: list[KernelInput] | None,
    config_dir: str | None,
    sources: list[str] | None = None,
    kernel_type: str | None = None,
) -> tuple[KernelConfigFile, Path]:
    """The kernel file a tool call names (a YAML path, inline kernels, or source files a plugin recognises),
    with the plugins' blocks written out as the CLI writes them; checked in :func:`kernel_job_args`."""
    from magpie_core.pipelines.kernel_files import load_kernel_file, prepare_kernel_file

    if sum(bool(given) for given in (kernel_config is not None, kernels, sources)) != 1:
        raise ValueError(
            "give one of kernel_config (a kernel YAML path), kernels (a list) or sources (files such as a "
            "KernelBench problem and its solutions): not both or neither"
        )
    if sources:
        return recognised_file(tool, sources, kernel_type)
    if kernel_config is not None:
        path = tool.check_path(kernel_config, "kernel_config")
        file, folder, source = load_kernel_file(path), path.parent, path
    else:
        data = {"kernels": [k.to_config().model_dump(exclude_unset=True) for k in kernels or []]}
        file = validate(KernelConfigFile, data, "tool input")
        folder, source = tool.check_path(config_dir or tool.cwd, "config_dir"), None
    # the policy sees the file as given before a plugin reads the files it names (a kernelbench: block's);
    # what the plugins write out is checked again with the job's arguments
    tool.policy.check_kernel_file(file, folder)
    return prepare_kernel_file(file, folder, source), folder


def recognised_file(tool: ToolContext, sources: list[str], kernel_type: str | None) -> tuple[KernelConfigFile, Path]:
    """Source files that need no YAML (``magpie compare ref.py sol.py``): the kernel file an installed plugin
    builds for them (the pytorch plugin: KernelBench files); every path under an allowed root first."""
    from magpie_core.pipelines.kernel_files import kernel_file_from_sources, prepare_kernel_file

    # absolute: the plugin reads them from this process, whose working folder is not the call's
    paths = [str(tool.check_path(source, "sources")) for source in sources]
    file = kernel_file_from_sources(paths, kernel_type)
    if file is None:
        raise ToolFailure(
            "sources: no installed plugin recognises these files (KernelBench: a problem file with class Model "
            "and get_inputs, solutions with class ModelNew); give kernel_config or kernels instead"
        )
    folder = Path(paths[0]).parent
    return prepare_kernel_file(file, folder), folder


def recognised(tool: ToolContext, paths: list[str]) -> bool:
    """Whether an installed plugin recognises these files as kernels it needs no YAML for (KernelBench's)."""
    from magpie_core.pipelines.kernel_files import kernel_file_from_sources

    return kernel_file_from_sources([str(tool.check_path(p, "kernel_paths")) for p in paths], None) is not None


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
    """The arguments of an analyze/compare job: the file (with the call's overrides, checked against the
    trust policy as a whole, its programs pinned) and where it runs."""
    from magpie_core.pipelines.kernel_files import block_options, check_backends, file_environment

    updates: dict[str, Any] = {"performance": performance, "correctness": correctness}
    file = file.model_copy(update={k: v for k, v in updates.items() if v is not None})
    file = tool.policy.check_kernel_file(file, folder)
    check_backends(file)
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
    from magpie_core.pipelines.analyze import analyze

    file, common = _pipeline_args(args, emit)
    report = analyze(file, **common)
    return report.model_dump(mode="json"), str(Path(report.workspace or "") / "analyze_report.json")


def run_compare_job(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """Job runner (in the job process): the compare pipeline."""
    from magpie_core.pipelines.compare import compare

    file, common = _pipeline_args(args, emit)
    report = compare(file, baseline=args.get("baseline"), min_effect=float(args["min_effect"]), **common)
    return report.model_dump(mode="json"), str(Path(report.workspace or "") / "compare_report.json")


# --- AMD Magpie's argument names ---------------------------------------------------------

KernelPath = Annotated[
    str | None, Field(description="AMD Magpie's name: a kernel source file (becomes one inline kernel)")
]
Testcase = Annotated[
    str | list[str] | None,
    Field(description="AMD Magpie's name: the kernel's test command (refused unless the operator allowed it)"),
]


def amd_kernel(
    kernel_path: str,
    testcase_command: str | list[str] | None,
    kernel_type: str | None,
    working_dir: str | None = None,
    compile_command: str | list[str] | None = None,
    kernel_id: str | None = None,
) -> KernelInput:
    """AMD Magpie's ``kernel_path`` + ``testcase_command`` arguments as one inline kernel."""
    import shlex

    path = Path(kernel_path)

    def argv(command: str | list[str] | None) -> list[str] | None:
        return shlex.split(command) if isinstance(command, str) else command or None

    return KernelInput(
        id=kernel_id or path.stem,
        type=kernel_type or "hip",
        source_files=[str(path)],
        working_dir=working_dir or str(path.parent),
        testcase_command=argv(testcase_command),
        compile_command=argv(compile_command),
    )


def one_of(ours: Any, theirs: Any, names: str) -> Any:
    """Our argument or AMD Magpie's name for it, not both."""
    if ours is not None and theirs is not None:
        raise ValueError(f"give {names}, not both")
    return theirs if ours is None else ours


# --- tools -----------------------------------------------------------------------------

KernelConfigPath = Annotated[str | None, Field(description="path of a kernel YAML (under an allowed root)")]
ConfigDir = Annotated[str | None, Field(description="folder inline kernels are relative to (default: server CWD)")]
Environment = Annotated[str | None, Field(description="where kernels run: local, ray, ... (default: config)")]
Workers = Annotated[int | None, Field(ge=1, le=64, description="kernels evaluated in parallel (default: config)")]
Measure = Annotated[bool, Field(description="false: check correctness only, no timing")]
Perf = Annotated[PerformanceConfig | None, Field(description="timing settings for every kernel (timeouts capped)")]
Correct = Annotated[CorrectnessConfig | None, Field(description="correctness settings (timeouts capped)")]
OutputDir = Annotated[str | None, Field(description="where the run's workspace goes (default: output.directory)")]
Wait = Annotated[bool, Field(description="false: return the job at once; follow it with job_status / job_result")]
KernelType = Annotated[str | None, Field(description="AMD Magpie's name: type of the kernel_path kernel(s)")]
CheckPerf = Annotated[bool | None, Field(description="AMD Magpie's name for measure_performance")]
Sources = Annotated[
    list[str] | None,
    Field(
        description="source files that need no YAML, as on the command line: a KernelBench problem file (class "
        "Model, get_inputs) and its solutions (class ModelNew), checked the way KernelBench checks them"
    ),
]


@tool_meta("Analyze kernels", read_only=False, destructive=False, idempotent=False, open_world=False)
async def analyze(
    tool: ToolContext,
    kernel_config: KernelConfigPath = None,
    kernels: Annotated[list[KernelInput] | None, Field(description="kernels given inline")] = None,
    config_dir: ConfigDir = None,
    environment: Environment = None,
    workers: Workers = None,
    measure_performance: Measure = True,
    performance: Perf = None,
    correctness: Correct = None,
    output_dir: OutputDir = None,
    wait: Wait = True,
    kernel_path: KernelPath = None,
    testcase_command: Testcase = None,
    kernel_type: KernelType = None,
    working_dir: Annotated[str | None, Field(description="AMD Magpie's name: kernel_path's working folder")] = None,
    compile_command: Annotated[
        str | list[str] | None, Field(description="AMD Magpie's name: kernel_path's compile command")
    ] = None,
    check_performance: CheckPerf = None,
    sources: Sources = None,
) -> AnalyzeResult:
    """Compile, check and time independent kernels (same pipeline as `magpie analyze`).

    Kernels run in magpie's own harness: `entry` (and `reference`) name Python functions in files under
    the allowed roots. Commands (`testcase_command`, `compile_command`) run only if the server's operator
    allowed their programs. Long runs: `wait=false`, then `job_status` / `job_result`."""
    if kernel_path is not None:
        amd = amd_kernel(kernel_path, testcase_command, kernel_type, working_dir, compile_command)
        kernels = [*(kernels or []), amd]
    file, folder = kernel_file(tool, kernel_config, kernels, config_dir, sources, kernel_type)
    args = kernel_job_args(
        tool,
        file,
        folder,
        environment=environment,
        workers=workers,
        measure_performance=measure_performance if check_performance is None else check_performance,
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


@tool_meta("Compare kernel variants", read_only=False, destructive=False, idempotent=False, open_world=False)
async def compare(
    tool: ToolContext,
    kernel_config: Annotated[str | None, Field(description="path of a kernel YAML with >= 2 kernels")] = None,
    kernels: Annotated[list[KernelInput] | None, Field(description="variants given inline (>= 2)")] = None,
    config_dir: ConfigDir = None,
    baseline: Annotated[int | str | None, Field(description="baseline: index or id (default 0)")] = None,
    min_effect: Annotated[float, Field(ge=0, description="smallest speedup called FASTER/SLOWER")] = 0.02,
    environment: Environment = None,
    workers: Workers = None,
    measure_performance: Measure = True,
    performance: Perf = None,
    correctness: Correct = None,
    output_dir: OutputDir = None,
    wait: Wait = True,
    kernel_paths: Annotated[
        list[str] | None, Field(description="AMD Magpie's name: kernel source files, one variant each")
    ] = None,
    testcase_commands: Annotated[
        list[str] | None, Field(description="AMD Magpie's name: one test command per kernel_paths entry")
    ] = None,
    kernel_type: KernelType = None,
    baseline_index: Annotated[int | None, Field(ge=0, description="AMD Magpie's name for baseline")] = None,
    check_performance: CheckPerf = None,
    sources: Sources = None,
) -> CompareResult:
    """Compare variants under identical inputs and settings; rank the correct ones (like `magpie compare`).

    Same execution policy as `analyze`: magpie's harness by default, commands only if the operator
    allowed their programs."""
    if kernel_paths and not testcase_commands and not (kernels or sources) and recognised(tool, kernel_paths):
        sources, kernel_paths = kernel_paths, None  # KernelBench files under AMD Magpie's name: no HIP build
    if kernel_paths:
        commands = testcase_commands or [None] * len(kernel_paths)  # type: ignore[list-item]
        if len(commands) != len(kernel_paths):
            raise ToolFailure("kernel_paths and testcase_commands must have the same length")
        ids = [f"kernel_{i}_{Path(p).stem}" for i, p in enumerate(kernel_paths)]
        amd = [amd_kernel(p, c, kernel_type, kernel_id=k) for p, c, k in zip(kernel_paths, commands, ids, strict=True)]
        kernels = [*(kernels or []), *amd]
    baseline = one_of(baseline, baseline_index, "baseline or baseline_index")
    file, folder = kernel_file(tool, kernel_config, kernels, config_dir, sources, kernel_type)
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
        measure_performance=measure_performance if check_performance is None else check_performance,
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


@tool_meta("Write a kernel config", read_only=False, destructive=True, idempotent=True, open_world=False)
def create_kernel_config(
    tool: ToolContext,
    kernels: Annotated[list[KernelInput] | None, Field(description="the kernels of the YAML")] = None,
    output_path: Annotated[str | None, Field(description="write the YAML here (under an allowed root)")] = None,
    baseline: Annotated[int | str | None, Field(description="compare: baseline index or id")] = None,
    performance: Annotated[PerformanceConfig | None, Field(description="the file's timing settings")] = None,
    correctness: Annotated[CorrectnessConfig | None, Field(description="the file's correctness settings")] = None,
    overwrite: Annotated[bool, Field(description="replace an existing output_path")] = False,
    kernel_id: Annotated[str | None, Field(description="AMD Magpie's name: id of the kernel_path kernel")] = None,
    kernel_path: KernelPath = None,
    testcase_command: Testcase = None,
    kernel_type: KernelType = None,
    working_dir: Annotated[str | None, Field(description="AMD Magpie's name: kernel_path's working folder")] = None,
    compile_command: Annotated[
        str | list[str] | None, Field(description="AMD Magpie's name: kernel_path's compile command")
    ] = None,
) -> CreatedConfig:
    """A validated kernel YAML for `magpie analyze/compare -k`, optionally written to a file.

    Writing it runs nothing; commands in it are checked when `analyze`/`compare` use it."""
    import yaml

    if kernel_path is not None:
        amd = amd_kernel(kernel_path, testcase_command, kernel_type, working_dir, compile_command, kernel_id)
        kernels = [*(kernels or []), amd]
    if not kernels:
        raise ToolFailure("give kernels (a list) or kernel_path")
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
        if path.suffix.lower() not in (".yaml", ".yml"):
            raise ToolFailure(f"output_path {path}: a kernel config is written only to a .yaml or .yml file")
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
