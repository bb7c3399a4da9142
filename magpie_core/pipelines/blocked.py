"""Timing a compare in short interleaved blocks, so a busy machine widens the answer instead of biasing it.

Every correct candidate — the baseline and an identical copy of it included — is kept ready in several long-lived worker
processes (:mod:`~magpie_core.measurement.worker_client`), each with its own random memory layout. A *block* gives every
process one short *slot* (a few batches, ~``slot_ms``) in a fresh random order, until every kernel's budget is spent or
every process's level is known precisely enough; a clearly faster or slower candidate leaves them early.

Each process's time in a block is taken relative to the baseline's in the same block: a load change between blocks
moves both and cancels. A process's *level* is the median of those relative times; a kernel's estimate is the mean of
its processes' levels, and the spread between processes (layout, allocator history, placement) goes into the interval
(:func:`~magpie_core.measurement.stats.hierarchical_speedup`), which also checks each process pair for stalls of one
process alone. The copy of the baseline, timed like any candidate, is reported as a check of the whole method.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import signal
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from magpie_core.measurement.stats import (
    MAX_DESYNC_SHARE,
    ProcessSpread,
    Speedup,
    Verdict,
    hierarchical_speedup,
    pooled_process_spread,
    process_levels,
)
from magpie_core.measurement.worker_client import IntegrityError, TimingWorker, TimingWorkerError, cpu_seconds

#: the candidate index of the baseline's identical copy, timed in its own processes like any candidate
BASELINE_COPY = -1
#: a timed process: (candidate index or :data:`BASELINE_COPY`, process number)
Key = tuple[int, int]
SLOT_MS = 15.0
MIN_BLOCKS = 20
MAX_BLOCKS = 5000
PRECISION_CHECK_EVERY = 5
#: the spread between processes ends the blocks early only when estimated with this many degrees of freedom
MIN_SPREAD_DF = 3
#: the baseline's slowest fifth of blocks (from its 80th percentile, the share of blocks the desynchronised
#: rule tolerates) this far above its fastest (5th percentile), in %: more than load shared fairly between a
#: few processes does (a few x), as much as launches waiting whole scheduler time slices do (~9x a step): the
#: time-slice regime, where a process keeps its stalled state across blocks, so no verdict holds
MAX_DRIFT_PCT = 400.0
#: other processes using this much CPU (in CPUs) while the blocks ran are worth naming
BUSY_CPUS = 0.25
#: how often the processes the workers started are looked for (:class:`Started`: a scan of /proc, a few ms)
STARTED_SCAN_S = 1.0
#: a candidate this far from the baseline at this confidence leaves the blocks, looked at from this block (the
#: interval knows how few blocks it has): more blocks could not change its verdict; no identical copy gets there
CLEAR_EFFECT, CLEAR_CONFIDENCE, CLEAR_FIRST_LOOK = 0.10, 0.99, 10
#: spot checks (:func:`_spot_due`); the CPU a worker may use in a block outside its own turns (~1 ms honestly)
SPOT_SHARE, SPOT_RATE, SPOT_FIRST, SPOT_LAUNCHES, IDLE_CPU_S, IDLE_CPU_SHARE = 0.05, 0.1, 2, 8, 0.02, 0.05
#: a process whose median launch takes under the referee's write floor over this did not write its outputs
FLOOR_MARGIN = 4.0


@dataclass
class BlockPlan:
    budget_s: float
    min_effect: float
    target_rse: float = 0.01
    slot_ms: float = SLOT_MS
    min_blocks: int = MIN_BLOCKS
    max_blocks: int = MAX_BLOCKS
    timeout_s: float = 300.0
    seed: int = 0


@dataclass
class BlockedTiming:
    """What the blocks measured: per-block medians and every sample, per timed process."""

    baseline: int
    blocks: dict[Key, list[float]] = field(default_factory=dict)
    samples: dict[Key, list[float]] = field(default_factory=dict)
    spreads: list[float] = field(default_factory=list)  # the baseline's within-slot spread, per slot
    failed: dict[int, str] = field(default_factory=dict)  # candidate index -> why its timing failed
    elapsed_s: float = 0.0
    load_before: float | None = None
    load_after: float | None = None
    #: CPU seconds per process name used by processes magpie did not start, while the blocks ran
    others_cpu_s: dict[str, float] | None = None
    #: stopped by Ctrl-C: the blocks completed before it are kept, the block in progress is not
    interrupted: bool = False
    #: candidates that left the blocks early, clearly faster or slower (:func:`_clear`) -> the blocks they ran
    decided: dict[int, int] = field(default_factory=dict)
    spot_checks: Counter[Key] = field(default_factory=Counter)  # timed launches judged by the referee, per process
    spot_s: float = 0.0  # the wall time they took
    idle_cpu_s: Counter[Key] = field(default_factory=Counter)  # CPU each process used outside its own turns
    referee: TimingWorker | None = None  # the baseline's first worker, which judges the spot checks
    started: Started = field(default_factory=lambda: Started())  # what the workers started, stopped outside their turns

    @property
    def block_count(self) -> int:
        return min((len(v) for k, v in self.blocks.items() if k[0] == self.baseline), default=0)

    def blocks_of(self, index: int) -> int:  # all, or those before it was decided
        return min(self.decided.get(index, self.block_count), self.block_count)

    def processes(self, index: int) -> list[Key]:
        return sorted(k for k in self.blocks if k[0] == index)

    def process_blocks(self, index: int, count: int | None = None) -> list[list[float]]:
        """Each process's time per block: its first ``count``, or those before it was decided."""
        n = self.blocks_of(index) if count is None else count
        return [self.blocks[k][:n] for k in self.processes(index)]

    def instance_blocks(self, index: int, count: int | None = None) -> list[float]:
        """A candidate's time per block (its first ``count``): the geometric mean over its processes."""
        logs = [np.log(blocks) for blocks in self.process_blocks(index, count)]
        return list(np.exp(np.mean(logs, axis=0))) if logs else []

    def baseline_blocks(self, count: int | None = None) -> list[float]:
        return self.instance_blocks(self.baseline, count)

    def levels(self, index: int) -> list[float]:
        """Each process's level relative to the baseline's blocks (:func:`~.stats.process_levels`)."""
        return process_levels(self.process_blocks(index), np.log(self.baseline_blocks(self.blocks_of(index))))

    def indices(self) -> list[int]:
        return sorted({k[0] for k in self.blocks})

    def spread(self) -> ProcessSpread:
        indices = self.indices()
        copy = indices.index(BASELINE_COPY) if BASELINE_COPY in indices else None
        return pooled_process_spread([self.levels(i) for i in indices], copy)

    def speedup(self, index: int, min_effect: float, noise_floor: float = 0.0, confidence: float = 0.95) -> Speedup:
        """Candidate ``index`` against the baseline, over processes and blocks, as the ranking does it
        (:func:`magpie_core.pipelines.verdicts.versus`: block pairs over the blocks both ran)."""
        n = self.blocks_of(index)
        return hierarchical_speedup(
            self.levels(self.baseline),
            self.levels(index),
            self.spread(),
            min_effect=min_effect,
            noise_floor=noise_floor,
            confidence=confidence,
            blocks=(self.process_blocks(self.baseline, n), self.process_blocks(index)),
        )


