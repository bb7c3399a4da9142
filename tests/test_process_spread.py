"""The process as a random effect: identical code never called faster, a real win called, per candidate.

Simulated compares (seeded) under the model the timing runs under: every kernel timed in two worker
processes, each process with its own offset (memory layout, allocator history: drawn from a normal, or
from two allocator modes far apart), plus block-to-block noise. The statistic must keep its promises
for any such draw, not for one lucky machine.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from magpie_core.config.kernel import PerformanceConfig
from magpie_core.measurement.stats import Verdict, hierarchical_speedup, pooled_process_spread
from magpie_core.pipelines import blocked
from magpie_core.pipelines.blocked import (
    BASELINE_COPY,
    CLEAR_FIRST_LOOK,
    BlockedTiming,
    BlockPlan,
    Key,
    _clear,
    _others_cpu,
    _precise_enough,
    stability,
    time_in_blocks,
)
from magpie_core.pipelines.verdicts import noise_floor

from .helpers.load_injector import injected_load

BLOCKS = 30


def _compare(
    rng: np.random.Generator, costs: dict[int, float], process_effect, processes: int = 2, count: int = BLOCKS
) -> BlockedTiming:
    load = rng.choice([1.0, 1.3, 2.0], size=count)  # shared by every process of a block
    blocks = {
        (i, p): list(100 * cost * process_effect(rng) * load * rng.lognormal(0, 0.03, count))
        for i, cost in costs.items()
        for p in range(processes)
    }
    return BlockedTiming(baseline=0, blocks=blocks)


def _normal(sigma: float):
    return lambda rng: float(rng.lognormal(0, sigma))


def _allocator_modes(rng: np.random.Generator) -> float:
    """A process whose outputs come from fresh mappings (page faults every call) or from the heap: 1.5x."""
    return 1.5 if rng.random() < 0.5 else 1.0


def _verdicts(rng, costs, effect, candidate: int, runs: int = 300) -> list[Verdict]:
    """The candidate's verdict as compare gives it: with the floor its identical copy of the baseline sets."""
    verdicts = []
    for _ in range(runs):
        timing = _compare(rng, costs, effect)
        verdicts.append(timing.speedup(candidate, 0.02, noise_floor(stability(timing, 0.02))).verdict)
    return verdicts


def test_an_identical_copy_is_rarely_decided_and_never_confidently_far_off():
    """Identical work, two processes each, process offsets of 5 % or allocator modes 1.5x apart: FASTER or
    SLOWER rarely (a 95 % interval beyond min_effect; measured 2-2.3 % over 600 runs each), never with
    quiet processes."""
    rng = np.random.default_rng(11)
    costs = {0: 1.0, BASELINE_COPY: 1.0, 1: 1.0, 2: 2.0, 3: 0.6}
    for effect in (_normal(0.05), _allocator_modes):
        verdicts = _verdicts(rng, costs, effect, candidate=1)
        wrong = sum(v in (Verdict.FASTER, Verdict.SLOWER) for v in verdicts) / len(verdicts)
        assert wrong <= 0.04, wrong
    quiet = _verdicts(rng, costs, _normal(0.005), candidate=1, runs=100)
    assert Verdict.FASTER not in quiet and Verdict.SLOWER not in quiet


def test_the_old_single_process_pairing_called_identical_code_faster():
    """What the issue saw: one process per side, a process offset, and paired blocks alone say FASTER."""
    from magpie_core.measurement.stats import paired_speedup

    rng = np.random.default_rng(12)
    load = rng.choice([1.0, 1.3, 2.0], size=BLOCKS)
    base = 100 * 1.06 * load * rng.lognormal(0, 0.01, BLOCKS)  # this process landed 6 % slow
    copy = 100 * load * rng.lognormal(0, 0.01, BLOCKS)
    assert paired_speedup(base, copy).verdict == Verdict.FASTER  # the confident wrong answer
    timing = BlockedTiming(baseline=0, blocks={(0, 0): list(base), (0, 1): list(copy * 1.0), (1, 0): list(copy)})
    timing.blocks[(1, 1)] = list(base * rng.lognormal(0, 0.005, BLOCKS))  # its second process landed slow too
    assert timing.speedup(1, 0.02).verdict == Verdict.UNSTABLE


