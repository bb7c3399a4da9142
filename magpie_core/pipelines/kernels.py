"""``analyze``, and the per-kernel work ``compare`` builds on: compile → correctness → performance, isolated.

Every kernel is evaluated by :func:`evaluate_kernel`, a picklable top-level function, so any execution environment
(local threads, cluster tasks, containers) can run it. The backend's correctness harness and timer run in a separate
worker process with a timeout: a crash or hang fails that kernel alone.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from magpie_core.config.common import PluginBlocksModel, as_argv_list, config_blocks, dump
from magpie_core.config.errors import ConfigError
from magpie_core.config.kernel import KernelConfig, KernelConfigFile, PerformanceConfig
from magpie_core.config.loader import load_config, load_yaml
from magpie_core.machine.hardware import write_report
from magpie_core.pipelines.kernel_reports import AnalyzeReport, KernelResult
from magpie_core.pipelines.preflight import preflight_problem
from magpie_core.plugins import UnknownComponentError, get_plugin_manager
from magpie_core.reports import (
    CompileResult,
    CorrectnessResult,
    EvaluationOutcome,
    EvaluationTask,
    Model,
    PerformanceResult,
    StageStatus,
)
from magpie_core.runtime.interrupts import RunInterrupted
from magpie_core.runtime.processes import MAX_WAIT_S, run_command, run_commands, tail
from magpie_core.runtime.workspace import Workspace, create_workspace

Progress = Callable[[str], None]
BUILT_IN_TIMING = ("events", "none")


class KernelJob(Model):
    """One kernel to evaluate, with the settings it runs under (picklable, JSON-able)."""

    kernel: dict[str, Any]
    correctness: dict[str, Any]
    #: typed: its defaults are the config model's, written once (profiler option blocks are its extra keys)
    performance: PerformanceConfig
    config_dir: str
    workdir: str
    measure_performance: bool = True
    baseline_outputs: str | None = None
    save_outputs: str | None = None
    extra_env: dict[str, str] = Field(default_factory=dict)
    #: a later timing round of compare: no compile, no correctness, only timing
    timing_only: bool = False
    #: compare times this kernel in interleaved blocks afterwards: correctness (and counters) only here
    timing_elsewhere: bool = False
    build_artifacts: list[str] = Field(default_factory=list)
    #: compiling.enable_default_compile: the backend compiles a kernel that has no compile_command
    default_compile: bool = True
    #: AMD Magpie's ``latency:`` block (hooks ``magpie_testcase_env`` / ``_performance``), if the file has one
    latency: dict[str, Any] | None = None


# --- one kernel ----------------------------------------------------------------


BUILD_DIR_VAR = "MAGPIE_BUILD_DIR"


def with_build_dir(commands: list[list[str]], workdir: Path) -> list[list[str]]:
    """``$MAGPIE_BUILD_DIR`` / ``${MAGPIE_BUILD_DIR}`` in a command: the kernel's build folder
    (commands never go through a shell, so magpie expands this one variable itself)."""
    path = str(workdir)
    return [
        [arg.replace("${" + BUILD_DIR_VAR + "}", path).replace("$" + BUILD_DIR_VAR, path) for arg in argv]
        for argv in commands
    ]


def command_env(kernel: KernelConfig, workdir: Path) -> dict[str, str]:
    return {BUILD_DIR_VAR: str(workdir), **kernel.env}


def _compile(
    kernel: KernelConfig, backend: Any, cwd: Path, workdir: Path, timeout: float, default_compile: bool = True
) -> CompileResult:
    commands = with_build_dir(kernel.compile_commands(), workdir)
    if not commands and not default_compile:
        message = "not compiled: no compile_command and compiling.enable_default_compile is false"
        return CompileResult(status=StageStatus.SKIPPED, message=message)
    if commands:
        start = time.perf_counter()
        outcomes = run_commands(
            commands, cwd=cwd, env=command_env(kernel, workdir), timeout_s=timeout, log_path=workdir / "compile.log"
        )
        failed = next((o for o in outcomes if not o.ok), None)
        result = CompileResult(
            status=StageStatus.FAILED if failed else StageStatus.PASSED,
            command=commands[-1] if not failed else failed.argv,
            log=tail("\n".join(o.output for o in outcomes), 60),
            duration_s=time.perf_counter() - start,
            message=failed.describe() if failed else None,
        )
        return backend.annotate_compile(kernel, result)
    try:  # the kernel with its working dir resolved (relative sources just work); a backend that raises fails it alone
        result = backend.compile(kernel.model_copy(update={"working_dir": str(cwd)}), workdir)
    except Exception as exc:
        return CompileResult(status=StageStatus.ERROR, message=f"{backend.name}: {type(exc).__name__}: {exc}")
    return CompileResult(status=StageStatus.SKIPPED, message="nothing to compile") if result is None else result


def _run_testcases(
    kernel: KernelConfig, cwd: Path, workdir: Path, timeout: float, latency: dict[str, Any] | None = None
) -> tuple[CorrectnessResult, str]:
    """The testcase commands' verdict and their output (AMD Magpie's latency lines are read from it)."""
    outcomes = run_commands(
        with_build_dir(kernel.testcase_commands(), workdir),
        cwd=cwd,
        env={**command_env(kernel, workdir), **(_plugin_answer("magpie_testcase_env", latency=latency) or {})},
        timeout_s=timeout,
        log_path=workdir / "testcase.log",
    )
    failed = next((o for o in outcomes if not o.ok), None)
    result = CorrectnessResult(
        status=StageStatus.FAILED if failed else StageStatus.PASSED,
        method="testcase_command",
        trials=len(outcomes),
        message=(f"{failed.describe()}\n{tail(failed.output, 15)}" if failed else "all testcase commands exited 0"),
    )
    return result, "\n".join(o.output for o in outcomes)


def worker_argv(task_path: Path, outcome_path: Path) -> list[str]:
    """The isolated worker's command line (a profiler can wrap exactly this)."""
    return [sys.executable, "-m", "magpie_core.measurement.worker", str(task_path), str(outcome_path)]


