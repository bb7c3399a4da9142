"""A third-party plugin, written the way the plugin-authoring guide says.

It adds kernel type ``numpy`` (a NumPy function checked against a reference
and timed with the core's timing method) and a kernel-name parser for
``mylib_<op>_<dtype>_<tile>`` kernels.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np

from magpie_core import hookimpl
from magpie_core.interfaces import KernelBackend, KernelNameParser
from magpie_core.reports import (
    CorrectnessResult,
    EvaluationOutcome,
    EvaluationTask,
    ParsedKernelName,
    PerformanceResult,
    StageStatus,
)
from magpie_core.stats import summarize
from magpie_core.timing import TimingSettings, measure


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


class NumpyClock:
    cache_bytes = 32 << 20

    def time_batch(self, launch, n):
        start = time.perf_counter_ns()
        for i in range(n):
            launch(i)
        return (time.perf_counter_ns() - start) / 1000

    def host_overhead_us(self):
        return None


class NumpyBackend(KernelBackend):
    name = "numpy"
    kernel_types = ("numpy",)

    def evaluate(self, task: EvaluationTask) -> EvaluationOutcome:
        kernel = task.kernel
        file, fn_name = kernel["entry"].split(":")
        path = Path.cwd() / file
        fn = _load(path, fn_name)
        ref = _load(path, kernel["reference"].split(":")[-1])
        inputs = _load(path, "get_inputs")()
        ok = np.allclose(fn(*inputs), ref(*inputs))
        correctness = CorrectnessResult(
            status=StageStatus.PASSED if ok else StageStatus.FAILED, method="reference", trials=1
        )
        run = measure(NumpyClock(), lambda i: fn(*inputs), TimingSettings(warmup_ms=5, min_batch_us=200))
        performance = PerformanceResult(
            status=StageStatus.PASSED, timer="numpy", timing=summarize(run.samples_us), samples_us=run.samples_us
        )
        return EvaluationOutcome(
            correctness=correctness, performance=performance, environment={"numpy": np.__version__}
        )


class MyLibParser(KernelNameParser):
    name = "mylib"
    priority = 10

    def parse(self, name, context=None):
        if not name.startswith("mylib_"):
            return None
        _, op, dtype, tile = name.split("_", 3)
        category = {"gemm": "gemm", "attn": "attention"}.get(op, "other")
        return ParsedKernelName(name=name, family="mylib", category=category, function=op, dtype=dtype, tile=tile)


@hookimpl
def magpie_register_kernel_backends(register):
    register(NumpyBackend())


@hookimpl
def magpie_register_kernel_name_parsers(register):
    register(MyLibParser())
