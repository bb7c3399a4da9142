"""rocminfo's agent names, parsed for the GPU architectures."""

from __future__ import annotations

from magpie_kernels_hip.gpu_targets import parse_rocminfo


def test_rocminfo_output():
    assert parse_rocminfo("  Name:                    gfx942\n  Name:  AMD EPYC\n") == ["gfx942"]
