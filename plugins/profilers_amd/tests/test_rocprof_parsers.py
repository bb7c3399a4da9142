"""rocprofv3's kernel trace and rocprof-compute's tables, parsed
(tests/data/profilers/README.md says where each recording came from)."""

from __future__ import annotations

import pytest
from magpie_profilers_amd.rocprof_compute import parse_analysis
from magpie_profilers_amd.rocprofv3 import parse_kernel_trace

from tests.conftest import DATA

PROFILES = DATA / "profilers"


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