def _run_worker(
    task: EvaluationTask, cwd: Path, workdir: Path, env: dict[str, str], timeout: float
) -> EvaluationOutcome:
    task_path = workdir / "task.json"
    outcome_path = workdir / "outcome.json"
    task_path.write_text(task.model_dump_json(indent=2))
    outcome_path.unlink(missing_ok=True)
    result = run_command(
        worker_argv(task_path, outcome_path), cwd=cwd, env=env, timeout_s=timeout, log_path=workdir / "worker.log"
    )
    if outcome_path.exists() and not result.timed_out:
        try:
            return EvaluationOutcome.model_validate_json(outcome_path.read_text())
        except ValueError:
            pass
    reason = result.describe() if not result.ok else "worker exited without writing a result"
    return EvaluationOutcome(
        correctness=CorrectnessResult(status=StageStatus.ERROR, message=f"{reason}\n{tail(result.output, 20)}"),
        performance=PerformanceResult(status=StageStatus.SKIPPED, message="worker did not finish"),
    )


#: how a kernel's harness runs: (task, cwd, workdir, env, timeout) -> its outcome (an isolated worker by default)
HarnessRun = Callable[[EvaluationTask, Path, Path, dict[str, str], float], EvaluationOutcome]


@dataclass
class BuiltKernel:
    """A kernel after its build step, with what checking it needs; ``ready`` False: ``result`` is final."""

    kernel: KernelConfig
    result: KernelResult
    cwd: Path
    workdir: Path
    timeout: float
    ready: bool


def kernel_timeout(job: KernelJob) -> float:
    """How long one kernel's worker may take: the two stages' budgets, within what magpie waits for anything."""
    return min(
        MAX_WAIT_S,
        float(job.correctness.get("timeout_seconds", 300)) + job.performance.timeout_seconds,
    )