def time_in_blocks(
    workers: dict[Key, TimingWorker], baseline: int, plan: BlockPlan, referee: Any = None
) -> BlockedTiming:
    """Run blocks over ``workers`` (one per timed process) until budget or precision; the ``referee`` spot-checks."""
    result = BlockedTiming(baseline=baseline, load_before=_load(), referee=referee)
    live = dict(workers)
    counts = _samples_per_slot(live, plan, result)
    result.blocks = {key: [] for key in live}
    result.samples = {key: [] for key in live}
    rng = random.Random(plan.seed)
    cpu_before = _cpu_by_process()
    start = time.monotonic()
    # the budget is per kernel: spent at the rate of the processes still in the blocks (one that left keeps its share)
    processes, spent = len(live), 0.0
    try:
        while any(k[0] == baseline for k in live) and result.block_count < plan.max_blocks:
            result.started.find(live)
            began, cpu = time.monotonic(), {key: (cpu_seconds(w.proc.pid), w.turn_cpu_s) for key, w in live.items()}
            block = _one_block(live, counts, plan, rng, result)
            if not _idle_workers(live, cpu, time.monotonic() - began, result):  # else the others' block is spoilt
                for key, value in block.items():
                    result.blocks[key].append(value)
            spent += (time.monotonic() - began) * processes / max(1, len(live))
            result.elapsed_s = time.monotonic() - start
            look = result.block_count % PRECISION_CHECK_EVERY == 0
            enough = result.block_count >= plan.min_blocks
            if enough and (spent >= plan.budget_s or (look and _precise_enough(result, plan))):
                break
            if look and result.block_count >= CLEAR_FIRST_LOOK and _release(live, result, plan):
                break
    except KeyboardInterrupt:
        result.interrupted = True  # the block in progress is cut to the complete ones' length (samples stay)
        n = min((len(v) for k, v in result.blocks.items() if k[0] not in result.decided), default=0)
        result.blocks = {key: blocks[:n] for key, blocks in result.blocks.items()}
    finally:
        result.started.release()
    result.others_cpu_s = _others_cpu(cpu_before, _cpu_by_process(), {w.proc.pid for w in workers.values()})
    result.load_after = _load()
    return result


