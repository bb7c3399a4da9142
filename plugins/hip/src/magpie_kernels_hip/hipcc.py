"""hipcc: finding it, its ROCm version, the offload arch, the build command and resource remarks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

ARCH_ENV = "MAGPIE_OFFLOAD_ARCH"
#: what the brief of each arch needs beyond the compiler's own answer (used only to explain a refusal)
NEWER_ROCM = "gfx942 and gfx950 (MI300/MI350) need ROCm 6 or later"


def find_hipcc() -> str | None:
    found = shutil.which("hipcc")
    if found:
        return found
    root = os.environ.get("ROCM_PATH", "/opt/rocm")
    candidate = Path(root) / "bin" / "hipcc"
    return str(candidate) if candidate.is_file() else None


@cache
def rocm_version(hipcc: str) -> str | None:
    """``HIP version: 5.2.21153-0`` → ``5.2`` (the ROCm release the compiler comes from)."""
    try:
        out = subprocess.run(
            [hipcc, "--version"], capture_output=True, text=True, timeout=60, env={**os.environ, "HIP_PLATFORM": "amd"}
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"HIP version:\s*(\d+)\.(\d+)", out)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def build_command(
    hipcc: str, sources: list[Path], output: Path, arch: str, shared: bool, extra: list[str]
) -> list[str]:
    argv = [hipcc, f"--offload-arch={arch}", "-O3", "-Rpass-analysis=kernel-resource-usage"]
    if shared:
        argv += ["-shared", "-fPIC"]
    return [*argv, *extra, "-o", str(output), *(str(s) for s in sources)]


def unsupported_arch_message(output: str, arch: str, version: str | None) -> str | None:
    """A clear message when the installed ROCm's clang cannot target ``arch``."""
    if not re.search(r"invalid target ID|unsupported .*(gpu|offload) arch|Invalid offload arch", output, re.I):
        return None
    rocm = f"ROCm {version}" if version else "this ROCm (version unknown)"
    return (
        f"hipcc from {rocm} cannot compile for {arch} (its clang reports an invalid target ID); "
        f"{NEWER_ROCM}: install a newer ROCm or set options.offload_arch to a target it supports (e.g. gfx90a)"
    )


_REMARK = re.compile(r"remark:\s+(?P<key>[A-Za-z][\w ]*?(?: \[[^\]]+\])?):\s*(?P<value>\S+)\s+\[-Rpass-analysis")
_KEYS = {
    "SGPRs": "sgprs",
    "VGPRs": "vgprs",
    "AGPRs": "agprs",
    "ScratchSize [bytes/lane]": "scratch_bytes_per_lane",
    "Occupancy [waves/SIMD]": "occupancy_waves_per_simd",
    "SGPRs Spill": "sgpr_spills",
    "VGPRs Spill": "vgpr_spills",
    "LDS Size [bytes/block]": "shared_memory_bytes",
}


def parse_resource_remarks(output: str) -> dict[str, Any]:
    """Per-kernel registers, LDS, scratch, spills from ``-Rpass-analysis=kernel-resource-usage``."""
    kernels: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in output.splitlines():
        match = _REMARK.search(line)
        if not match:
            continue
        key, value = match["key"].strip(), match["value"]
        if key == "Function Name":
            current = kernels.setdefault(value, {"mangled": value})
        elif current is not None and key in _KEYS and value.lstrip("-").isdigit():
            current[_KEYS[key]] = int(value)
    if not kernels:
        return {}
    from magpie_trace.demangle import demangle_names

    names = demangle_names(list(kernels))
    named = {}
    for mangled, info in kernels.items():
        info["registers"] = info.get("vgprs", 0) + info.get("agprs", 0)
        info["spills"] = bool(info.get("sgpr_spills") or info.get("vgpr_spills") or info.get("scratch_bytes_per_lane"))
        named[names[mangled]] = info
    return {
        "kernels": named,
        "max_registers": max(k["registers"] for k in named.values()),
        "max_shared_memory_bytes": max(k.get("shared_memory_bytes", 0) for k in named.values()),
        "spills": any(k["spills"] for k in named.values()),
        "source": "clang -Rpass-analysis=kernel-resource-usage",
    }
