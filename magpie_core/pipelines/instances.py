"""The timed instances of a compare: each candidate in several long-lived worker processes, checked where timed.

One process start per instance: the worker that proves a kernel correct times it (:class:`SessionHarness`). Every
candidate's first process goes through the usual build and checks (:func:`~.jobs.evaluate_kernel`); once the
baseline's first process has saved its input sets and expected outputs, every other process (its further ones and its
copy :data:`~.blocked.BASELINE_COPY` included) is checked on that file and loads its timing inputs from it, so no
instance is built differently. Builds run side by side; on a small machine workers load and check one at a time.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_core.config.kernel import KernelConfig, PerformanceConfig
from magpie_core.measurement.worker_client import IntegrityError, TimingWorker, TimingWorkerError
from magpie_core.pipelines.blocked import BASELINE_COPY, Key
from magpie_core.pipelines.jobs import (
    BUILD_DIR_VAR,
    KernelJob,
    command_env,
    evaluate_kernel,
    evaluation_task,
    failed_job,
    kernel_timeout,
)
from magpie_core.pipelines.kernel_reports import KernelResult
from magpie_core.reports import CorrectnessResult, EvaluationOutcome, EvaluationTask, PerformanceResult, StageStatus
from magpie_core.runtime.threads import map_in_threads

#: a worker that loads or checks for longer stops holding up the rest (a hanging check would, for its whole timeout)
TURN_PATIENCE_S = 20.0
#: worker processes per instance when the config does not say: two is the fewest that measure a spread
DEFAULT_PROCESSES = 2


def processes_per_instance(performance: PerformanceConfig, instances: int) -> int:
    """As configured; else 3 while instances x 3 <= CPUs, else 2 (docs/kernel-evaluation.md: GPU start costs)."""
    if performance.processes:
        return performance.processes
    return DEFAULT_PROCESSES + (1 if instances * (DEFAULT_PROCESSES + 1) <= (os.cpu_count() or 1) else 0)


def parallel_starts(count: int) -> int:
    """How many worker processes start at once: every CPU busy, none waiting (imports are CPU-bound)."""
    return max(1, min(count, os.cpu_count() or 1))


@dataclass
class Instances:
    """The live workers of a compare, by process key, and the candidates that cannot be timed, with why."""

    workers: dict[Key, TimingWorker] = field(default_factory=dict)
    #: the baseline's first worker: the trusted side that holds the expected outputs and judges every other's
    referee: TimingWorker | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    starting: threading.Lock = field(default_factory=threading.Lock)
    turn_began: float = 0.0  # when the worker loading or checking alone now began

    @contextmanager
    def one_at_a_time(self) -> Iterator[None]:
        """A worker loads or checks alone on <= 4 CPUs (a guess): side by side 11-15 % of the 2-core VM's processes
        stayed 4-11 % slow for life, one at a time 4 % (on the 16-CPU H200 host it cost 0.25 s a process, not needed);
        a turn :data:`TURN_PATIENCE_S` old (a hanging check) no longer holds anyone up."""
        wait = self.turn_began + TURN_PATIENCE_S - time.monotonic() if self.starting.locked() else TURN_PATIENCE_S
        if held := (os.cpu_count() or 1) <= 4 and self.starting.acquire(timeout=max(0.0, wait)):
            self.turn_began = time.monotonic()
        try:
            yield
        finally:
            if held:
                self.starting.release()

    def add(self, key: Key, worker: TimingWorker) -> None:
        with self.lock:
            self.workers[key] = worker

    def drop(self, index: int) -> None:
        """Stop every process of candidate ``index``."""
        with self.lock:
            keys = [k for k in self.workers if k[0] == index]
            dropped = [self.workers.pop(k) for k in keys]
        for worker in dropped:
            worker.stop()

    def close_all(self) -> dict[Key, dict[str, Any]]:
        """Ask every worker for its final info and let it end, side by side (each exit can take a while)."""
        with self.lock:
            workers, self.workers = dict(self.workers), {}
        infos = map_in_threads(lambda key: workers[key].close(), keys := list(workers), workers=len(keys))
        return {key: info for key, info in zip(keys, infos, strict=True) if isinstance(info, dict)}

    def stop_all(self) -> None:
        with self.lock:
            workers, self.workers = list(self.workers.values()), {}
        for worker in workers:
            worker.stop()

    def meaningful(self, index: int) -> bool:
        worker = self.workers.get((index, 0))
        return worker is not None and bool(worker.info.get("timing_meaningful", True))


class SessionHarness:
    """A :data:`~magpie_core.pipelines.jobs.HarnessRun` in a long-lived session worker: started (after ``wait``),
    checked, kept; a worker that fails to start or crashes while checking fails its kernel alone."""

    def __init__(self, key: Key, instances: Instances, wait: threading.Event | None = None) -> None:
        self.key, self.instances, self.wait = key, instances, wait

    def __call__(
        self, task: EvaluationTask, cwd: Path, workdir: Path, env: dict[str, str], timeout: float
    ) -> EvaluationOutcome:
        try:
            # a forked worker cannot honour variables read when a process starts: only magpie's own may be set
            fork = set(env) <= {BUILD_DIR_VAR}
            with self.instances.one_at_a_time():
                worker = TimingWorker(task, cwd=cwd, workdir=workdir, env=env, start_timeout_s=timeout, fork=fork)
            self.instances.add(self.key, worker)
            if task.save_outputs:
                self.instances.referee = worker
            if self.wait is not None:  # checked once the baseline saved its input sets
                self.wait.wait()
            timeout_s = float(task.settings.get("correctness", {}).get("timeout_seconds", 300))
            with self.instances.one_at_a_time():
                outcome = worker.check(timeout_s)
                if handover := outcome.correctness.handover:  # judged by the referee, not in the candidate's process
                    assert self.instances.referee is not None  # it wrote the input sets the candidate ran
                    outcome.correctness = self.instances.referee.verify({"file": handover}, timeout_s)
        except TimingWorkerError as exc:
            return _crashed(str(exc), caught=isinstance(exc, IntegrityError))
        if outcome.correctness.status != StageStatus.PASSED:
            self.instances.drop(self.key[0])
        return outcome


def rejected(why: str) -> CorrectnessResult:
    """A candidate caught faking its speed or correctness (docs/kernel-evaluation.md, threat model)."""
    text = why if why.startswith("REJECTED (integrity") else f"REJECTED (integrity: {why})"
    return CorrectnessResult(status=StageStatus.FAILED, method="integrity", message=text)


def _crashed(why: str, caught: bool = False) -> EvaluationOutcome:
    """A worker that failed; ``caught``: caught faking (REJECTED)."""
    failed = CorrectnessResult(status=StageStatus.ERROR, message=f"worker failed: {why}")
    return EvaluationOutcome(
        correctness=rejected(why) if caught else failed,
        performance=PerformanceResult(status=StageStatus.SKIPPED, message="worker did not finish"),
    )


def check_first_processes(
    jobs: list[KernelJob], base_index: int, instances: Instances, on_done: Callable[[int, KernelResult], None]
) -> list[KernelResult]:
    """Every candidate's first process: built, started side by side, checked (the baseline first, saving
    the input sets every other process is checked and timed on)."""
    baseline_saved = threading.Event()

    def first(index: int) -> KernelResult:
        wait = None if index == base_index else baseline_saved
        try:
            return evaluate_kernel(jobs[index], harness=SessionHarness((index, 0), instances, wait))
        except Exception as exc:  # magpie's own failure on one candidate: it fails alone, the compare goes on
            instances.drop(index)
            return failed_job(jobs[index], exc)
        finally:
            if index == base_index:
                baseline_saved.set()

    order = [base_index, *(i for i in range(len(jobs)) if i != base_index)]
    results = map_in_threads(
        first, order, workers=parallel_starts(len(order)), on_result=lambda n, r: on_done(order[n], r)
    )
    by_index = dict(zip(order, results, strict=True))
    return [by_index[i] for i in range(len(jobs))]


def check_more_processes(
    jobs: list[KernelJob], results: list[KernelResult], timed: list[int], base_index: int, instances: Instances
) -> dict[int, str]:
    """The further processes of every timed candidate and the baseline's identical copy (:data:`BASELINE_COPY`), each
    checked on the baseline's input sets; what went wrong, per candidate index (a failed check or a crash
    fails that candidate alone)."""
    count = processes_per_instance(jobs[base_index].performance, len(timed) + (base_index in timed))
    keys = [(i, p) for i in timed for p in range(1, count)]
    if base_index in timed:
        keys += [(BASELINE_COPY, p) for p in range(count)]
    saved = {"save_outputs": None, "baseline_outputs": jobs[base_index].save_outputs}

    def start(key: Key) -> EvaluationOutcome:
        index, process = key
        job = jobs[base_index if index == BASELINE_COPY else index].model_copy(update=saved)
        kernel = KernelConfig.model_validate(job.kernel)
        base = Path(job.workdir) / "copy" if index == BASELINE_COPY else Path(job.workdir)
        workdir = base / f"process{process}"
        artifacts = results[base_index if index == BASELINE_COPY else index].compile.artifacts
        task = evaluation_task(job, kernel.type, artifacts, workdir, timed=True)
        env = {**command_env(kernel, workdir), **job.extra_env}
        return SessionHarness(key, instances)(
            task, kernel.resolved_working_dir(Path(job.config_dir)), workdir, env, kernel_timeout(job)
        )

    outcomes = map_in_threads(start, keys, workers=parallel_starts(len(keys)))
    failures: dict[int, str] = {}
    for (index, process), outcome in zip(keys, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            failures.setdefault(index, f"process {process + 1}: {type(outcome).__name__}: {outcome}")
            instances.drop(index)
        elif outcome.correctness.status != StageStatus.PASSED:
            failures.setdefault(index, f"process {process + 1}: {outcome.correctness.message}")
    return failures


def prepare_all(instances: Instances, jobs: list[KernelJob], base_index: int) -> dict[int, str]:
    """Warm every process up, one at a time (side by side, warm-ups slow each other down), in
    :func:`counterbalanced` order; failures per index."""
    failures: dict[int, str] = {}
    for key in counterbalanced(list(instances.workers)):
        if (worker := instances.workers.get(key)) is None:
            continue
        job = jobs[base_index if key[0] == BASELINE_COPY else key[0]]
        try:
            worker.prepare(job.performance.timeout_seconds)
        except TimingWorkerError as exc:
            failures[key[0]] = f"process {key[1] + 1}: {exc}"
            instances.drop(key[0])
    return failures


def counterbalanced(keys: list[Key]) -> list[Key]:
    """In rounds, one process of every kernel each; the kernels in a random order, reversed for the next round with
    its first two swapped. So every kernel's mean position is within one place of the others' and no kernel's two
    processes come back to back: on the 2-core VM a process warmed up earlier ran slower (first +1.6 %, last -0.5 %,
    30 runs; 10-30 % at times, cause unknown), and two processes warmed up back to back landed closer together."""
    kernels, present = random.sample(sorted(ids := {k[0] for k in keys}), len(ids)), set(keys)
    order: list[Key] = []
    for process in sorted({k[1] for k in keys}):
        order += [(i, process) for i in kernels if (i, process) in present]
        kernels = kernels[::-1]
        kernels[:2] = kernels[1::-1]
    return order