def _samples_per_slot(live: dict[Key, TimingWorker], plan: BlockPlan, result: BlockedTiming) -> dict[Key, int]:
    """How many samples fill one slot of ``slot_ms``, from a short probe of each worker."""
    counts: dict[Key, int] = {}
    for key, worker in list(live.items()):
        if key not in live:  # dropped with another process of its candidate
            continue
        try:
            start = time.perf_counter()
            probe = worker.sample(2, plan.timeout_s)
            wall_us = (time.perf_counter() - start) * 1e6 / 2
        except TimingWorkerError as exc:
            _drop(live, key[0], str(exc), result)
            continue
        # a sample costs its wall time, not its device time: a guard kernel, the host enqueueing a batch of
        # launches and the answer's round trip can make it several times longer
        per_sample_us = max(float(np.median(probe)) * int(worker.info.get("batch_size") or 1), wall_us, 1.0)
        counts[key] = int(min(200, max(2, round(plan.slot_ms * 1000 / per_sample_us))))
    return counts


def _one_block(
    live: dict[Key, TimingWorker], counts: dict[Key, int], plan: BlockPlan, rng: random.Random, result: BlockedTiming
) -> dict[Key, float]:
    """One slot per live process in random order, the processes it started running only then; the block's median
    per process (a failed candidate is dropped with all its processes)."""
    order = list(live)
    rng.shuffle(order)
    block: dict[Key, float] = {}
    for key in order:
        if key not in live:  # its candidate failed earlier in this block
            continue
        slot = secrets.randbits(62)  # where its input copies start (their values are drawn batch by batch there)
        try:
            with result.started.running(live[key]):
                got = live[key].sample(counts[key], plan.timeout_s, slot)
            if result.referee is not None and _spot_due(key, result):
                with result.started.running(result.referee):
                    _spot_check(live[key], key, plan, result)
        except TimingWorkerError as exc:  # a crash, or caught faking (an IntegrityError: REJECTED)
            _drop(live, key[0], str(exc), result)
            continue
        block[key] = float(np.median(got))
        result.samples[key].extend(got)
        if key[0] == result.baseline:
            result.spreads.append(_spread(got))
    return {key: value for key, value in block.items() if key in live}


def _idle_workers(
    live: dict[Key, TimingWorker], before: dict[Key, tuple[float, float]], wall_s: float, result: BlockedTiming
) -> list[Key]:
    """Workers that used CPU outside their own turns in this block (``before``: CPU, of it in turns): REJECTED."""
    caught: list[Key] = []
    for key, worker in list(live.items()):
        idle = max(0.0, cpu_seconds(worker.proc.pid) - before[key][0] - (worker.turn_cpu_s - before[key][1]))
        result.idle_cpu_s[key] += idle
        if idle > IDLE_CPU_S + IDLE_CPU_SHARE * wall_s:
            caught.append(key)
            used = f"{1000 * idle:.0f} ms of CPU ({idle / wall_s:.0%} of a core)"
            _drop(live, key[0], f"REJECTED (integrity: its process used {used} while others were timed)", result)
    return caught


