"""The HIP kernel backend: ``.hip`` sources built with hipcc for an AMD offload arch.

Like the CUDA backend: with ``entry`` the sources become a shared library whose
``extern "C"`` launcher the shared harness calls through ctypes (PyTorch's ROCm
build, device-event timing); with ``testcase_command`` they become an
executable at ``$MAGPIE_BUILD_DIR/<id>`` (or ``options.binary``).

The offload arch is ``options.offload_arch``, else ``$MAGPIE_OFFLOAD_ARCH``,
else the first GPU amd-smi / rocm-smi / rocminfo reports. hipcc always runs
with ``HIP_PLATFORM=amd`` (with nvcc on the PATH it would otherwise pick the
NVIDIA platform). Resources per kernel (VGPRs, SGPRs, AGPRs, LDS, scratch,
spills, occupancy) come from clang's ``-Rpass-analysis=kernel-resource-usage``.

On a machine without an AMD GPU the kernel is compiled, then correctness and
performance are ``not_run`` with "compiled; no AMD GPU to run on": neither a
failure nor a pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_kernels_pytorch.harness_backend import HarnessBackend

from magpie_core import hookimpl
from magpie_kernels_hip.gpu_targets import amd_gpus, rocminfo_targets
from magpie_kernels_hip.hipcc import (
    ARCH_ENV,
    build_command,
    find_hipcc,
    parse_resource_remarks,
    rocm_version,
    unsupported_arch_message,
)

if TYPE_CHECKING:
    from magpie_kernels_pytorch.harness import HarnessOptions

    from magpie_core.config.kernel import KernelConfig
    from magpie_core.reports import CompileResult, EvaluationTask, ToolInfo

NO_GPU = "compiled; no AMD GPU to run on"


def offload_arch(options: dict[str, Any]) -> tuple[str | None, str]:
    """The arch to compile for and where it came from (``None``: nothing configured or detected)."""
    if options.get("offload_arch"):
        return str(options["offload_arch"]), "options.offload_arch"
    if os.environ.get(ARCH_ENV):
        return os.environ[ARCH_ENV], ARCH_ENV
    gpus = [g for g in amd_gpus() if g.arch]
    if gpus:
        return str(gpus[0].arch), f"detected {gpus[0].name} ({gpus[0].source})"
    targets = rocminfo_targets()
    if targets:
        return targets[0], "detected (rocminfo)"
    return None, "none"


def has_amd_gpu() -> bool:
    if amd_gpus() or rocminfo_targets():
        return True
    try:
        import torch

        return bool(getattr(torch.version, "hip", None)) and torch.cuda.is_available()
    except ImportError:
        return False


class HipBackend(HarnessBackend):
    name = "hip"
    kernel_types = ("hip",)
    description = 'HIP .hip sources built with hipcc for an AMD offload arch; harness via an extern "C" launcher'

    def compile(self, kernel: KernelConfig, build_dir: Path) -> CompileResult | None:
        from magpie_core.reports import CompileResult, StageStatus

        hipcc = find_hipcc()
        if hipcc is None:
            return CompileResult(
                status=StageStatus.FAILED,
                message="hipcc not found: install ROCm (or Debian's hipcc package: scripts/setup_hipcc.sh)",
            )
        arch, arch_source = offload_arch(kernel.options)
        if arch is None:
            return CompileResult(
                status=StageStatus.FAILED,
                message=f"no AMD GPU detected and no offload arch configured: set options.offload_arch "
                f"(e.g. gfx942, gfx950, gfx90a) or ${ARCH_ENV}",
            )
        from magpie_kernels_pytorch.native import native_build  # every command loads this module: import when used

        version = rocm_version(hipcc)
        result = native_build(
            kernel,
            build_dir,
            compiler="hipcc",
            command=lambda sources, output, shared, extra: build_command(hipcc, sources, output, arch, shared, extra),
            env={"HIP_PLATFORM": "amd", **kernel.env},
            resources=parse_resource_remarks,
        )
        if result.status == StageStatus.FAILED:
            result.message = unsupported_arch_message(result.log, arch, version) or result.message
        result.resources.update(
            {"offload_arch": arch, "arch_source": arch_source, "compiler": f"hipcc (ROCm {version})"}
        )
        return result

    def annotate_compile(self, kernel: KernelConfig, result: CompileResult) -> CompileResult:
        from magpie_core.reports import StageStatus

        result.resources.update(parse_resource_remarks(result.log))
        if result.status == StageStatus.FAILED:
            from magpie_kernels_pytorch.native import describe_failure

            hipcc = find_hipcc()
            arch = str(kernel.options.get("offload_arch") or os.environ.get(ARCH_ENV) or "the requested arch")
            result.message = unsupported_arch_message(
                result.log, arch, rocm_version(hipcc) if hipcc else None
            ) or describe_failure(result.log, result.message or "compile failed")
        return result

    def cannot_run(self, kernel: KernelConfig) -> str | None:
        return None if has_amd_gpu() else NO_GPU

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        from magpie_kernels_pytorch.harness import HarnessOptions
        from magpie_kernels_pytorch.native import load_native

        hipcc = find_hipcc()
        return HarnessOptions(
            backend=self.name,
            load_entry=lambda kernel, t: load_native(t.build_artifacts),
            environment={"rocm": rocm_version(hipcc) if hipcc else None, "launcher": 'ctypes extern "C"'},
        )

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo

        hipcc = find_hipcc()
        version = rocm_version(hipcc) if hipcc else None
        return [ToolInfo(name="hipcc", path=hipcc, version=f"ROCm {version}" if version else None, found=bool(hipcc))]


@hookimpl
def magpie_register_kernel_backends(register: Callable[[Any], None]) -> None:
    register(HipBackend())