def test_real_wins_and_losses_are_called_when_processes_agree():
    rng = np.random.default_rng(13)
    costs = {0: 1.0, BASELINE_COPY: 1.0, 1: 1 / 1.7, 2: 3.0}
    faster = _verdicts(rng, costs, _normal(0.01), candidate=1, runs=100)
    slower = _verdicts(rng, costs, _normal(0.01), candidate=2, runs=100)
    assert faster.count(Verdict.FASTER) >= 95 and Verdict.SLOWER not in faster
    assert slower.count(Verdict.SLOWER) >= 95 and Verdict.FASTER not in slower


def test_a_candidate_whose_processes_disagree_is_undecided_alone():
    """One candidate's two processes 1.8x apart: that candidate is UNSTABLE, the others keep their verdicts."""
    rng = np.random.default_rng(14)
    timing = _compare(rng, {0: 1.0, BASELINE_COPY: 1.0, 1: 1 / 1.7, 2: 1.0, 3: 3.0}, _normal(0.01))
    timing.blocks[(2, 1)] = [x * 1.8 for x in timing.blocks[(2, 1)]]
    assert timing.speedup(2, 0.02).verdict == Verdict.UNSTABLE
    assert timing.speedup(1, 0.02).verdict == Verdict.FASTER
    assert timing.speedup(3, 0.02).verdict == Verdict.SLOWER
    spread = timing.spread()
    assert spread.pct < 5  # the disagreeing candidate is left out of the pool


def test_spread_is_pooled_over_kernels_and_needs_two_processes():
    assert pooled_process_spread([[0.0], [1.0]]).df == 0
    spread = pooled_process_spread([[0.0, 0.02], [0.01, -0.01], [0.5, 0.52]])
    assert spread.df == 3 and 0 < spread.variance < 0.001
    s = hierarchical_speedup([0.0], [0.1], pooled_process_spread([[0.0], [0.1]]))
    assert s.verdict == Verdict.UNSTABLE and "one worker process" in s.reason


def _blocks(rng: np.random.Generator, process_sigma: float, block_sigma: float, count: int = 20) -> BlockedTiming:
    """Four kernels in two processes each (the baseline, two candidates, the baseline's copy), ``count`` blocks."""
    blocks = {
        (i, p): list(100 * rng.lognormal(0, process_sigma) * rng.lognormal(0, block_sigma, count))
        for i in (0, 1, 2, BASELINE_COPY)
        for p in range(2)
    }
    return BlockedTiming(baseline=0, blocks=blocks)


def test_blocks_end_once_more_could_not_narrow_the_interval() -> None:
    """Processes 10 % apart and blocks 2 % noisy: 20 blocks know every level to far less than that spread,
    which no further block shrinks. Processes 0.1 % apart and blocks 10 % noisy: the levels are the noise,
    and the blocks go on (to the budget, or to ``target_rse``)."""
    plan = BlockPlan(budget_s=60, min_effect=0.02)
    rng = np.random.default_rng(7)
    assert all(_precise_enough(_blocks(rng, 0.10, 0.02), plan) for _ in range(20))
    assert not any(_precise_enough(_blocks(rng, 0.001, 0.10), plan) for _ in range(20))


def test_a_candidate_leaves_the_blocks_only_when_far_from_the_line() -> None:
    """The clear-verdict rule: a candidate >= 10 % faster or slower at 99 % leaves the blocks. 1.5x slower and 0.6x
    are decided at 30 blocks in most draws, and the 95 % verdicts are the true ones. A candidate identical to the
    baseline, or 4 % slower, never leaves, at the first look or at 30 blocks (300 draws each, processes 5 % or 0.5 %
    apart). Not asserted: processes in
    two allocator modes 1.5x apart, where every process of the copy can land in the other mode than the baseline's;
    that verdict is wrong whenever the blocks end (the bound on it is the test above)."""
    plan = BlockPlan(budget_s=60, min_effect=0.02)
    rng = np.random.default_rng(5)
    clear = [_compare(rng, {0: 1.0, BASELINE_COPY: 1.0, 1: 1.5, 2: 0.6}, _normal(0.02)) for _ in range(50)]
    assert sum(_clear(t, plan) == [1, 2] for t in clear) >= 45
    for timing in clear:
        assert [timing.speedup(i, 0.02).verdict for i in _clear(timing, plan)] == [
            {1: Verdict.SLOWER, 2: Verdict.FASTER}[i] for i in _clear(timing, plan)
        ]
    for effect in (_normal(0.05), _normal(0.005)):
        for close, count in itertools.product((1.0, 1.04), (CLEAR_FIRST_LOOK, BLOCKS)):
            costs = {0: 1.0, BASELINE_COPY: 1.0, 1: 1.5, 2: close}
            draws = (_compare(rng, costs, effect, count=count) for _ in range(300))
            assert not any(2 in _clear(t, plan) for t in draws), (close, count)