def _spot_due(key: Key, result: BlockedTiming) -> bool:
    """:data:`SPOT_FIRST` of each process's first slots (a third drawn), then :data:`SPOT_RATE` of them all through the
    run (a cache is honest the first time it sees an input) while spot checks took under :data:`SPOT_SHARE` of it.
    Candidates only: the baseline and its identical copy run the referee's own code (trusted, and it saves half a
    KernelBench problem's checks)."""
    if key[0] in (result.baseline, BASELINE_COPY):
        return False
    early = result.spot_checks[key] < SPOT_FIRST
    due = early or result.spot_s <= SPOT_SHARE * result.elapsed_s
    return due and random.random() < (0.33 if early else SPOT_RATE)


def _spot_check(worker: TimingWorker, key: Key, plan: BlockPlan, result: BlockedTiming) -> None:
    """The referee judges up to :data:`SPOT_LAUNCHES` launches it draws from what the worker sent in this slot (each
    batch's values before it ran, a launch of it captured once it was timed: no later call could mend it)."""
    began = time.monotonic()
    if not (records := worker.captured):
        return  # a backend that captures none (magpie's harness captures every batch: the worker counts them)
    try:
        request = {"records": records, "judge": SPOT_LAUNCHES}
        verdict = result.referee.verify(request, plan.timeout_s)  # type: ignore[union-attr]
    except TimingWorkerError:  # the referee's own process failed (the baseline's: its next slot says so): no more
        result.referee = None
        return
    result.spot_checks[key], result.spot_s = result.spot_checks[key] + 1, result.spot_s + time.monotonic() - began
    if verdict.status.value != "passed":
        raise IntegrityError(verdict.message)


def reject_below_floor(result: BlockedTiming, floor_us: float | None) -> None:
    """Fail candidates with a process whose median launch beats writing their outputs :data:`FLOOR_MARGIN` times over
    (``floor_us``: the referee's best fill of the same bytes by the same clock, before and after the blocks): no work
    was measured. If the trusted code beats the fill itself, the fill was slowed (a busy machine): no floor."""
    medians = [(k[0], float(np.median(v))) for k, v in result.samples.items() if v]
    fastest = {i: min(m for j, m in medians if j == i) for i, _ in medians}  # each kernel's fastest process
    trusted = (result.baseline, BASELINE_COPY)
    if not floor_us or any(fastest.get(i, math.inf) < floor_us for i in trusted):
        return
    for i, v in fastest.items():  # its blocks leave the spread, as a failure's do
        if v < floor_us / FLOOR_MARGIN and i not in (*trusted, *result.failed):
            why = f"under 1/{FLOOR_MARGIN:g} of the {floor_us:.3g} us it takes here to write its outputs"
            _drop({}, i, f"REJECTED (integrity: {v:.3g} us a launch, {why})", result)


def _drop(live: dict[Key, TimingWorker], index: int, why: str, result: BlockedTiming) -> None:
    """A candidate one of whose processes failed leaves the blocks with all its processes."""
    result.failed[index] = why
    for key in [k for k in live if k[0] == index]:
        live.pop(key).stop()
    for key in [k for k in result.blocks if k[0] == index]:
        result.blocks.pop(key)


def _spread(samples: list[float]) -> float:
    q25, q50, q75 = np.percentile(samples, [25, 50, 75])
    return float((q75 - q25) / q50) if q50 > 0 else math.inf


def _precise_enough(result: BlockedTiming, plan: BlockPlan) -> bool:
    """Every process's level known to ``target_rse``, or to half the spread between processes: the part of an
    interval more blocks cannot shrink (its standard error then adds at most a quarter to that variance). A
    precision rule: it ignores which way anything points, so stopping on it does not bias a verdict."""
    spread = result.spread()
    spread_sd = math.sqrt(spread.variance) if spread.df >= MIN_SPREAD_DF else 0.0
    reference = np.log(result.baseline_blocks())
    for values in (v for k, v in result.blocks.items() if k[0] not in result.decided):
        se = _level_se(np.log(values[: result.block_count]) - reference)
        if 1.96 * se > plan.target_rse and not se <= spread_sd / 2:
            return False
    return True


