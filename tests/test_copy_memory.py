"""Cold-cache input copies stay within memory: a compare shares half the free memory among its processes.

On a VM that reports its host's 480 MiB L3, "twice the last-level cache" meant ~1 GiB of copies per worker process:
the 9-candidate bed compare (22 processes) took 21 GB of a 24 GB machine. The cap is the same for every process of a
compare (every timed instance is built the same way), and a capped run says so in its timing notes.
"""

from __future__ import annotations

from types import SimpleNamespace

from magpie_core.config.kernel import PerformanceConfig
from magpie_core.measurement.timing import BatchSampler, TimingSettings, input_copies
from magpie_core.pipelines.compare import _share_copy_memory

MIB = 1 << 20


class _Clock:
    cache_bytes = 480 * MIB

    def time_batch(self, launch, n: int) -> float:
        for i in range(n):
            launch(i)
        return 10.0 * n

    def host_overhead_us(self) -> None:
        return None


def test_copies_fill_twice_the_cache_unless_capped() -> None:
    plain = TimingSettings()
    assert input_copies(2 * MIB, 480 * MIB, plain) == 480
    capped = TimingSettings.from_performance({"copy_memory_mib": 256})
    assert capped.max_copy_bytes == 256 * MIB
    assert input_copies(2 * MIB, 480 * MIB, capped) == 128
    assert input_copies(512 * MIB, 480 * MIB, capped) == 2  # never fewer than two: a launch never reuses its inputs
    assert input_copies(2 * MIB, 480 * MIB, TimingSettings(flush_cache=False, max_copy_bytes=MIB)) == 1


def test_a_capped_run_says_its_caches_may_be_warm() -> None:
    settings = TimingSettings(warmup_ms=0, max_copy_bytes=256 * MIB)
    capped = BatchSampler(_Clock(), lambda i: None, settings, copies=128).notes([1.0])
    assert "128 rotating input copies (within copy_memory_mib, under 2x the 480 MiB cache)" in capped[0]
    full = BatchSampler(_Clock(), lambda i: None, TimingSettings(warmup_ms=0), copies=480).notes([1.0])
    assert "480 rotating input copies (>= 2x the 480 MiB cache)" in full[0]


def test_every_process_of_a_compare_gets_the_same_share_and_a_set_cap_is_kept() -> None:
    jobs = [SimpleNamespace(performance=PerformanceConfig(processes=2)) for _ in range(9)]
    _share_copy_memory(jobs, 0)
    shares = {job.performance.copy_memory_mib for job in jobs}
    assert len(shares) == 1 and shares.pop() >= 1
    mine = [SimpleNamespace(performance=PerformanceConfig(processes=2, copy_memory_mib=64)) for _ in range(3)]
    _share_copy_memory(mine, 0)
    assert [job.performance.copy_memory_mib for job in mine] == [64, 64, 64]
