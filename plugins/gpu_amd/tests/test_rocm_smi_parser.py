"""rocm-smi's JSON, parsed (tests/data/profilers/README.md says where the recording came from)."""

from __future__ import annotations

from magpie_gpu_amd.plugin import parse_rocm_smi

from tests.conftest import DATA

PROFILES = DATA / "profilers"


def test_rocm_smi_output():
    # rocm-smi: the published JSON shape with illustrative values (tests/data/profilers/README.md)
    (amd,) = parse_rocm_smi((PROFILES / "rocm_smi_showproductname_meminfo.json").read_text())
    assert (amd.vendor, amd.name, amd.arch) == ("amd", "AMD Instinct MI210", "gfx90a")
    assert amd.memory_total_mib == 68702699520 // 2**20 and amd.source == "rocm-smi"