def _level_se(log_ratios: np.ndarray) -> float:
    """A process level's (a median's) standard error from its blocks' log ratios to the baseline, sigma from the MAD:
    a rare slow block (after a spot check, on the H200) must not keep the blocks going."""
    sigma = 1.4826 * float(np.median(np.abs(log_ratios - np.median(log_ratios)))) or float(np.std(log_ratios, ddof=1))
    return 1.25 * sigma / math.sqrt(len(log_ratios))


def _clear(result: BlockedTiming, plan: BlockPlan) -> list[int]:
    """The undecided candidates now :data:`CLEAR_EFFECT` faster or slower at :data:`CLEAR_CONFIDENCE`, while the run's
    own checks are clean (identical copy neither called different nor that far off; no drift). Simulated: docs."""
    candidates = [i for i in result.indices() if i not in (result.baseline, BASELINE_COPY, *result.decided)]
    checks, effect = stability(result, plan.min_effect), max(CLEAR_EFFECT, plan.min_effect)
    # a copy 1.37x off but UNSTABLE (a busy 2-core machine, 10 blocks) is no noise floor, yet no calm either
    copy_off = abs(math.log(checks["aa_speedup"] or 1.0)) >= math.log1p(effect)
    if not candidates or checks["unstable"] or checks["noise_floor_pct"] > 0 or copy_off:
        return []
    decided = (Verdict.FASTER, Verdict.SLOWER)
    return [i for i in candidates if result.speedup(i, effect, confidence=CLEAR_CONFIDENCE).verdict in decided]


def _release(live: dict[Key, TimingWorker], result: BlockedTiming, plan: BlockPlan) -> bool:
    """Clear candidates leave the blocks (their processes stay open, idle); True once none is left undecided."""
    for index in _clear(result, plan):
        result.decided[index] = result.block_count
        for key in [k for k in live if k[0] == index]:
            del live[key]
    return bool(result.decided) and all(k[0] in (result.baseline, BASELINE_COPY) for k in live)


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class Started:
    """The processes each timing worker started (its session, less itself: a backend's confinement keeps them there),
    stopped while other workers are timed: what they do (a compile pool warming up, or work aimed at the neighbours,
    the catalogue's ``child_hog``) lands in their own worker's turns. Held as pidfds, so a pid reused meanwhile is
    never signalled; let go at the end (a worker's stop ends its group)."""

    def __init__(self) -> None:
        self.pidfds: dict[int, dict[int, int]] = {}  # worker pid (its session) -> pid -> pidfd
        self.scanned = -math.inf

    def find(self, live: dict[Key, TimingWorker]) -> None:
        """New ones, looked for every :data:`STARTED_SCAN_S` at most, are stopped at once."""
        if time.monotonic() - self.scanned < STARTED_SCAN_S or not hasattr(signal, "pidfd_send_signal"):
            return
        self.scanned, leaders = time.monotonic(), {w.proc.pid for w in live.values()}
        for pid, (_, session, _) in (_cpu_by_process() or {}).items():
            if session in leaders and pid != session and pid not in self.pidfds.get(session, {}):
                with contextlib.suppress(OSError):  # ended meanwhile
                    fd = os.pidfd_open(pid)
                    if _stat(Path(f"/proc/{pid}"))[1:2] != (session,):  # a new process with the pid scanned
                        os.close(fd)
                        continue
                    self.pidfds.setdefault(session, {})[pid] = fd
                    _signal([fd], signal.SIGSTOP)

    @contextlib.contextmanager
    def running(self, worker: TimingWorker) -> Iterator[None]:
        _signal(fds := self.pidfds.get(worker.proc.pid, {}).values(), signal.SIGCONT)
        try:
            yield
        finally:
            _signal(fds, signal.SIGSTOP)

    def release(self) -> None:
        for fd in [fd for fds in self.pidfds.values() for fd in fds.values()]:
            _signal([fd], signal.SIGCONT)
            os.close(fd)
        self.pidfds.clear()


