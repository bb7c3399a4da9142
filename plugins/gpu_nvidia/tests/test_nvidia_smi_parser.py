"""nvidia-smi's query CSV, parsed (tests/data/profilers/README.md says where the recording came from)."""

from __future__ import annotations

from magpie_gpu_nvidia.plugin import parse_query_csv

from tests.conftest import DATA

PROFILES = DATA / "profilers"


def test_nvidia_smi_output():
    # nvidia-smi: the H200's values as read on the lent machine (docs/benchmarks/kernel_timing.md)
    (nv,) = parse_query_csv((PROFILES / "nvidia_smi_query.csv").read_text())
    assert (nv.index, nv.name, nv.arch, nv.memory_total_mib, nv.driver) == (
        0,
        "NVIDIA H200",
        "sm_90",
        143771,
        "580.159.04",
    )