def test_no_candidate_leaves_while_the_identical_copy_is_as_far_off_as_a_clear_one() -> None:
    """A busy 2-core demo compare ended at its first look with the identical copy 1.37x off but UNSTABLE (no noise
    floor: its interval was wide). A copy that far off, called different or not, keeps every candidate in the
    blocks; one within the clear effect may let the 1.5x candidate leave."""
    plan, rng, left = BlockPlan(budget_s=60, min_effect=0.02), np.random.default_rng(3), 0
    for _ in range(40):
        timing = _compare(rng, {0: 1.0, BASELINE_COPY: 1.0, 1: 1.5}, _normal(0.01), count=CLEAR_FIRST_LOOK)
        for key in [k for k in timing.blocks if k[0] == BASELINE_COPY]:  # a copy with desynchronised, far-off blocks
            timing.blocks[key] = list(np.asarray(timing.blocks[key]) * 1.37 * rng.lognormal(0, 0.6, CLEAR_FIRST_LOOK))
        copy = stability(timing, 0.02)["aa_speedup"]
        leaving = _clear(timing, plan)
        assert leaving == [] if abs(math.log(copy)) >= math.log(1.1) else leaving in ([], [1]), copy
        left += leaving == [1]
    assert left >= 1


def test_an_identical_copy_whose_interval_excludes_1_sets_the_floor_though_not_called_different() -> None:
    """Seen on the 2-core VM: both baseline processes ~5.5 % slow, magpie's copy 1.052x (CI 1.009-1.097: UNSTABLE,
    as it reached into the 2 % band) and the bed's identical copy 1.064x (CI 1.021-1.110) called FASTER. Identical
    work whose interval excludes 1 is noise the model missed: the floor is how far that interval reaches."""
    rng = np.random.default_rng(5)
    levels = {
        0: (1.0, 1.025),
        BASELINE_COPY: (0.95, 0.975),
        1: (0.935, 0.96),
        2: (2.0, 2.05),
    }  # 1: the bed's identical copy
    blocks = {(i, p): list(100 * v * rng.lognormal(0, 0.01, 30)) for i, vs in levels.items() for p, v in enumerate(vs)}
    timing = BlockedTiming(baseline=0, blocks=blocks)
    checks = stability(timing, 0.02)
    low, high = checks["aa_ci95"]
    assert checks["aa_verdict"] == "UNSTABLE" and 1 < low < 1.02 < high  # the case: excludes 1, not called
    assert checks["noise_floor_pct"] == pytest.approx(100 * (high - 1)) and "did not model" in checks["message"]
    assert timing.speedup(1, 0.02).verdict == Verdict.FASTER  # without the floor: the confident wrong answer
    assert timing.speedup(1, 0.02, noise_floor(checks)).verdict == Verdict.UNSTABLE
    assert timing.speedup(2, 0.02, noise_floor(checks)).verdict == Verdict.SLOWER  # a 2x loss is still called


def test_a_copy_a_hair_off_sets_no_floor() -> None:
    """A copy whose interval excludes 1 but stays inside min_effect (a long, quiet run) changes nothing."""
    rng = np.random.default_rng(6)
    levels = {0: (1.0, 1.001), BASELINE_COPY: (0.992, 0.993), 1: (0.5, 0.501)}
    blocks = {(i, p): list(100 * v * rng.lognormal(0, 0.002, 60)) for i, vs in levels.items() for p, v in enumerate(vs)}
    checks = stability(BlockedTiming(baseline=0, blocks=blocks), 0.02)
    assert checks["aa_ci95"][0] > 1 and checks["noise_floor_pct"] == 0 and checks["message"].startswith("stable")


