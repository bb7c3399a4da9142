"""nvcc: finding it, the target arch, the build command, and reading ``-Xptxas -v``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from magpie_kernels_cuda.gpu_targets import nvidia_gpus

DEFAULT_ARCH = "sm_90"
ARCH_ENV = "MAGPIE_CUDA_ARCH"


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


@cache
def nvcc_version(nvcc: str) -> str | None:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return match.group(2) if match else None


def normalize_arch(value: str) -> str:
    """``9.0``, ``90``, ``sm_90``, ``sm90`` → ``sm_90`` (``sm_90a``, ``compute_90`` kept)."""
    text = str(value).strip().lower()
    if re.fullmatch(r"\d+\.\d+", text):
        major, minor = text.split(".")
        return f"sm_{major}{minor}"
    if re.fullmatch(r"\d+[a-z]?", text):
        return f"sm_{text}"
    if re.fullmatch(r"sm\d+[a-z]?", text):
        return "sm_" + text[2:]
    return text


def target_arch(options: dict[str, Any]) -> tuple[str, str]:
    """The arch to compile for and where it came from."""
    if options.get("arch"):
        return normalize_arch(str(options["arch"])), "options.arch"
    if os.environ.get(ARCH_ENV):
        return normalize_arch(os.environ[ARCH_ENV]), ARCH_ENV
    gpus = nvidia_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    chosen = next((g for g in gpus if visible.isdigit() and g.index == int(visible)), gpus[0] if gpus else None)
    if chosen is not None and chosen.arch:
        return chosen.arch, f"detected {chosen.name} (nvidia-smi)"
    return DEFAULT_ARCH, f"no NVIDIA GPU detected: default {DEFAULT_ARCH} (set options.arch or {ARCH_ENV})"


def build_command(nvcc: str, sources: list[Path], output: Path, arch: str, shared: bool, extra: list[str]) -> list[str]:
    argv = [nvcc, "-O3", f"-arch={arch}", "-Xptxas", "-v", "-lineinfo"]
    if shared:
        argv += ["-shared", "-Xcompiler", "-fPIC"]
    return [*argv, *extra, "-o", str(output), *(str(s) for s in sources)]


# --- ptxas -v ------------------------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


def demangle(names: list[str]) -> dict[str, str]:
    """Kernel names as ptxas reports them -> demangled (core demangler; ``cu++filt`` first, also beside nvcc)."""
    from magpie_trace.demangle import demangle_names

    nvcc = find_nvcc()
    return demangle_names(names, ("cu++filt", "c++filt", *([Path(nvcc).parent / "cu++filt"] if nvcc else [])))


def parse_ptxas(output: str) -> dict[str, Any]:
    """Per-kernel registers, shared/constant memory, stack and spills from ``-Xptxas -v`` output."""
    kernels: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in output.splitlines():
        if m := _ENTRY.search(line):
            current = kernels.setdefault(m.group(1), {"mangled": m.group(1), "arch": m.group(2)})
            continue
        if m := _PROPS.search(line):
            current = kernels.setdefault(m.group(1), {"mangled": m.group(1)})
            continue
        if current is None:
            continue
        if m := _FRAME.search(line):
            current["stack_frame_bytes"] = int(m.group(1))
            current["spill_store_bytes"] = int(m.group(2))
            current["spill_load_bytes"] = int(m.group(3))
        if m := _USED.search(line):
            current["registers"] = int(m.group(1))
            smem = _SMEM.search(line)
            current["shared_memory_bytes"] = int(smem.group(1)) if smem else 0
            if b := _BARRIERS.search(line):
                current["barriers"] = int(b.group(1))
            cmem = {f"cmem[{bank}]": int(size) for size, bank in _CMEM.findall(line)}
            if cmem:
                current["constant_memory_bytes"] = cmem
    names = demangle(list(kernels))
    result = {}
    for mangled, info in kernels.items():
        info["spills"] = bool(info.get("spill_store_bytes") or info.get("spill_load_bytes"))
        result[names[mangled]] = info
    return result


def resources_summary(kernels: dict[str, Any]) -> dict[str, Any]:
    """The ``resources`` block of a CompileResult: per kernel, plus the worst case over kernels."""
    if not kernels:
        return {}
    return {
        "kernels": kernels,
        "max_registers": max(k.get("registers", 0) for k in kernels.values()),
        "max_shared_memory_bytes": max(k.get("shared_memory_bytes", 0) for k in kernels.values()),
        "spills": any(k.get("spills") for k in kernels.values()),
        "source": "ptxas -v",
    }
