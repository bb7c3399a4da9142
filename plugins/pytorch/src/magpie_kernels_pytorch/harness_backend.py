"""A kernel backend built on the shared Python harness: say how to prepare the callable, get the rest.

Subclasses implement :meth:`HarnessBackend.harness_options`; correctness, timing and the
long-lived timing session of ``compare`` then come from :mod:`magpie_kernels_pytorch.harness`.
This module stays light (no torch at import): the harness is imported in the worker process only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from magpie_core.interfaces import KernelBackend

if TYPE_CHECKING:
    from magpie_core.measurement.timing import TimingSession
    from magpie_core.reports import EvaluationOutcome, EvaluationTask
    from magpie_kernels_pytorch.harness import HarnessOptions


class HarnessBackend(KernelBackend):
    #: torch and the harness, imported once into the fork server compare's workers are forked from
    worker_preload = ("magpie_kernels_pytorch.harness",)
    #: GNU OpenMP (CPU torch) spins its idle threads 300,000 rounds (~10 ms) after each parallel region: a worker
    #: that just ended its slot took a core from the next one, for most of a 15 ms slot. 10,000 rounds (~0.3 ms)
    #: still spans the gaps inside a batch of launches. On the 2-core machine, 9 candidates: the spread between
    #: processes 5-16 % -> 2-2.5 %, per-process block noise halved (2026-12-02, one run each).
    worker_env: ClassVar[dict[str, str]] = {"GOMP_SPINCOUNT": "10000"}
    captures_launches = True  # HarnessSession.capture

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        """How this backend loads and describes a kernel (runs in the worker process)."""
        raise NotImplementedError

    def evaluate(self, task: EvaluationTask) -> EvaluationOutcome:
        from magpie_kernels_pytorch.harness import evaluate_python_kernel

        return evaluate_python_kernel(task, self.harness_options(task))

    def open_timing(self, task: EvaluationTask) -> TimingSession | None:
        from magpie_kernels_pytorch.harness import open_python_timing

        return open_python_timing(task, self.harness_options(task))
