"""The CUDA kernel backend: ``.cu`` sources built with nvcc, checked and timed by the shared harness.

Two ways to run a kernel, as for every backend:

- ``entry`` (built-in harness): the sources are built into a shared library and
  ``entry`` names an ``extern "C"`` launcher in it, called through ctypes with
  PyTorch tensors (see :mod:`magpie_kernels_pytorch.native`); correctness and
  device-event timing are the shared harness's, exactly as for PyTorch and Triton.
- ``testcase_command``: the sources are built into an executable at
  ``$MAGPIE_BUILD_DIR/<id>`` (or ``options.binary``) that the testcase runs.

The build always passes ``-Xptxas -v``; registers, shared memory, stack and
spills per kernel land in ``compile.resources``. The arch is ``options.arch``,
else ``$MAGPIE_CUDA_ARCH``, else the visible GPU's compute capability from
nvidia-smi, else ``sm_90``. A config's own ``compile_command`` replaces the
whole build; its output is still read for resources and error locations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_kernels_pytorch.harness_backend import HarnessBackend

from magpie_core import hookimpl
from magpie_kernels_cuda.gpu_targets import nvidia_gpus
from magpie_kernels_cuda.nvcc import build_command, find_nvcc, nvcc_version, parse_ptxas, resources_summary, target_arch

if TYPE_CHECKING:
    from magpie_kernels_pytorch.harness import HarnessOptions

    from magpie_core.config.kernel import KernelConfig
    from magpie_core.reports import CompileResult, EvaluationTask, ToolInfo

NO_GPU = "compiled; no NVIDIA GPU to run on"


class CudaBackend(HarnessBackend):
    name = "cuda"
    kernel_types = ("cuda",)
    description = 'CUDA .cu sources built with nvcc (-Xptxas -v resources); harness via an extern "C" launcher'

    def compile(self, kernel: KernelConfig, build_dir: Path) -> CompileResult | None:
        from magpie_kernels_pytorch.native import native_build  # every command loads this module: import when used

        from magpie_core.reports import CompileResult, StageStatus

        nvcc = find_nvcc()
        if nvcc is None:
            return CompileResult(
                status=StageStatus.FAILED, message="nvcc not found: install the CUDA toolkit or put nvcc on PATH"
            )
        arch, arch_source = target_arch(kernel.options)
        result = native_build(
            kernel,
            build_dir,
            compiler="nvcc",
            command=lambda sources, output, shared, extra: build_command(nvcc, sources, output, arch, shared, extra),
            env=dict(kernel.env),
            resources=lambda output: resources_summary(parse_ptxas(output)),
        )
        result.resources.update({"arch": arch, "arch_source": arch_source, "compiler": f"nvcc {nvcc_version(nvcc)}"})
        return result

    def annotate_compile(self, kernel: KernelConfig, result: CompileResult) -> CompileResult:
        from magpie_core.reports import StageStatus

        result.resources.update(resources_summary(parse_ptxas(result.log)))
        if result.status == StageStatus.FAILED:
            from magpie_kernels_pytorch.native import describe_failure

            result.message = describe_failure(result.log, result.message or "compile failed")
        return result

    def cannot_run(self, kernel: KernelConfig) -> str | None:
        if kernel.device == "cpu" or nvidia_gpus():
            return None
        try:
            import torch

            if torch.cuda.is_available() and not getattr(torch.version, "hip", None):
                return None
        except ImportError:
            pass
        return NO_GPU

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        from magpie_kernels_pytorch.harness import HarnessOptions
        from magpie_kernels_pytorch.native import load_native

        nvcc = find_nvcc()
        return HarnessOptions(
            backend=self.name,
            load_entry=lambda kernel, t: load_native(t.build_artifacts),
            environment={"nvcc": nvcc_version(nvcc) if nvcc else None, "launcher": 'ctypes extern "C"'},
        )

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo

        nvcc = find_nvcc()
        return [ToolInfo(name="nvcc", path=nvcc, version=nvcc_version(nvcc) if nvcc else None, found=bool(nvcc))]


@hookimpl
def magpie_register_kernel_backends(register: Callable[[Any], None]) -> None:
    register(CudaBackend())
