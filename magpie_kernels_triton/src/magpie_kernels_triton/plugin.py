"""The Triton kernel backend.

Triton kernels are Python callables (a wrapper that launches ``@triton.jit``
functions), so the shared PyTorch harness checks and times them. On a machine
without a GPU the kernel runs under Triton's interpreter (``TRITON_INTERPRET=1``)
on CPU tensors: correctness is real, timings are reported but marked not
meaningful and never ranked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any, ClassVar

from magpie_core import hookimpl
from magpie_core.interfaces import KernelBackend
from magpie_core.reports import EvaluationOutcome, EvaluationTask, ToolInfo

INTERPRETER_NOTE = "interpreter, timings not meaningful (TRITON_INTERPRET=1 on the CPU: no GPU here)"


def _gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


class TritonBackend(KernelBackend):
    name = "triton"
    kernel_types = ("triton",)
    description = "Triton kernels on NVIDIA/AMD GPUs; Triton's interpreter on the CPU otherwise"
    #: ``@triton.jit`` / ``@triton.autotune`` functions, for ``discover_kernels``
    source_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        ".py": (r"@triton\.(?:jit|autotune)\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def\s+(?P<name>\w+)",),
    }

    def evaluate(self, task: EvaluationTask) -> EvaluationOutcome:
        interpret = not _gpu_available() or task.kernel.get("options", {}).get("interpret", False)
        if interpret:
            # Must be set before triton is imported by the user's module.
            os.environ["TRITON_INTERPRET"] = "1"
        import triton
        from magpie_kernels_pytorch.harness import HarnessOptions, evaluate_python_kernel

        return evaluate_python_kernel(
            task,
            HarnessOptions(
                backend=self.name,
                default_device="cpu" if interpret else None,
                timing_meaningful=not interpret,
                timing_notes=[INTERPRETER_NOTE] if interpret else [],
                environment={"triton": triton.__version__, "triton_interpreter": interpret},
            ),
        )

    def tools(self) -> list[ToolInfo]:
        try:
            import triton

            version: str | None = triton.__version__
        except ImportError:
            version = None
        ptxas = shutil.which("ptxas")
        return [ToolInfo(name="triton", version=version, found=version is not None, path=ptxas and f"ptxas: {ptxas}")]


@hookimpl
def magpie_register_kernel_backends(register: Callable[[Any], None]) -> None:
    register(TritonBackend())
