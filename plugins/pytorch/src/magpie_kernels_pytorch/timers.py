"""Batch clocks for CPU and CUDA/ROCm devices (the primitive the core's timing method uses).

CUDA/ROCm: device events around a batch of launches. Before the start event a
short spin kernel (``torch.cuda._sleep``) holds the GPU while the host
enqueues the whole batch, so host launch latency never lands inside the
interval; its length adapts to the host enqueue time seen so far.
Cold caches come from the core's rotating input copies, sized from
``cache_bytes`` (the L2 size the device reports; the largest CPU cache).
Optional graph replay captures the batch in a CUDA/HIP graph. After the end event the whole device is waited
for: work a kernel left running on a stream of its own, never joined back to the caller's, is counted into the
batch (``side_stream`` in the reward-hack catalogue), not left out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from magpie_core.measurement.timing import BatchClock, Launch

_DEFAULT_LLC_BYTES = 32 * 1024 * 1024
#: the clocks as they were when magpie loaded (before any kernel): a kernel that patches ``time.perf_counter_ns`` or
#: ``torch.cuda.Event.elapsed_time`` later changes nothing here, and :class:`~.integrity.Tamper` reports the patch
_now = time.perf_counter_ns
_elapsed = torch.cuda.Event.elapsed_time
_sync_device = torch.cuda.synchronize


def _cpu_llc_bytes() -> int:
    """Largest CPU cache size from sysfs (Linux), else 32 MiB."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or _DEFAULT_LLC_BYTES


class CpuClock:
    """``perf_counter_ns`` around a batch of calls."""

    def __init__(self) -> None:
        self.cache_bytes = _cpu_llc_bytes()

    def time_batch(self, launch: Launch, n: int) -> float:
        start = _now()
        for i in range(n):
            launch(i)
        return (_now() - start) / 1000

    def host_overhead_us(self) -> float | None:
        return None  # on the CPU, host time is the measurement


class CudaClock:
    """Device events around a batch, behind a spin guard; works for CUDA and ROCm builds."""

    #: data it changes itself while timing (the harness checks that nothing else changes any of its data)
    changing = ("_host_per_launch_us",)

    def __init__(self, device: torch.device, graph_replay: bool = False) -> None:
        self.device = device
        props = torch.cuda.get_device_properties(device)
        self.cache_bytes = int(getattr(props, "L2_cache_size", 0) or 0) or 64 * 1024 * 1024
        self.graph_replay = graph_replay
        self._graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self._host_per_launch_us = 20.0
        self._cycles_per_us = self._calibrate_sleep()
        self._idle_tail_us = sorted(self._tail_us() for _ in range(5))[2]

    def _calibrate_sleep(self) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cycles = 1_000_000
        torch.cuda._sleep(cycles)  # warm
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        us = start.elapsed_time(end) * 1000
        return cycles / max(us, 1.0)

    def _tail_us(self, end: torch.cuda.Event | None = None) -> float:
        """From ``end`` (recorded now if None) until every stream of the device is idle, as the device saw it."""
        if end is None:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
        end.synchronize()
        _sync_device(self.device)  # every stream's work, side streams included
        tail = torch.cuda.Event(enable_timing=True)
        tail.record()
        tail.synchronize()
        return _elapsed(end, tail) * 1000

    def _guard(self, n: int) -> None:
        guard_us = min(self._host_per_launch_us * n * 1.25 + 50.0, 200_000.0)
        torch.cuda._sleep(int(guard_us * self._cycles_per_us))

    def time_batch(self, launch: Launch, n: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if self.graph_replay:
            graph = self._graph(launch, n)
            self._guard(1)
            start.record()
            graph.replay()
            end.record()
        else:
            self._guard(n)
            start.record()
            launch(0)
            host_start = _now()
            for i in range(1, n):
                launch(i)
            end.record()
            if n > 1:
                # the host's rate without the first launch: alone (the one that wakes a process up before its
                # slot) it is the slowest, and taken as the rate the next guard held the H200 ~25 ms per slot for
                # nothing; and a call that synchronizes (``.item()``) returns only after the guard ran, so counting
                # it grew every guard to the 200 ms cap and reported a 22 ms "host time" per launch
                self._host_per_launch_us = (_now() - host_start) / 1000 / (n - 1)
        # device work still running once the end event completed (a stream never joined back) belongs to the batch
        leftover = self._tail_us(end) - self._idle_tail_us  # waits for the end event first
        timed = _elapsed(start, end) * 1000
        return timed + leftover if leftover > max(20.0, 0.05 * timed) else timed

    def _graph(self, launch: Launch, n: int) -> torch.cuda.CUDAGraph:
        if n not in self._graphs:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for i in range(2):  # warm-up on the capture stream
                    launch(i)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for i in range(n):
                    launch(i)
            self._graphs[n] = graph
        return self._graphs[n]

    def host_overhead_us(self) -> float | None:
        return None if self.graph_replay else self._host_per_launch_us

    def forget_graphs(self) -> None:
        """Capture the next batches afresh (the graphs replay the launches they were captured with, by batch size)."""
        self._graphs.clear()


def per_call_us(device: torch.device, call: Callable[[], Any], trials: int) -> list[float]:
    """KernelBench's clock: ``trials`` single calls, each followed by a synchronize (CUDA/HIP events around it on a
    GPU, the host clock on a CPU), after 3 warm-up calls: the time of a call as an eager model sees it, launch and
    host overhead included (the batch clocks above hide them)."""
    on_gpu = device.type == "cuda"
    for _ in range(3):
        call()
        if on_gpu:
            _sync_device(device)
    times = []
    for _ in range(max(1, trials)):
        if on_gpu:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            _sync_device(device)
            times.append(_elapsed(start, end) * 1000)
        else:
            began = _now()
            call()
            times.append((_now() - began) / 1000)
    return times


def clock_info(device: torch.device) -> dict[str, Any]:
    """Clocks and driver, where readable (NVML through pynvml if installed)."""
    info: dict[str, Any] = {}
    if device.type != "cuda":
        info["cpu_count"] = os.cpu_count()
        return info
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        info["sm_clock_mhz"] = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["mem_clock_mhz"] = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        info["max_sm_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
    except Exception as exc:  # NVML missing or not an NVIDIA GPU
        info["clocks"] = f"not readable ({type(exc).__name__})"
    return info


def write_floor_us(clock: BatchClock, nbytes: int, device: torch.device) -> float | None:
    """The fastest this device writes ``nbytes`` here, by the clock that times the kernels: a fill of one buffer of
    8-byte words per launch (wide stores; one launch however many outputs: a kernel may write them all in one), the
    best of 5 batches of ~1 ms. A kernel that returns fresh outputs of these bytes cannot take much less; one that
    takes far less wrote nothing (the physical floor of :func:`magpie_core.pipelines.blocked.reject_below_floor`)."""
    if nbytes <= 0:
        return None
    buffer = torch.empty(-(-nbytes // 8), dtype=torch.int64, device=device)

    def fill(_: int) -> None:
        buffer.fill_(1)

    once = max(clock.time_batch(fill, 1), 1e-3)
    n = int(min(1000, max(1, 1000 / once)))
    return min(clock.time_batch(fill, n) / n for _ in range(5))
