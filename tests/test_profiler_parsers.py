"""Profiler and GPU-tool parsers on recorded outputs (tests/data/profilers/README.md says where
each came from; the ncu and rocprof-compute files are synthetic until real recordings replace them)."""

from __future__ import annotations

import pytest
from magpie_gpu_amd.plugin import parse_rocm_smi
from magpie_gpu_nvidia.plugin import parse_query_csv
from magpie_kernels_hip.gpus import parse_rocminfo
from magpie_profilers_amd.rocprof_compute import parse_analysis
from magpie_profilers_amd.rocprofv3 import parse_kernel_trace
from magpie_profilers_nvidia.ncu import NcuProfiler, parse_ncu_csv

from .conftest import DATA

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


def test_rocprofv3_kernel_trace_recordings():
    # Real: amd/HPCTrainingExamples Rocprofv3/HIP/README.md (older column set).
    rows = {r.kernel_name: r for r in parse_kernel_trace((PROFILES / "rocprofv3_kernel_trace_jacobi.csv").read_text())}
    norm = rows["NormKernel1(int, double, double, double const*, double*)"]
    assert norm.time_us == pytest.approx((4484384528106260 - 4484384527705139) / 1e3)
    assert norm.raw["lds_bytes"] == 1024 and norm.raw["workgroup_size"] == [128, 1, 1] and norm.source == "rocprofv3"
    assert len(rows) == 4
    # Real: ROCm/rocprofiler-sdk docs example (newer column set with VGPR/SGPR counts).
    (row,) = parse_kernel_trace((PROFILES / "rocprofv3_kernel_trace_sdk_docs.csv").read_text())
    assert row.kernel_name.startswith("void addition_kernel<float>") and row.time_us == pytest.approx(10.52)
    assert row.raw["vgprs"] == 8 and row.raw["sgprs"] == 16 and row.raw["grid_size"] == [1024, 1024, 1]


def test_rocprof_compute_tables():
    # Synthetic (see README): no AMD GPU was available to record rocprof-compute output.
    rows = {r.kernel_name: r for r in parse_analysis(PROFILES / "rocprof_compute_dfs_synthetic")}
    va = rows["vector_add(float const*, float const*, float*, int)"]  # the wrapped name is rejoined
    assert va.invocations == 5 and va.time_us == pytest.approx(14.5)
    assert va.pct_of_peak == {"compute": 0.6, "dram": 65.5} and va.achieved_occupancy_pct == 42.3
    assert va.flops == pytest.approx(289.3e9 * 14.5e-6) and va.raw["hbm_bytes"] == pytest.approx(3471e9 * 14.5e-6)
    assert "(all kernels)" not in rows  # one kernel besides the runtime's helper: Speed-of-Light is its own


def test_gpu_tool_outputs():
    # rocm-smi: the published JSON shape with illustrative values (tests/data/profilers/README.md)
    (amd,) = parse_rocm_smi((PROFILES / "rocm_smi_showproductname_meminfo.json").read_text())
    assert (amd.vendor, amd.name, amd.arch) == ("amd", "AMD Instinct MI210", "gfx90a")
    assert amd.memory_total_mib == 68702699520 // 2**20 and amd.source == "rocm-smi"
    # nvidia-smi: the H200's values as read on the lent machine (docs/benchmarks/kernel_timing.md)
    (nv,) = parse_query_csv((PROFILES / "nvidia_smi_query.csv").read_text())
    assert (nv.index, nv.name, nv.arch, nv.memory_total_mib, nv.driver) == (
        0,
        "NVIDIA H200",
        "sm_90",
        143771,
        "580.159.04",
    )
    assert parse_rocminfo("  Name:                    gfx942\n  Name:  AMD EPYC\n") == ["gfx942"]


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
