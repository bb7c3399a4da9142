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
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from magpie_kernels_pytorch.harness_backend import HarnessBackend

from magpie_core import hookimpl

if TYPE_CHECKING:
    from magpie_kernels_pytorch.harness import HarnessOptions

    from magpie_core.reports import EvaluationTask, ToolInfo


INTERPRETER_NOTE = "interpreter, timings not meaningful (TRITON_INTERPRET=1 on the CPU: no GPU here)"


def _gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


class TritonBackend(HarnessBackend):
    name = "triton"
    kernel_types = ("triton",)
    description = "Triton kernels on NVIDIA/AMD GPUs; Triton's interpreter on the CPU otherwise"
    #: ``@triton.jit`` / ``@triton.autotune`` functions, for ``discover_kernels``
    source_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        ".py": (r"@triton\.(?:jit|autotune)\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def\s+(?P<name>\w+)",),
    }

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        interpret = not _gpu_available() or task.kernel.get("options", {}).get("interpret", False)
        if interpret:
            # Must be set before triton is first imported: its standard library (tl.max, ...) is built for the
            # interpreter or the compiler once, at import, and cannot be imported again in the same process.
            if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
                raise RuntimeError(
                    "Triton's interpreter must be chosen before triton is imported, and this worker imported it "
                    "already (with a GPU build of torch, a torch.compile kernel in the same compare does); "
                    "compare this kernel without torch.compile kernels, or set MAGPIE_FORK_WORKERS=0"
                )
            os.environ["TRITON_INTERPRET"] = "1"
        import triton
        from magpie_kernels_pytorch.harness import HarnessOptions

        return HarnessOptions(
            backend=self.name,
            default_device="cpu" if interpret else None,
            timing_meaningful=not interpret,
            timing_notes=[INTERPRETER_NOTE] if interpret else [],
            environment={"triton": triton.__version__, "triton_interpreter": interpret},
        )

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo

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
