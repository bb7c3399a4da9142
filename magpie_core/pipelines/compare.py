"""``compare``: every variant under one set of settings, then a ranking whose verdicts hold on a busy machine.

Correctness runs first, each candidate in its own worker (baseline first: its outputs are every other candidate's
check). Timing then depends on the kernels' backends:

* with backends that keep a kernel ready for timing (``open_timing``), every correct candidate is timed in short
  **interleaved blocks** (:mod:`magpie_core.pipelines.blocked`) and its speedup comes from per-block paired ratios
  against the baseline; in another environment (a cluster, containers) one task of it runs them all;
* otherwise (testcase commands), each candidate is timed in ``performance.rounds`` whole rounds run in rotating
  order, and each round is a block of the same paired statistics.

A verdict is FASTER / SLOWER only when the interval supports it beyond ``min_effect``, SAME only when the
interval rules out a difference of ``min_effect``, and UNSTABLE otherwise — including when the baseline timed
against itself does not come out the same."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import magpie_core.pipelines.blocked as interleaved
from magpie_core.config.common import dump
from magpie_core.config.kernel import KernelConfig, KernelConfigFile, PerformanceConfig
from magpie_core.interfaces import KernelBackend
from magpie_core.machine.hardware import write_report
from magpie_core.measurement.stats import summarize
from magpie_core.measurement.worker_client import TimingWorkerError, warm_fork_server
from magpie_core.pipelines.blocked import BASELINE_COPY, BlockedTiming, BlockPlan, stability, time_in_blocks
from magpie_core.pipelines.instances import (
    Instances,
    check_first_processes,
    check_more_processes,
    prepare_all,
    processes_per_instance,
    rejected,
)
from magpie_core.pipelines.jobs import (
    KernelJob,
    Progress,
    failed_job,
    gpus_per_job,
    interrupted,
    interrupted_result,
    one_line,
    run_jobs,
)
from magpie_core.pipelines.kernel_files import check_backends, environment_options, kernel_jobs
from magpie_core.pipelines.kernel_reports import CompareReport, KernelResult
from magpie_core.pipelines.verdicts import interrupted_verdicts, rank, rankable
from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import CorrectnessResult, PerformanceResult, StageStatus
from magpie_core.runtime.workspace import Workspace, create_workspace


def compare(
    file: KernelConfigFile,
    *,
    config_dir: Path,
    output_dir: Path,
    environment: str = "local",
    workers: int = 1,
    baseline: int | str | None = None,
    measure_performance: bool = True,
    min_effect: float = 0.02,
    progress: Progress | None = None,
    environment_defaults: dict[str, Any] | None = None,
    timing: str = "auto",
) -> CompareReport:
    """Evaluate ≥ 2 variants under one set of settings, then rank the correct ones. ``timing``: ``auto`` (interleaved
    blocks where possible), ``blocks`` (an error where not possible) or ``rounds`` (whole rounds in rotating order, the
    design before blocks)."""
    if timing not in TIMING_DESIGNS:
        raise ValueError(f"timing {timing!r}: use one of {', '.join(TIMING_DESIGNS)}")
    _check_compare_file(file)
    check_backends(file)
    options = environment_options(file, environment_defaults)
    if baseline is not None:
        file = file.model_copy(update={"baseline": baseline})
    base_index = file.baseline_index()
    kernels = file.all_kernels()
    ws = create_workspace(output_dir, "compare", kernels[base_index].id)
    handler = ws.attach_log()
    jobs = kernel_jobs(file, config_dir, ws, measure_performance)
    done: list[KernelResult | None] = [None] * len(jobs)  # filled as candidates finish (kept if interrupted)
    stable: dict[str, Any] | None = None
    settings: dict[str, Any] = {"environment": environment, "workers": workers, "min_effect": min_effect}
    try:
        ws.snapshot_config(dump(file))
        blocked = _use_blocks(timing, kernels, jobs)
        rounds = _plan_timing(jobs, base_index, blocked, settings)
        if blocked and environment == "local":
            results, stable = _check_and_time_in_blocks(jobs, base_index, ws.path, min_effect, progress, done)
        elif blocked:  # the referee's side goes with the candidates: one task of that environment runs the blocks
            there = BlocksElsewhere(jobs, base_index, min_effect, str(ws.path), str(jobs[base_index].config_dir))
            results, stable = _check_and_time_elsewhere(there, environment, options, progress)
        else:
            results = _correctness_first(jobs, base_index, ws.path, environment, workers, progress, options, done)
            if measure_performance and rounds > 1:
                _more_timing_rounds(jobs, results, rounds, environment, workers, progress, options)
        if stable is not None and stable.get("interrupted"):
            raise KeyboardInterrupt  # the blocks stopped early: the interrupted report ranks what they measured
        report = rank(results, base_index, min_effect=min_effect, workspace=str(ws.path), stability=stable)
        report.settings = settings
        write_report(report, ws.report_path)
        return report
    except KeyboardInterrupt:
        filled = [r if r is not None else interrupted_result(j) for r, j in zip(done, jobs, strict=True)]
        _write_interrupted(filled, base_index, min_effect, ws, stable, settings)
        detail = f", timing stopped after {stable.get('blocks', 0)} interleaved blocks" if stable else ""
        raise interrupted("compare", sum(r is not None for r in done), len(jobs), ws.report_path, detail) from None
    finally:
        logging.getLogger("magpie").removeHandler(handler)


TIMING_DESIGNS = ("auto", "blocks", "rounds")
ROUNDS_REFUSED = "compare checks and times in interleaved blocks, whose verdicts the code under test cannot fake"
UNREFEREED = "each kernel checked and timed in its own process (no referee: code under test could fake a verdict)"


def _plan_timing(jobs: list[KernelJob], base_index: int, blocked: bool, settings: dict[str, Any]) -> int:
    """Tell every job how it is timed and split its budget over rounds; the settings the report shows."""
    rounds = 1 if blocked else jobs[base_index].performance.rounds
    where = "" if settings["environment"] == "local" else f", in one '{settings['environment']}' task"
    for job in jobs:
        job.timing_elsewhere = blocked
        job.performance = _split_budget(job.performance, rounds)
    settings |= {
        "correctness": jobs[base_index].correctness,
        "performance": jobs[base_index].performance,  # the live settings: what the run fills in later shows
        "timing": f"{rounds} rotating round(s); {UNREFEREED}" if not blocked else "interleaved blocks" + where,
    }
    return rounds


def _write_interrupted(
    results: list[KernelResult],
    base_index: int,
    min_effect: float,
    ws: Workspace,
    stable: dict[str, Any] | None,
    settings: dict[str, Any],
) -> None:
    """The compare report of a run stopped by a signal: the candidates that finished, ranked only as far as
    their timing went; no winner unless the interleaved blocks had reached their minimum count."""
    for r in results:
        if r.performance.status == StageStatus.SKIPPED and r.performance.timing is None:
            r.performance = PerformanceResult(status=StageStatus.NOT_RUN, message="interrupted before timing")
    report = rank(results, base_index, min_effect=min_effect, workspace=str(ws.path), stability=stable)
    report.settings = settings
    interrupted_verdicts(report, stable).write(ws.report_path)


def _use_blocks(timing: str, kernels: list[KernelConfig], jobs: list[KernelJob]) -> bool:
    possible = _sessions_supported(kernels, jobs)  # in any environment: one task of it runs them all
    if timing == "rounds" and possible:  # whole rounds check a candidate in its own process: it could fake them
        raise ValueError(f"--timing rounds: {ROUNDS_REFUSED}; leave --timing at auto")
    if timing == "blocks" and not possible:
        raise ValueError(
            "timing in interleaved blocks needs kernel backends with timing sessions "
            "(harness kernels: entry/reference); use --timing rounds"
        )
    return possible


def _check_compare_file(file: KernelConfigFile) -> None:
    kernels = file.all_kernels()
    if len(kernels) < 2:
        raise ValueError("compare needs at least two kernels")
    for k in kernels:
        if k.correctness is not None or k.performance is not None:
            raise ValueError(
                f"kernel {k.id!r}: compare runs every variant under the same correctness and performance "
                "settings; move its 'correctness'/'performance' block to the top level of the file"
            )


def _sessions_supported(kernels: list[KernelConfig], jobs: list[KernelJob]) -> bool:
    """Every kernel runs in a harness whose backend keeps it ready for timing, and is timed by the clock."""
    manager = get_plugin_manager()
    for kernel, job in zip(kernels, jobs, strict=True):
        backend = manager.get("kernel_backend", kernel.type)
        if not kernel.uses_harness or type(backend).open_timing is KernelBackend.open_timing:
            return False
        if job.performance.backend == "none":
            return False
    return True


def _preload_for(jobs: list[KernelJob]) -> set[str]:
    """What the compare's kernels ask their backends to preload into the fork server."""
    manager = get_plugin_manager()
    modules: set[str] = set()
    for job in jobs:
        kernel = KernelConfig.model_validate(job.kernel)
        modules.update(manager.get("kernel_backend", kernel.type).worker_preload_for(kernel))
    return modules


