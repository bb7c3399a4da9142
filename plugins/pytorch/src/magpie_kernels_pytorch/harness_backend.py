"""A kernel backend built on the shared Python harness: say how to prepare the callable, get the rest.

Subclasses implement :meth:`HarnessBackend.harness_options`; correctness, timing and the
long-lived timing session of ``compare`` then come from :mod:`magpie_kernels_pytorch.harness`.
This module stays light (no torch at import): the harness is imported in the worker process only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magpie_core.interfaces import KernelBackend

if TYPE_CHECKING:
    from magpie_core.reports import EvaluationOutcome, EvaluationTask
    from magpie_core.timing import TimingSession
    from magpie_kernels_pytorch.harness import HarnessOptions


class HarnessBackend(KernelBackend):
    #: torch and the harness, imported once into the fork server compare's workers are forked from
    worker_preload = ("magpie_kernels_pytorch.harness",)

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        """How this backend loads and describes a kernel (runs in the worker process)."""
        raise NotImplementedError

    def evaluate(self, task: EvaluationTask) -> EvaluationOutcome:
        from magpie_kernels_pytorch.harness import evaluate_python_kernel

        return evaluate_python_kernel(task, self.harness_options(task))

    def open_timing(self, task: EvaluationTask) -> TimingSession | None:
        from magpie_kernels_pytorch.harness import open_python_timing

        return open_python_timing(task, self.harness_options(task))