def build_kernel(job: KernelJob) -> BuiltKernel:
    """Preflight and compile one kernel, and ask its backend whether it can run here."""
    kernel = KernelConfig.model_validate(job.kernel)
    workdir = Path(job.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    backend = get_plugin_manager().get("kernel_backend", kernel.type)
    cwd = kernel.resolved_working_dir(Path(job.config_dir))
    timeout = kernel_timeout(job)
    result = KernelResult(
        kernel_id=kernel.id,
        kernel_type=kernel.type,
        compile=CompileResult(status=StageStatus.SKIPPED),
        correctness=CorrectnessResult(status=StageStatus.SKIPPED),
        performance=PerformanceResult(status=StageStatus.SKIPPED, message="not measured"),
        workdir=str(workdir),
    )
    built = BuiltKernel(kernel, result, cwd, workdir, timeout, ready=False)
    problem = None if job.timing_only else preflight_problem(kernel, cwd, Path(job.config_dir))
    if job.timing_only:
        result.compile = CompileResult(
            status=StageStatus.SKIPPED, artifacts=job.build_artifacts, message="built in round 1"
        )
    elif problem:  # before any command: a testcase exiting 0 says nothing about files that are not there
        result.compile = CompileResult(status=StageStatus.FAILED, message=problem)
    else:
        result.compile = _compile(kernel, backend, cwd, workdir, timeout, job.default_compile)
    if result.compile.status == StageStatus.FAILED:
        result.errors.append(result.compile.message or "compile failed")
        result.correctness.message = "compile failed"
        return built
    blocker = backend.cannot_run(kernel) if result.compile.status == StageStatus.PASSED else None
    if blocker:
        result.correctness = CorrectnessResult(status=StageStatus.NOT_RUN, message=blocker)
        result.performance = PerformanceResult(status=StageStatus.NOT_RUN, message=blocker)
        result.no_device = True
        return built
    built.ready = True
    return built


def evaluate_kernel(job: KernelJob, harness: HarnessRun | None = None) -> KernelResult:
    """Compile, check and time one kernel. Never raises for a kernel's own failure.

    ``harness``: where the backend's harness runs (default: an isolated worker that exits when done).
    """
    built = build_kernel(job)
    if not built.ready:
        return built.result
    result = built.result
    _check_and_time(built.kernel, job, result, built.cwd, built.workdir, built.timeout, harness or _run_worker)
    for stage in (result.correctness, result.performance):
        if stage.status in (StageStatus.FAILED, StageStatus.ERROR) and stage.message:
            result.errors.append(stage.message.splitlines()[0])
    return result


def _check_and_time(
    kernel: KernelConfig,
    job: KernelJob,
    result: KernelResult,
    cwd: Path,
    workdir: Path,
    timeout: float,
    harness: HarnessRun,
) -> None:
    """The correctness gates (testcase commands, the backend's harness) and timing of a compiled kernel."""
    correctness: CorrectnessResult | None = None
    output = ""
    run_testcases = bool(kernel.testcase_commands()) and not job.timing_only
    if run_testcases and job.correctness.get("backend", "auto") in ("auto", "testcase", "accordo"):
        correctness, output = _run_testcases(kernel, cwd, workdir, timeout, job.latency)
    if kernel.uses_harness:
        correctness = _run_harness(kernel, job, result, correctness, cwd, workdir, timeout, harness)
    elif correctness is None:
        correctness = CorrectnessResult(
            status=StageStatus.NOT_RUN,
            message="no correctness check configured: give testcase_command, or entry with reference/get_inputs",
        )
    result.correctness = correctness
    # a testcase that times itself reports even under --no-perf (its line costs nothing more: AMD Magpie)
    timed = _plugin_answer("magpie_testcase_performance", output=output, latency=job.latency) if output else None
    if timed is not None and not kernel.uses_harness:
        result.performance = timed
    elif not kernel.uses_harness and job.measure_performance:
        result.performance = _profile_or_explain(kernel, job, cwd, workdir, timeout)


def evaluation_task(
    job: KernelJob, kernel_type: str, artifacts: list[str], workdir: Path, timed: bool
) -> EvaluationTask:
    """What the backend's worker gets: the kernel, its build, its settings (``timed``: time it there)."""
    perf_settings = job.performance.model_dump(mode="json")
    perf_settings["enabled"] = timed and job.performance.backend != "none"
    return EvaluationTask(
        kernel=job.kernel,
        kernel_type=kernel_type,
        config_dir=job.config_dir,
        workspace=str(workdir),
        build_artifacts=artifacts,
        baseline_outputs=job.baseline_outputs,
        save_outputs=job.save_outputs,
        seed=int(job.correctness.get("seed", 0)),
        settings={"correctness": job.correctness, "performance": perf_settings, "timing_only": job.timing_only},
    )


def _run_harness(
    kernel: KernelConfig,
    job: KernelJob,
    result: KernelResult,
    testcase: CorrectnessResult | None,
    cwd: Path,
    workdir: Path,
    timeout: float,
    harness: HarnessRun,
) -> CorrectnessResult:
    """The backend's harness (in an isolated worker by default): correctness, then timing (and counters, once).

    Returns the correctness verdict: the harness's, unless a testcase command already failed.
    """
    timed_here = job.measure_performance and not job.timing_elsewhere
    task = evaluation_task(job, kernel.type, result.compile.artifacts, workdir, timed_here)
    worker_env = {**command_env(kernel, workdir), **job.extra_env}
    outcome = harness(task, cwd, workdir, worker_env, timeout)
    result.environment = outcome.environment
    result.performance = performance = outcome.performance
    profiler_name = job.performance.backend
    if (
        job.measure_performance
        and not job.timing_only  # counters once, from round 1
        and profiler_name not in BUILT_IN_TIMING
        and outcome.correctness.status == StageStatus.PASSED
    ):
        _profile_harness(task, profiler_name, job, cwd, workdir, worker_env, timeout, performance)
    correctness = testcase
    if correctness is None or correctness.status == StageStatus.PASSED:
        if correctness is not None:  # both gates ran: report the harness, mention the testcase
            outcome.correctness.message = f"{outcome.correctness.message or ''} (testcase_command also passed)"
        correctness = outcome.correctness
    if correctness.status != StageStatus.PASSED and performance.status == StageStatus.PASSED:
        performance.notes.append("timed, but not ranked: correctness did not pass")
    return correctness


PROFILE_LAUNCHES = 5


def _profile_harness(
    task: EvaluationTask,
    name: str,
    job: KernelJob,
    cwd: Path,
    workdir: Path,
    env: dict[str, str],
    timeout: float,
    performance: PerformanceResult,
) -> None:
    """Run the harness once more under profiler ``name``: the kernel alone, a few launches, no timing.

    The counters join the event-timed result (timing and ranking stay with the device timer).
    A profiler failure is a note on the performance result, not a failed kernel.
    """
    profiler = get_plugin_manager().get("profiler", name)
    options = job.performance.profiler_options(name)
    launches = int(options.get("harness_launches", PROFILE_LAUNCHES))
    profile_task = task.model_copy(deep=True)
    profile_task.save_outputs = None
    profile_task.baseline_outputs = None
    profile_task.settings["profile"] = {"launches": launches}
    task_path, outcome_path = workdir / f"task_profile_{name}.json", workdir / f"outcome_profile_{name}.json"
    task_path.write_text(profile_task.model_dump_json(indent=2))
    try:
        counters = profiler.profile(
            worker_argv(task_path, outcome_path),
            cwd,
            env,
            workdir / f"profile_{name}",
            {**options, "profiler_ranges": True},
        )
    except Exception as exc:
        performance.notes.append(f"{name}: profiling failed: {type(exc).__name__}: {exc}")
        return
    performance.counters = counters
    performance.notes.extend(profiler.notes(options))
    performance.notes.append(f"{name}: counters from a separate run of {launches} launches (not the timed run)")


def _profile_or_explain(
    kernel: KernelConfig, job: KernelJob, cwd: Path, workdir: Path, timeout: float
) -> PerformanceResult:
    """Testcase-only kernels: a profiler plugin can time them; device events cannot."""
    name = job.performance.backend
    if name in BUILT_IN_TIMING:
        return PerformanceResult(
            status=StageStatus.NOT_RUN,
            message="testcase-only kernel: give 'entry' for device-event timing, "
            "or set performance.backend to a profiler plugin",
        )
    profiler = get_plugin_manager().get("profiler", name)
    commands = with_build_dir(as_argv_list(kernel.prof_command) or kernel.testcase_commands(), workdir)
    if not commands:
        return PerformanceResult(status=StageStatus.NOT_RUN, message="nothing to profile: no testcase_command")
    options = job.performance.profiler_options(name)
    try:
        counters = profiler.profile(
            commands[0], cwd, command_env(kernel, workdir), workdir / f"profile_{name}", options
        )
    except Exception as exc:
        return PerformanceResult(status=StageStatus.ERROR, timer=name, message=f"{type(exc).__name__}: {exc}")
    return PerformanceResult(status=StageStatus.PASSED, timer=name, counters=counters, notes=profiler.notes(options))


# --- many kernels ----------------------------------------------------------------


def load_kernel_file(path: Path) -> KernelConfigFile:
    file = load_config(KernelConfigFile, path)
    check_backends(file, path)
    return file


def kernel_file_from_sources(sources: list[str], kernel_type: str | None) -> KernelConfigFile | None:
    """A kernel file a plugin builds for source files it recognises (no YAML needed), or None."""
    return _plugin_answer("magpie_kernel_file_from_sources", sources=sources, kernel_type=kernel_type)


def prepare_kernel_file(file: KernelConfigFile, config_dir: Path, source: Path | None = None) -> KernelConfigFile:
    """``file`` with the plugins' own blocks applied, checked by them before anything runs."""
    prepared = _plugin_answer("magpie_prepare_kernel_file", file=file, config_dir=config_dir, source=source)
    prepared = prepared if prepared is not None else file
    if not prepared.all_kernels():
        raise ConfigError(source or config_dir, "no kernels: give 'kernel:' or 'kernels:'")
    return prepared


def _plugin_answer(hook_name: str, **kwargs: Any) -> Any:
    # Called through pluggy directly: a ConfigError these hooks raise is the user's mistake (exit 2, with the
    # fix), which the plugin manager's guarded calls would turn into a warning about the plugin.
    return getattr(get_plugin_manager().pm.hook, hook_name)(**kwargs)


def kernel_jobs(file: KernelConfigFile, config_dir: Path, ws: Workspace, measure_performance: bool) -> list[KernelJob]:
    jobs = []
    for kernel in file.all_kernels():
        jobs.append(
            KernelJob(
                kernel=kernel.model_dump(mode="json", exclude_none=True),
                correctness=file.effective_correctness(kernel).model_dump(mode="json"),
                performance=file.effective_performance(kernel),
                config_dir=str(config_dir.resolve()),
                workdir=str(ws.path / kernel.id),
                measure_performance=measure_performance,
                default_compile=file.compiling.enable_default_compile if file.compiling else True,
                latency=file.latency.model_dump(mode="json") if file.latency else None,
            )
        )
    return jobs


def check_backends(file: KernelConfigFile, source: Path | None = None) -> None:
    """Fail before running anything if a kernel type has no installed backend (read from ``source``: at its line)."""
    manager = get_plugin_manager()
    locs = ([("kernel", "type")] if file.kernel else []) + [("kernels", i, "type") for i in range(len(file.kernels))]
    for loc, kernel in zip(locs, file.all_kernels(), strict=True):
        try:
            manager.get("kernel_backend", kernel.type)
        except UnknownComponentError as exc:
            if source is None:
                raise
            raise ConfigError(source, str(exc), load_yaml(source)[1].get(loc), loc) from None


def block_options(*configs: PluginBlocksModel | None) -> dict[str, dict[str, Any]]:
    """The plugin config blocks of ``configs`` as plain mappings, later configs overlaying earlier ones."""
    options: dict[str, dict[str, Any]] = {}
    for config in configs:
        for key, block in (config.plugin_blocks() if config is not None else {}).items():
            options[key] = {**options.get(key, {}), **block.model_dump(exclude_none=True)}
    return options


def environment_options(file: KernelConfigFile, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Config blocks for the execution environment: the framework's ``defaults``, then the file's own
    (top level, then ``scheduler:``)."""
    options = dict(defaults or {})
    for key, block in block_options(file, file.scheduler).items():
        options[key] = {**options.get(key, {}), **block}
    return options


def shared_output_dir(options: dict[str, Any]) -> str | None:
    """A ``shared_storage_path`` from any environment block: where workspaces go when none is given."""
    for block in options.values():
        if isinstance(block, dict) and block.get("shared_storage_path"):
            return str(block["shared_storage_path"])
    return None


def file_environment(file: KernelConfigFile) -> str | None:
    """The environment a kernel file asks for: ``scheduler.environment``, else the one a plugin block
    implies (e.g. AMD Magpie's cluster block)."""
    if file.scheduler and file.scheduler.environment:
        return file.scheduler.environment
    blocks = config_blocks(KernelConfigFile.block_scope)
    held = [*file.plugin_blocks(), *(file.scheduler.plugin_blocks() if file.scheduler else {})]
    return next((blocks[key].implies_environment for key in held if blocks[key].implies_environment), None)


def run_jobs(
    jobs: list[KernelJob],
    environment: str,
    workers: int,
    progress: Progress | None,
    options: dict[str, Any] | None = None,
    on_done: Callable[[int, KernelResult], None] | None = None,
) -> list[KernelResult]:
    """Evaluate ``jobs`` on ``environment``; ``on_done(index, result)`` as each finishes (so an interrupted
    run still knows what finished)."""
    env = get_plugin_manager().get("environment", environment)
    if options:
        env = env.with_options(options)
    done = 0

    def report_progress(index: int, result: Any) -> None:
        nonlocal done
        done += 1
        if on_done is not None:
            on_done(index, result if isinstance(result, KernelResult) else _failed_job(jobs[index], result))
        if progress is not None:
            progress(f"[{done}/{len(jobs)}] {jobs[index].kernel.get('id')}: {one_line(result)}")

    if progress:
        progress(f"evaluating {len(jobs)} kernel(s) on '{environment}'")
    gpus = 0 if {str(j.kernel.get("device") or "") for j in jobs} <= {"cpu"} else 1
    results = env.map(evaluate_kernel, jobs, workers=workers, gpus_per_item=gpus, on_result=report_progress)
    return [r if isinstance(r, KernelResult) else _failed_job(j, r) for j, r in zip(jobs, results, strict=True)]


def one_line(result: Any) -> str:
    if not isinstance(result, KernelResult):
        return f"could not run ({type(result).__name__})"
    text = f"compile {result.compile.status.value}, correctness {result.correctness.status.value}"
    if result.median_us is not None:
        text += f", median {result.median_us:,.2f} us"
    return text


def _failed_job(job: KernelJob, error: Any) -> KernelResult:
    """An environment returns an exception object for a job it could not run."""
    message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    return KernelResult(
        kernel_id=str(job.kernel.get("id")),
        kernel_type=str(job.kernel.get("type")),
        compile=CompileResult(status=StageStatus.ERROR, message=message),
        correctness=CorrectnessResult(status=StageStatus.SKIPPED, message="job did not run"),
        performance=PerformanceResult(status=StageStatus.SKIPPED, message="job did not run"),
        errors=[message],
    )


def interrupted_result(job: KernelJob) -> KernelResult:
    """A kernel the run was stopped before finishing (neither passed nor failed)."""
    why = "interrupted before this kernel finished"
    return KernelResult(
        kernel_id=str(job.kernel.get("id")),
        kernel_type=str(job.kernel.get("type")),
        compile=CompileResult(status=StageStatus.SKIPPED, message=why),
        correctness=CorrectnessResult(status=StageStatus.NOT_RUN, message=why),
        performance=PerformanceResult(status=StageStatus.NOT_RUN, message=why),
        workdir=job.workdir,
        errors=[why],
    )


def interrupted(mode: str, finished: int, total: int, report_path: Path, detail: str = "") -> RunInterrupted:
    """The exception an interrupted kernel run ends with, once its partial report is written."""
    return RunInterrupted(f"{mode} interrupted: {finished} of {total} kernel(s) checked{detail}", report_path)


def summary_row(result: KernelResult) -> dict[str, Any]:
    timing = result.performance.timing
    return {
        "kernel_id": result.kernel_id,
        "kernel_type": result.kernel_type,
        "compiling_state": result.compiling_state,
        "correctness_state": result.correctness_state,
        "performance_state": result.performance_state,
        "correctness": result.correctness.status.value,
        "median_us": timing.median if timing else None,
        "ci95_us": [timing.ci95_low, timing.ci95_high] if timing else None,
        "samples": timing.samples if timing else None,
        "timer": result.performance.timer,
        "message": (result.errors[0] if result.errors else None),
    }


def analyze(
    file: KernelConfigFile,
    *,
    config_dir: Path,
    output_dir: Path,
    environment: str = "local",
    workers: int = 1,
    measure_performance: bool = True,
    progress: Progress | None = None,
    environment_defaults: dict[str, Any] | None = None,
) -> AnalyzeReport:
    check_backends(file)
    options = environment_options(file, environment_defaults)
    label = file.all_kernels()[0].id
    ws = create_workspace(output_dir, "analyze", label)
    handler = ws.attach_log()
    settings = {"environment": environment, "workers": workers, "measure_performance": measure_performance}
    jobs = kernel_jobs(file, config_dir, ws, measure_performance)
    done: dict[int, KernelResult] = {}
    try:
        ws.snapshot_config(dump(file))
        results = run_jobs(jobs, environment, workers, progress, options, on_done=done.__setitem__)
        report = AnalyzeReport(
            workspace=str(ws.path), results=results, summary=[summary_row(r) for r in results], settings=settings
        )
        write_report(report, ws.report_path)
        return report
    except KeyboardInterrupt:
        results = [done.get(i) or interrupted_result(job) for i, job in enumerate(jobs)]
        AnalyzeReport(
            workspace=str(ws.path),
            results=results,
            summary=[summary_row(r) for r in results],
            settings=settings,
            interrupted=True,
        ).write(ws.report_path)
        raise interrupted("analyze", len(done), len(jobs), ws.report_path) from None
    finally:
        logging.getLogger("magpie").removeHandler(handler)
