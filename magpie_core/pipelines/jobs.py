"""The per-kernel work ``analyze`` and ``compare`` build on: compile → correctness → performance, isolated.

Every kernel is evaluated by :func:`evaluate_kernel`, a picklable top-level function, so any execution environment
(local threads, cluster tasks, containers) can run it. The backend's correctness harness and timer run in a separate
worker process with a timeout: a crash or hang fails that kernel alone."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from magpie_core.config.common import as_argv_list
from magpie_core.config.kernel import KernelConfig, PerformanceConfig
from magpie_core.pipelines.kernel_reports import KernelResult
from magpie_core.pipelines.preflight import preflight_problem
from magpie_core.plugins import get_plugin_manager
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


def _compile(built: BuiltKernel, backend: Any, default_compile: bool = True) -> CompileResult:
    kernel, cwd, workdir, timeout = built.kernel, built.cwd, built.workdir, built.timeout
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


def _run_testcases(built: BuiltKernel, latency: dict[str, Any] | None = None) -> tuple[CorrectnessResult, str]:
    """The testcase commands' verdict and their output (AMD Magpie's latency lines are read from it)."""
    kernel, cwd, workdir, timeout = built.kernel, built.cwd, built.workdir, built.timeout
    outcomes = run_commands(
        with_build_dir(kernel.testcase_commands(), workdir),
        cwd=cwd,
        env={**command_env(kernel, workdir), **(plugin_answer("magpie_testcase_env", latency=latency) or {})},
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
    return min(MAX_WAIT_S, float(job.correctness.get("timeout_seconds", 300)) + job.performance.timeout_seconds)


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
        result.compile = _compile(built, backend, job.default_compile)
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
    """Compile, check and time one kernel. Never raises for a kernel's own failure. ``harness``: where the backend's
    harness runs (default: an isolated worker that exits when done)."""
    built = build_kernel(job)
    if not built.ready:
        return built.result
    result = built.result
    _check_and_time(built, job, harness or _run_worker)
    for stage in (result.correctness, result.performance):
        if stage.status in (StageStatus.FAILED, StageStatus.ERROR) and stage.message:
            result.errors.append(stage.message.splitlines()[0])
    return result


def _check_and_time(built: BuiltKernel, job: KernelJob, harness: HarnessRun) -> None:
    """The correctness gates (testcase commands, the backend's harness) and timing of a compiled kernel."""
    kernel, result = built.kernel, built.result
    correctness: CorrectnessResult | None = None
    output = ""
    run_testcases = bool(kernel.testcase_commands()) and not job.timing_only
    if run_testcases and job.correctness.get("backend", "auto") in ("auto", "testcase", "accordo"):
        correctness, output = _run_testcases(built, job.latency)
    if kernel.uses_harness:
        correctness = _run_harness(built, job, correctness, harness)
    elif correctness is None:
        correctness = CorrectnessResult(
            status=StageStatus.NOT_RUN,
            message="no correctness check configured: give testcase_command, or entry with reference/get_inputs",
        )
    result.correctness = correctness
    # a testcase that times itself reports even under --no-perf (its line costs nothing more: AMD Magpie)
    timed = plugin_answer("magpie_testcase_performance", output=output, latency=job.latency) if output else None
    if timed is not None and not kernel.uses_harness:
        result.performance = timed
    elif not kernel.uses_harness and job.measure_performance:
        result.performance = _profile_or_explain(built, job)


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
    built: BuiltKernel, job: KernelJob, testcase: CorrectnessResult | None, harness: HarnessRun
) -> CorrectnessResult:
    """The backend's harness (in an isolated worker by default): correctness, then timing (and counters, once). Returns
    the correctness verdict: the harness's, unless a testcase command already failed."""
    kernel, result, cwd, workdir, timeout = built.kernel, built.result, built.cwd, built.workdir, built.timeout
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
        _profile_harness(task, profiler_name, job, built, worker_env)
    correctness = testcase
    if correctness is None or correctness.status == StageStatus.PASSED:
        if correctness is not None:  # both gates ran: report the harness, mention the testcase
            outcome.correctness.message = f"{outcome.correctness.message or ''} (testcase_command also passed)"
        correctness = outcome.correctness
    if correctness.status != StageStatus.PASSED and performance.status == StageStatus.PASSED:
        performance.notes.append("timed, but not ranked: correctness did not pass")
    return correctness


PROFILE_LAUNCHES = 5


def _profile_harness(task: EvaluationTask, name: str, job: KernelJob, built: BuiltKernel, env: dict[str, str]) -> None:
    """Run the harness once more under profiler ``name``: the kernel alone, a few launches, no timing. The counters join
    the event-timed result (timing and ranking stay with the device timer). A profiler failure is a note on the
    performance result, not a failed kernel."""
    cwd, workdir, performance = built.cwd, built.workdir, built.result.performance
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


def _profile_or_explain(built: BuiltKernel, job: KernelJob) -> PerformanceResult:
    """Testcase-only kernels: a profiler plugin can time them; device events cannot."""
    kernel, cwd, workdir = built.kernel, built.cwd, built.workdir
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


def plugin_answer(hook_name: str, **kwargs: Any) -> Any:
    # Called through pluggy directly: a ConfigError these hooks raise is the user's mistake (exit 2, with the
    # fix), which the plugin manager's guarded calls would turn into a warning about the plugin.
    return getattr(get_plugin_manager().pm.hook, hook_name)(**kwargs)


# --- many kernels ----------------------------------------------------------------


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
            on_done(index, result if isinstance(result, KernelResult) else failed_job(jobs[index], result))
        if progress is not None:
            progress(f"[{done}/{len(jobs)}] {jobs[index].kernel.get('id')}: {one_line(result)}")

    if progress:
        progress(f"evaluating {len(jobs)} kernel(s) on '{environment}'")
    results = env.map(
        evaluate_kernel, jobs, workers=workers, gpus_per_item=gpus_per_job(jobs), on_result=report_progress
    )
    return [r if isinstance(r, KernelResult) else failed_job(j, r) for j, r in zip(jobs, results, strict=True)]


def gpus_per_job(jobs: list[KernelJob]) -> int:
    """What an environment reserves for each of ``jobs``: a GPU, unless they all run on the CPU."""
    return 0 if {str(j.kernel.get("device") or "") for j in jobs} <= {"cpu"} else 1


def one_line(result: Any) -> str:
    if not isinstance(result, KernelResult):
        return f"could not run ({type(result).__name__})"
    text = f"compile {result.compile.status.value}, correctness {result.correctness.status.value}"
    if result.median_us is not None:
        text += f", median {result.median_us:,.2f} us"
    return text


def failed_job(job: KernelJob, error: Any) -> KernelResult:
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