class _FakeClock:
    """The blocks' clock, moved only by the stand-in workers: the budget's accounting, not this machine's speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    perf_counter = monotonic


class _FakeWorker:
    """A timed process: per-launch times of ``cost`` us, noisy from block to block, 1 ms of the clock per slot."""

    def __init__(self, cost: float, rng: np.random.Generator, clock: _FakeClock) -> None:
        self.cost, self.rng, self.clock, self.info, self.calls = cost, rng, clock, {"batch_size": 1}, 0
        self.proc, self.turn_cpu_s = type("Proc", (), {"pid": -1})(), 0.0

    def sample(self, count: int, timeout: float, slot: int | None = None) -> list[float]:
        self.calls += 1
        self.clock.now += 0.001
        return list(self.cost * self.rng.lognormal(0, 0.1) * self.rng.lognormal(0, 0.01, count))

    def stop(self) -> None:
        pass


def test_decided_candidates_leave_the_blocks_and_take_their_budget_with_them(monkeypatch) -> None:
    """A 3x slower candidate leaves at the first look (10 blocks) and is not sampled again; the identical
    candidate and the copy stay until the budget of the kernels still in the blocks is spent; each verdict is
    over the blocks its candidate ran. The blocks' clock is the workers' own, so load (injected) changes nothing."""
    clock = _FakeClock()
    monkeypatch.setattr(blocked, "time", clock)
    rng = np.random.default_rng(1)
    costs = {0: 100.0, BASELINE_COPY: 100.0, 1: 300.0, 2: 100.0}
    workers = {(i, p): _FakeWorker(cost, rng, clock) for i, cost in costs.items() for p in range(2)}
    with injected_load():
        result = time_in_blocks(workers, 0, BlockPlan(budget_s=4 * 0.5, min_effect=0.02))  # 0.5 s per kernel
    assert result.decided == {1: 10} and result.blocks_of(1) == 10 < result.block_count
    assert workers[(1, 0)].calls == 11  # the probe, then 10 slots
    assert result.speedup(1, 0.02).verdict == Verdict.SLOWER
    assert result.speedup(2, 0.02).verdict in (Verdict.SAME, Verdict.UNSTABLE)
    # the slow kernel's share left with it: 3 kernels x 0.5 s after the first 10 blocks, not 4 x 0.5 s
    assert result.elapsed_s < 4 * 0.5


def test_kernel_threads_are_named_but_do_not_make_the_machine_busy() -> None:
    """Kernel threads (session 0) freeing what the timed kernels allocate ran at ~0.9 CPU during a quiet demo
    compare: named, never "busy"; a user process elsewhere is."""
    before = {10: ("kworker/u8:3", 0, 1.0), 20: ("python", 20, 5.0), 30: ("stress", 30, 0.0)}
    after = {10: ("kworker/u8:3", 0, 10.0), 20: ("python", 20, 5.0), 30: ("stress", 30, 0.0)}
    rng = np.random.default_rng(0)
    timing = _compare(rng, {0: 1.0, BASELINE_COPY: 1.0, 1: 1.0}, _normal(0.0))
    timing.others_cpu_s, timing.elapsed_s = _others_cpu(before, after, workers={20}), 10.0
    assert timing.others_cpu_s == {"[kworker/u8:3]": 9.0}
    message = stability(timing, 0.05)["message"]
    assert "busy" not in message and "machine idle" in message, message
    assert stability(timing, 0.05)["others_cpus"] == {"[kworker/u8:3]": 0.9}
    after[30] = ("stress", 30, 5.0)
    timing.others_cpu_s = _others_cpu(before, after, workers={20})
    assert "the machine was busy" in stability(timing, 0.05)["message"]


def test_processes_are_prepared_in_counterbalanced_rounds() -> None:
    """A process prepared earlier ran slower on the 2-core VM (10-30 % at times); in a fixed order that was always
    the identical copy of the baseline. In counterbalanced rounds every kernel comes first in some run, every
    kernel's mean position is within one place of the others', and no kernel's two processes come back to back."""
    from types import SimpleNamespace

    from magpie_core.pipelines.instances import Instances, counterbalanced, prepare_all

    class Worker:
        def __init__(self, key: Key) -> None:
            self.key = key

        def prepare(self, timeout: float) -> None:
            prepared.append(self.key)

    jobs = [SimpleNamespace(performance=PerformanceConfig()) for _ in range(3)]
    keys = [(i, p) for i in (BASELINE_COPY, 0, 1, 2) for p in (0, 1)]
    firsts: set[int] = set()
    for _ in range(60):
        prepared: list[Key] = []
        instances = Instances(workers={key: Worker(key) for key in keys})
        assert prepare_all(instances, jobs, 0) == {} and sorted(prepared) == sorted(keys)
        assert [k[1] for k in prepared] == [0, 0, 0, 0, 1, 1, 1, 1]  # one process of every kernel per round
        firsts.add(prepared[0][0])
    assert firsts == {BASELINE_COPY, 0, 1, 2}
    for kernels in range(2, 10):
        order = counterbalanced([(i, p) for i in range(kernels) for p in (0, 1)])
        where = {i: [n for n, key in enumerate(order) if key[0] == i] for i in range(kernels)}
        means = [sum(places) / 2 for places in where.values()]
        assert max(means) - min(means) <= 1 and all(b - a >= 2 for a, b in where.values()), order