def _correctness_first(
    jobs: list[KernelJob],
    base_index: int,
    workspace: Path,
    environment: str,
    workers: int,
    progress: Progress | None,
    options: dict[str, Any],
    results: list[KernelResult | None],
) -> list[KernelResult]:
    """The baseline (saving its outputs), then every other candidate checked against them; ``results`` is
    filled in as candidates finish."""
    expected = workspace / "baseline_outputs"  # written by the baseline's backend, in its own format
    jobs[base_index].save_outputs = str(expected)
    if progress:
        progress(f"baseline {jobs[base_index].kernel.get('id')}")
    results[base_index] = run_jobs([jobs[base_index]], environment, 1, None, options)[0]
    others = [i for i in range(len(jobs)) if i != base_index]
    for i in others:
        jobs[i].baseline_outputs = str(expected)

    def record(position: int, result: KernelResult) -> None:
        results[others[position]] = result

    run_jobs([jobs[i] for i in others], environment, workers, progress, options, on_done=record)
    return [r for r in results if r is not None]


def _split_budget(performance: PerformanceConfig, rounds: int) -> PerformanceConfig:
    """One round's share of the timing budget and sample counts."""
    return performance.model_copy(
        update={
            "budget_seconds": performance.budget_seconds / rounds,
            "min_samples": max(3, -(-performance.min_samples // rounds)),
            "max_samples": max(3, performance.max_samples // rounds),
        }
    )


# --- timing in interleaved blocks --------------------------------------------------------------------


def _check_and_time_in_blocks(
    jobs: list[KernelJob],
    base_index: int,
    workspace: Path,
    min_effect: float,
    progress: Progress | None,
    done: list[KernelResult | None],
) -> tuple[list[KernelResult], dict[str, Any] | None]:
    """Check every candidate in the worker processes that then time it, in interleaved blocks: the results and the
    run's stability (``done`` is filled in as candidates are checked)."""
    jobs[base_index].save_outputs = saved = str(workspace / "baseline_outputs")  # the referee's input sets
    for job in (job for i, job in enumerate(jobs) if i != base_index):
        job.baseline_outputs = saved
    instances = Instances()
    _share_copy_memory(jobs, base_index)
    warm_fork_server(_preload_for(jobs))

    def checked(index: int, result: KernelResult) -> None:
        done[index] = result
        if progress:
            progress(f"{result.kernel_id}: {one_line(result)}")

    try:
        if progress:
            progress(f"checking {len(jobs)} kernel(s), each in the worker process that will time it")
        results = check_first_processes(jobs, base_index, instances, checked)
        timed = _timed_candidates(results, instances, jobs[base_index].measure_performance)
        if not timed:
            return results, None
        anchor = base_index if base_index in timed else timed[0]
        count = processes_per_instance(jobs[base_index].performance, len(timed) + (anchor == base_index))
        if progress:
            copy = f" and {count} for an identical copy of the baseline" if anchor == base_index else ""
            progress(f"starting {count - 1} more worker process(es) per timed kernel{copy}")
        copy_failed = _mark_failed(results, check_more_processes(jobs, results, timed, base_index, instances))
        copy_failed = _mark_failed(results, prepare_all(instances, jobs, base_index), timing=True) or copy_failed
        if not any(k[0] == anchor for k in instances.workers):
            return results, None
        perf = jobs[base_index].performance
        plan = BlockPlan(
            budget_s=perf.budget_seconds * max(1, len({k[0] for k in instances.workers})),
            min_effect=min_effect,
            target_rse=perf.target_rse,
            timeout_s=perf.timeout_seconds,
        )
        if progress:
            progress(f"{len(instances.workers)} worker process(es) ready; running blocks for up to {plan.budget_s:g} s")
        outcome = time_in_blocks(dict(instances.workers), anchor, plan, instances.referee)
        per_call = _per_call(instances, outcome, perf) if perf.call_trials else {}
        infos = instances.close_all()
    finally:
        instances.stop_all()
    interleaved.reject_below_floor(outcome, infos.get((base_index, 0), {}).get("write_floor_us"))  # graph replay too
    _mark_failed(results, outcome.failed, timing=True)
    _fill_performance(results, outcome, infos, per_call)
    stable = _stability_of(outcome, min_effect)
    if stable is not None and copy_failed:
        stable["copy_failed"] = copy_failed
    return results, stable


@dataclass
class BlocksElsewhere:
    """A compare's checks and blocks as one item of another environment (a cluster task, a container); ``workdir`` and
    ``config_dir`` are the folders an environment mounts or checks for an item."""

    jobs: list[KernelJob]
    base_index: int
    min_effect: float
    workdir: str
    config_dir: str


def check_and_time_there(item: BlocksElsewhere) -> tuple[list[KernelResult], dict[str, Any] | None]:
    """Run by the environment: the referee's side of the blocks there, as on this machine."""
    done: list[KernelResult | None] = [None] * len(item.jobs)
    return _check_and_time_in_blocks(item.jobs, item.base_index, Path(item.workdir), item.min_effect, None, done)


def _check_and_time_elsewhere(
    item: BlocksElsewhere, environment: str, options: dict[str, Any], progress: Progress | None
) -> tuple[list[KernelResult], dict[str, Any] | None]:
    """The blocks in one task of ``environment``: the candidates' verdicts rest on no process of theirs there either
    (whole rounds would check and time each one in its own). A task that could not run fails every kernel."""
    if progress:
        progress(f"checking and timing {len(item.jobs)} kernel(s) in interleaved blocks, in one '{environment}' task")
    env = get_plugin_manager().get("environment", environment).with_options(options)
    outcome = env.map(check_and_time_there, [item], gpus_per_item=gpus_per_job(item.jobs))[0]
    if isinstance(outcome, tuple):
        return outcome
    return [failed_job(job, outcome) for job in item.jobs], None


def _share_copy_memory(jobs: list[KernelJob], base_index: int) -> None:
    """Cap every process's rotating input copies, the same for all, at half the free memory over the most processes
    the compare may start: 2x a 480 MiB shared L3 is ~1 GiB per process (9 candidates, 22 processes: 21 GB)."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    processes = (len(jobs) + 1) * processes_per_instance(jobs[base_index].performance, len(jobs) + 1)
    share = max(1, free // 2 // processes >> 20)
    for job in jobs:
        job.performance.copy_memory_mib = job.performance.copy_memory_mib or share


def _timed_candidates(results: list[KernelResult], instances: Instances, measure: bool) -> list[int]:
    """Candidates that passed in a live worker (none without ``measure``: ``--no-perf``, checked by the referee all
    the same); those whose timings mean nothing here are not timed."""
    timed = []
    for i, r in enumerate(results):
        if not measure and r.performance.status == StageStatus.SKIPPED:
            r.performance = PerformanceResult(status=StageStatus.SKIPPED, message="performance not requested")
        if not (measure and r.passed and (i, 0) in instances.workers):
            continue
        if instances.meaningful(i):
            timed.append(i)
            continue
        notes = instances.workers[(i, 0)].info.get("notes", [])
        r.performance = PerformanceResult(
            status=StageStatus.SKIPPED,
            message=f"not timed: {next((n for n in notes if not n.startswith('timer: ')), 'not meaningful here')}",
            timing_meaningful=False,
        )
        instances.drop(i)
    return timed


def _mark_failed(results: list[KernelResult], failures: dict[int, str], timing: bool = False) -> str | None:
    """A process of a candidate that failed its check (or, ``timing``, its timing) fails the candidate; returns
    what happened to the baseline's identical copy, if anything."""
    for i, why in failures.items():
        if i == BASELINE_COPY:
            continue
        result = results[i]
        if timing or "REJECTED (integrity" in why:
            _timing_failed(result, why)
            continue
        message = f"{why} (its first process passed: its results depend on the process or its memory layout)"
        method = result.correctness.method
        result.correctness = CorrectnessResult(status=StageStatus.FAILED, method=method, message=message)
        result.performance = PerformanceResult(status=StageStatus.SKIPPED, message="not timed: correctness failed")
        result.errors.append(message.splitlines()[0])
    return failures.get(BASELINE_COPY)


def _stability_of(outcome: BlockedTiming, min_effect: float) -> dict[str, Any] | None:
    if outcome.interrupted:
        if outcome.block_count > 1:
            return {**stability(outcome, min_effect), "interrupted": True}
        return {"blocks": outcome.block_count, "interrupted": True, "message": "interrupted before two blocks"}
    return stability(outcome, min_effect) if outcome.block_count else None


def _timing_failed(result: KernelResult, why: str) -> None:
    if "REJECTED (integrity" in why:  # caught faking while prepared or timed: never a speedup
        result.correctness = rejected(why[why.index("REJECTED (integrity") :])
    result.performance = PerformanceResult(status=StageStatus.ERROR, message=f"timing worker failed: {why}")
    result.errors.append(f"timing worker failed: {why.splitlines()[0] if why else ''}")


def _per_call(instances: Instances, outcome: BlockedTiming, perf: PerformanceConfig) -> dict[int, float]:
    """Each timed kernel's mean single synchronized call (``call_trials``), one kernel at a time, after the blocks."""
    found: dict[int, float] = {}
    ask, timeout_s = {"call_times": perf.call_trials}, perf.timeout_seconds
    timed = [i for i in outcome.indices() if i != BASELINE_COPY and (i, 0) in instances.workers]
    for i in [i for i in timed if i not in outcome.failed]:
        try:
            found[i] = float(np.mean(instances.workers[(i, 0)].ask(ask, timeout_s, "call_us")))
        except TimingWorkerError as exc:  # caught faking now, or crashed: as in the blocks
            outcome.failed[i] = str(exc)
    return found


def _fill_performance(
    results: list[KernelResult],
    outcome: BlockedTiming,
    infos: dict[tuple[int, int], dict[str, Any]],
    per_call: dict[int, float],
) -> None:
    if not outcome.block_count:
        return
    spread = outcome.spread()
    for i in outcome.indices():
        if i == BASELINE_COPY or i in outcome.failed:
            continue
        keys = outcome.processes(i)
        info = infos.get(keys[0], {})
        samples = [x for k in keys for x in outcome.samples[k]]
        earlier = results[i].performance  # profiler counters from the check, if a profiler was asked for
        seeds = ", ".join(str((infos.get(k, {}).get("layout") or {}).get("seed")) for k in keys)
        blocks = outcome.blocks_of(i)
        early = " (then left them: clearly faster or slower)" if i in outcome.decided else ""
        results[i].performance = PerformanceResult(
            status=StageStatus.PASSED,
            timer=next((n.split(": ", 1)[1] for n in info.get("notes", []) if n.startswith("timer: ")), None),
            timing=summarize(samples, f"{blocks} interleaved blocks x {len(keys)} processes"),
            samples_us=samples,
            block_medians_us=outcome.instance_blocks(i),
            process_levels=outcome.levels(i),
            process_blocks_us=outcome.process_blocks(i),
            counters=earlier.counters,
            notes=[
                *(n for n in info.get("notes", []) if not n.startswith("timer: ")),
                *earlier.notes,
                f"timed in {blocks} interleaved blocks with every candidate{early}, in {len(keys)} worker "
                f"processes with random memory layouts (pad seeds {seeds}); "
                f"the spread between processes ({spread.pct:.1f} % pooled) is in the speedup's interval",
            ],
            timing_meaningful=bool(info.get("timing_meaningful", True)),
            batch_size=info.get("batch_size"),
            per_call_us=per_call.get(i),
        )


# --- timing in whole rounds (environments other than this machine) ------------------------------


def _more_timing_rounds(
    jobs: list[KernelJob],
    results: list[KernelResult],
    rounds: int,
    environment: str,
    workers: int,
    progress: Progress | None,
    options: dict[str, Any] | None = None,
) -> None:
    """Rounds 2..n: time every correct candidate again, in rotating order, and pool the samples.

    Sampling all candidates in turn (A B C, B C A, C A B) spreads slow drift (clocks, thermals, other processes)
    over all of them instead of letting it land on whichever kernel happened to run during a bad minute."""
    timed = [i for i, r in enumerate(results) if rankable(r)]
    if len(timed) < 2:
        return
    samples = {i: list(results[i].performance.samples_us or []) for i in timed}
    rounds_medians = {i: [float(np.median(samples[i]))] for i in timed}  # each round is a block of the pairing
    reasons = {i: [results[i].performance.timing.stop_reason] for i in timed}  # type: ignore[union-attr]
    for round_no in range(2, rounds + 1):
        shift = (round_no - 1) % len(timed)
        order = timed[shift:] + timed[:shift]
        round_jobs = [
            jobs[i].model_copy(
                update={
                    "timing_only": True,
                    "build_artifacts": results[i].compile.artifacts,
                    "workdir": str(Path(jobs[i].workdir) / f"round{round_no}"),
                    "save_outputs": None,
                }
            )
            for i in order
        ]
        if progress:
            progress(f"timing round {round_no}/{rounds}")
        for i, result in zip(order, run_jobs(round_jobs, environment, workers, None, options), strict=True):
            timing = result.performance.timing
            if result.performance.status == StageStatus.PASSED and timing is not None:
                samples[i].extend(result.performance.samples_us or [])
                rounds_medians[i].append(timing.median)
                reasons[i].append(timing.stop_reason)
            else:
                results[i].performance.notes.append(
                    f"timing round {round_no} failed: {result.performance.message or result.correctness.message}"
                )
    complete = {i for i in timed if len(rounds_medians[i]) == rounds}
    for i in timed:
        perf = results[i].performance
        perf.samples_us = samples[i]
        perf.block_medians_us = rounds_medians[i] if i in complete else None
        perf.timing = summarize(samples[i], f"{rounds} interleaved rounds ({', '.join(map(str, reasons[i]))})")
        perf.notes.append(f"timing pooled over {rounds} rounds run in rotating order over all candidates")
