"""The CUDA clock's spin guard follows the host's rate of launching a batch, not one cold launch.

No GPU here: torch.cuda's events, sleep kernel and device properties are replaced by stand-ins that record
what the clock asks for (the guard's length in cycles). On the H200 a compare's slots each began with one
untimed launch whose host time, taken as the per-launch rate, made the next guard ~25 ms long
(benchmarks/compare_speed.py, docs/benchmarks/compare_speed.md).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch
from magpie_kernels_pytorch import timers

from tests.helpers.load_injector import injected_load


class _Event:
    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        return (end.at - self.at) * 1000


@pytest.fixture
def guards(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    slept: list[int] = []
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(timers, "_elapsed", _Event.elapsed_time)  # the clock binds the real one when loaded
    monkeypatch.setattr(timers, "_sync_device", lambda device=None: None)  # likewise
    monkeypatch.setattr(torch.cuda, "_sleep", slept.append)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(L2_cache_size=1 << 20))
    return slept


def test_one_slow_launch_does_not_set_the_next_batchs_guard(guards: list[int]) -> None:
    with injected_load():  # host times stretch on a busy machine; the guarantees below must not
        _slow_launch_then_batches(guards)


def _slow_launch_then_batches(guards: list[int]) -> None:
    clock = timers.CudaClock(torch.device("cuda", 0))
    per_us = clock._cycles_per_us
    clock.time_batch(lambda i: None, 100)  # a warm batch: host rate of an empty launch, well under 20 us
    clock.time_batch(lambda i: time.sleep(0.005), 1)  # the lone, cold launch before a slot: 5 ms on the host
    guards.clear()
    clock.time_batch(lambda i: None, 100)
    guard_us = guards[0] / per_us
    # the cold launch's rate would give 5 ms x 100 x 1.25, capped at 200 ms; a warm batch's, well under a
    # millisecond (a loaded machine may stretch it to a few time slices, never to 100 ms)
    assert guard_us < 100_000, f"guard {guard_us:.0f} us for 100 launches"
    clock.time_batch(lambda i: time.sleep(0.0002), 50)  # a batch that is slow on the host does set the rate
    guards.clear()
    clock.time_batch(lambda i: None, 50)
    assert guards[0] / per_us >= 50 * 200 * 1.25


def test_a_kernel_that_synchronizes_does_not_grow_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that waits for the device (``.item()`` in a forward, as a real KernelBench solution does) returns
    only after the spin guard has run; counted as host time, each guard grew from the last one up to the cap."""
    busy_until, cycles_per_us = [0.0], [1e6]  # calibration: the stand-in events see the sleep as instant

    def sleep(cycles: int) -> None:  # the stand-in GPU is busy for the guard's length from now
        busy_until[0] = time.perf_counter() + cycles / cycles_per_us[0] / 1e6

    def synchronizing_call(i: int) -> None:  # waits for the GPU, then 100 us of its own work
        time.sleep(max(0.0, busy_until[0] - time.perf_counter()) + 0.0001)

    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(timers, "_elapsed", _Event.elapsed_time)  # the clock binds the real one when loaded
    monkeypatch.setattr(timers, "_sync_device", lambda device=None: None)  # likewise
    monkeypatch.setattr(torch.cuda, "_sleep", sleep)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(L2_cache_size=1 << 20))
    clock = timers.CudaClock(torch.device("cuda", 0))
    cycles_per_us[0] = clock._cycles_per_us
    with injected_load():
        for _ in range(16):
            clock.time_batch(synchronizing_call, 20)
    # each call: ~0.1 ms (more on a loaded machine); counting the guard's wait, each guard was 1.25x the last
    # plus the batch, up to the 200 ms cap: ~10 ms per launch by now
    assert clock.host_overhead_us() < 5_000