def test_a_kernel_dropped_while_others_warm_up_is_not_prepared() -> None:
    from types import SimpleNamespace

    from magpie_core.measurement.worker_client import TimingWorkerError
    from magpie_core.pipelines.instances import Instances, prepare_all

    prepared: list[Key] = []

    class Worker:
        def __init__(self, key: Key) -> None:
            self.key = key

        def prepare(self, timeout: float) -> None:
            if self.key[0] == 1:
                raise TimingWorkerError("out of memory")
            prepared.append(self.key)

        def stop(self) -> None:
            pass

    keys = [(i, p) for i in (0, 1, 2) for p in (0, 1)]
    instances = Instances(workers={key: Worker(key) for key in keys})
    failures = prepare_all(instances, [SimpleNamespace(performance=PerformanceConfig()) for _ in range(3)], 0)
    assert list(failures) == [1] and "out of memory" in failures[1]
    assert sorted(prepared) == [(0, 0), (0, 1), (2, 0), (2, 1)] and (1, 0) not in instances.workers


def test_on_a_small_machine_workers_load_and_check_one_at_a_time(monkeypatch) -> None:
    """On the 2-core VM, workers loaded and checked side by side came out in a persistent slow state 3x as often as
    ones loaded one at a time; on a big host they stay side by side (each start there costs GPU driver time)."""
    import threading
    import time
    from types import SimpleNamespace

    import magpie_core.pipelines.instances as instances_module
    from magpie_core.reports import CorrectnessResult, EvaluationOutcome, PerformanceResult, StageStatus
    from magpie_core.runtime.threads import map_in_threads

    passed = EvaluationOutcome(
        correctness=CorrectnessResult(status=StageStatus.PASSED),
        performance=PerformanceResult(status=StageStatus.SKIPPED),
    )
    guard, running, most = threading.Lock(), [0], [0]

    def phase() -> None:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        until = time.monotonic() + 0.3  # long enough for another thread to join on a loaded machine, if it may
        while most[0] < 2 and time.monotonic() < until:
            time.sleep(0.005)
        with guard:
            running[0] -= 1

    class Worker:
        def __init__(self, *args, **kwargs) -> None:
            phase()  # loading

        def check(self, timeout: float) -> EvaluationOutcome:
            phase()
            return passed

    monkeypatch.setattr(instances_module, "TimingWorker", Worker)
    task = SimpleNamespace(settings={}, save_outputs=None)
    for cpus, side_by_side in ((2, False), (16, True)):
        monkeypatch.setattr(instances_module.os, "cpu_count", lambda cpus=cpus: cpus)
        instances, most[0] = instances_module.Instances(), 0

        def start(index: int, instances=instances) -> EvaluationOutcome:
            return instances_module.SessionHarness((index, 0), instances)(task, Path("."), Path("."), {}, 10.0)

        outcomes = map_in_threads(start, range(4), workers=4)
        assert all(o is passed for o in outcomes) and (most[0] > 1) == side_by_side, (cpus, most[0])