def _signal(pidfds: Iterable[int], number: int) -> None:
    for fd in pidfds:
        with contextlib.suppress(OSError):  # it ended
            signal.pidfd_send_signal(fd, number)


# --- what else was running ---------------------------------------------------------------------------


def _cpu_by_process() -> dict[int, tuple[str, int, float]] | None:
    """pid -> (name, session id, CPU seconds so far) for every process (Linux ``/proc``; None elsewhere)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    return {int(entry.name): found for entry in proc.iterdir() if entry.name.isdigit() and (found := _stat(entry))}


def _stat(entry: Path) -> tuple[str, int, float] | tuple[()]:
    """(name, session id, CPU seconds so far) of the process ``entry`` (/proc/<pid>); () if gone or not ours to read."""
    try:
        raw = (entry / "stat").read_text()
    except OSError:
        return ()
    name, rest = raw[raw.index("(") + 1 : raw.rindex(")")], raw[raw.rindex(")") + 2 :].split()
    # after the name: state ppid pgrp session ... utime (11) stime (12), counted from the state
    return name, int(rest[3]), (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _others_cpu(
    before: dict[int, tuple[str, int, float]] | None,
    after: dict[int, tuple[str, int, float]] | None,
    workers: set[int],
) -> dict[str, float] | None:
    """CPU seconds per name used between the snapshots by processes other than this one and its ``workers`` (metered
    by :func:`_idle_workers`), naming those a worker started; kernel threads in brackets, as ``ps`` does (much of
    their work is for the timed processes, freeing what a kernel allocated: not load, :func:`_user_cpus`)."""
    if before is None or after is None:
        return None
    me = os.getpid()
    used: Counter[str] = Counter()
    for pid, (name, session, cpu) in after.items():
        if pid == me or pid in workers:
            continue
        earlier = before.get(pid)
        delta = cpu - earlier[2] if earlier and earlier[0] == name else cpu
        if delta > 0:
            label = f"[{name}]" if session == 0 else name
            used[f"{label} (started by a timing worker)" if session in workers else label] += delta
    return dict(used.most_common(5))


# --- what the blocks say ---------------------------------------------------------------------------


def copy_speedup(result: BlockedTiming, min_effect: float) -> Speedup | None:
    """The baseline's identical copy against the baseline: the method's own check."""
    if BASELINE_COPY not in result.indices() or result.baseline not in result.indices() or result.block_count < 2:
        return None
    return result.speedup(BASELINE_COPY, min_effect)


def stability(result: BlockedTiming, min_effect: float) -> dict[str, Any]:
    """The run's own noise: process spread, the identical copy's check, drift, within-slot spread, what else ran."""
    copy = copy_speedup(result, min_effect)
    spread = result.spread()
    # identical work whose interval excludes 1: noise the method missed; no verdict by less than that interval reaches
    missed = copy is not None and (copy.ci_low > 1 or copy.ci_high < 1)
    far_pct = 100 * (math.exp(max(abs(math.log(copy.ci_low)), abs(math.log(copy.ci_high)))) - 1) if missed else 0.0
    floor_pct = far_pct if far_pct > 100 * min_effect else 0.0
    base = np.asarray(result.baseline_blocks())
    slow_fifth_pct = _drift_pct(base, 100 * (1 - MAX_DESYNC_SHARE))
    elapsed = max(result.elapsed_s, 1e-9)
    info: dict[str, Any] = {
        "design": "interleaved blocks; several worker processes per kernel, each with a random memory layout; "
        "interval over processes and blocks",
        "blocks": result.block_count,
        "elapsed_s": round(result.elapsed_s, 3),
        "processes": {str(i): len(result.processes(i)) for i in result.indices()},
        "process_spread_pct": spread.pct if spread.df else None,
        "process_spread_df": spread.df,
        "aa_speedup": copy.value if copy else None,
        "aa_ci95": [copy.ci_low, copy.ci_high] if copy else None,
        "aa_verdict": copy.verdict.value if copy else None,
        "aa_desynchronised_pct": 100 * copy.desynchronised if copy else None,
        "noise_floor_pct": floor_pct,
        "drift_pct": _drift_pct(base, 95),
        "slow_blocks_drift_pct": slow_fifth_pct,
        "within_slot_spread_pct": 100 * float(np.median(result.spreads)) if result.spreads else None,
        "load_average": [result.load_before, result.load_after],
        "cpus": os.cpu_count(),
        "others_cpus": (
            {name: round(cpu / elapsed, 2) for name, cpu in result.others_cpu_s.items()}
            if result.others_cpu_s is not None
            else None
        ),
        "unstable": bool(slow_fifth_pct > MAX_DRIFT_PCT),
        "spot_checks": sum(result.spot_checks.values()),
        "spot_checks_s": round(result.spot_s, 3),
        "idle_cpu_ms_most": round(1000 * max(result.idle_cpu_s.values(), default=0.0), 1),
    }
    info["message"] = _stability_message(info, min_effect)
    return info


def _drift_pct(blocks: np.ndarray, upper_percentile: float) -> float:
    """How much slower the baseline's blocks at ``upper_percentile`` were than its fastest (5th percentile), in %."""
    if len(blocks) < 2:
        return 0.0
    return 100 * (float(np.percentile(blocks, upper_percentile) / np.percentile(blocks, 5)) - 1)


