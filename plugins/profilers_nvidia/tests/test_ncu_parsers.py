"""ncu's raw CSV parser and command line, on recorded and synthetic exports
(tests/data/profilers/README.md says where each recording came from)."""

from __future__ import annotations

import pytest
from magpie_profilers_nvidia.ncu import NcuProfiler, parse_ncu_csv

from tests.conftest import DATA

PROFILES = DATA / "profilers"


def test_ncu_raw_csv_groups_launches_per_kernel_in_base_units():
    # Synthetic (see README): replace with the H200 recording of benchmarks/gpu_verify_cuda.sh.
    rows = {r.kernel_name.split("(")[0]: r for r in parse_ncu_csv((PROFILES / "ncu_raw_synthetic.csv").read_text())}
    naive, tiled = rows["matmul_naive_kernel"], rows["matmul_tiled_kernel"]
    assert naive.invocations == 2 and naive.time_us == pytest.approx(4600.0) and naive.total_time_us == 9200.0
    assert naive.dram_read_bytes == 50_331_648 and naive.dram_write_bytes == 16_777_216
    assert naive.flops == 2 * 8_589_934_592  # FFMA counts twice
    assert naive.arithmetic_intensity == pytest.approx(2 * 8_589_934_592 / (50_331_648 + 16_777_216))
    assert naive.pct_of_peak == {"compute": pytest.approx(62.0), "memory": pytest.approx(91.36)}
    assert naive.achieved_occupancy_pct == pytest.approx(97.25)
    assert naive.raw["block_size"] == "(16, 16, 1)" and naive.source == "ncu"
    assert tiled.achieved_occupancy_pct is None  # "n/a" stays unknown, not zero


def test_ncu_units_are_scaled_and_details_page_is_read_too():
    raw = (
        '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum"\n'
        '"","","usecond","Mbyte"\n'
        '"0","k","12.5","3.2"\n'
    )
    (row,) = parse_ncu_csv(raw)
    assert row.time_us == pytest.approx(12.5) and row.dram_read_bytes == pytest.approx(3.2e6)
    details = (
        '"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","k","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,000"\n'
        '"0","k","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","40.5"\n'
    )
    (row,) = parse_ncu_csv(details)
    assert row.time_us == pytest.approx(2.0) and row.pct_of_peak == {"compute": 40.5}


def test_ncu_command_and_notes_record_clock_and_cache_control(tmp_path):
    ncu = NcuProfiler()
    cmd = ncu.command(["python", "w.py"], tmp_path / "report", {"profiler_ranges": True, "clock_control": "none"})
    assert cmd[cmd.index("--clock-control") + 1] == "none" and cmd[cmd.index("--cache-control") + 1] == "all"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off" and cmd[-2:] == ["python", "w.py"]
    notes = " ".join(ncu.notes({"clock_control": "none"}))
    assert "flushed all caches" in notes and "locked" not in notes
    assert "locked the GPU clocks to base" in " ".join(ncu.notes({}))


def test_ncu_recorded_on_h200():
    """Real `ncu --csv --page raw --print-units base` exports, recorded on the lent H200 by
    benchmarks/gpu_verify_cuda.sh (examples/cuda_matmul, fp32 2048^3, 5 profiled launches each;
    docs/benchmarks/cuda_backend.md)."""
    (naive,) = parse_ncu_csv((PROFILES / "ncu_raw_h200_matmul_naive.csv").read_text())
    (tiled,) = parse_ncu_csv((PROFILES / "ncu_raw_h200_matmul_tiled.csv").read_text())
    assert naive.kernel_name == "matmul_naive_kernel(const float *, const float *, float *, int)"
    assert naive.invocations == 5 and tiled.invocations == 5
    assert naive.time_us == pytest.approx(4221.2288) and tiled.time_us == pytest.approx(2451.776)
    assert naive.dram_read_bytes == pytest.approx(33607168.0) and naive.dram_write_bytes == pytest.approx(13286860.8)
    assert naive.flops >= 2 * 2048**3 and naive.flops == pytest.approx(2 * 2048**3, rel=1e-3)  # FMA counts 2
    assert naive.pct_of_peak["compute"] == pytest.approx(64.294) and tiled.pct_of_peak["compute"] == pytest.approx(
        76.148
    )
    assert naive.achieved_occupancy_pct == pytest.approx(97.786)
    assert naive.raw["block_size"] == "(16, 16, 1)" and tiled.raw["grid_size"] == "(64, 64, 1)"