def _others_text(info: dict[str, Any]) -> str:
    """What else used the CPUs while the blocks ran (not magpie's workers; kernel threads only in ``others_cpus``)."""
    others = info["others_cpus"]
    if others is None:
        load = info["load_average"][0]
        return f"load average {load:.1f} on {info['cpus']} CPUs" if load is not None else "other load unknown"
    busy = {name: cpus for name, cpus in others.items() if cpus >= 0.05 and not name.startswith("[")}
    named = ", ".join(f"{name} {cpus:.2f}" for name, cpus in busy.items())
    return f"other processes used {_user_cpus(busy):.2f} of {info['cpus']} CPUs ({named})" if busy else "machine idle"


def _user_cpus(others: dict[str, float]) -> float:
    """CPUs used by other processes, kernel threads ([name]) left out."""
    return sum(cpus for name, cpus in others.items() if not name.startswith("["))


def _stability_message(info: dict[str, Any], min_effect: float) -> str:
    spread, copy = info["process_spread_pct"], info["aa_verdict"] and f"{info['aa_speedup']:.3f}x {info['aa_verdict']}"
    facts = (
        f"{_others_text(info)}; the baseline's blocks varied {info['drift_pct']:.0f} %"
        + (f", identical work {spread:.1f} % apart between processes" if spread is not None else "")
        + (f", the baseline's identical copy {copy}" if copy else "")
    )
    if info["unstable"]:
        return (
            f"UNSTABLE: the baseline's slowest {MAX_DESYNC_SHARE:.0%} of blocks took "
            f"{info['slow_blocks_drift_pct'] / 100 + 1:.0f}x or more its fastest ({facts}): "
            "the machine is overloaded (launches waiting whole CPU time slices, or another process sharing the "
            "device), in a state each process keeps across blocks: no verdict is trusted (try a quieter machine)"
        )
    if info["noise_floor_pct"] > 0:
        lo, hi = info["aa_ci95"]
        return (
            f"the baseline's identical copy came out {info['aa_speedup']:.3f}x (95% CI {lo:.3f}-{hi:.3f}; {facts}): "
            f"noise this run did not model, so no candidate is called faster or slower by less than "
            f"{info['noise_floor_pct']:.1f} %"
        )
    if spread is not None and spread > 100 * min_effect:
        return (
            f"processes disagree ({facts}, {info['blocks']} blocks): identical work lands ~{spread:.0f} % apart "
            f"from process to process here, so differences of that size stay UNSTABLE at min_effect "
            f"{min_effect:.0%}; more worker processes (--processes N) narrow the intervals"
        )
    others = info["others_cpus"] or {}
    if _user_cpus(others) >= BUSY_CPUS:
        return f"the machine was busy ({facts}, {info['blocks']} blocks); intervals include that noise"
    return f"stable ({facts}, {info['blocks']} blocks)"
