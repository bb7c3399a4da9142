"""A third-party plugin, written the way the plugin-authoring guide says.

It adds kernel type ``numpy`` (a NumPy function checked against a reference
and timed with the core's timing method), a kernel-name parser for
``mylib_<op>_<dtype>_<tile>`` kernels, and — with exactly the powers of the
built-in gap and inference analyses — a trace analyzer ``kernel-count``, the
command ``magpie kernel-count`` that runs it, and the MCP tool
``example_kernel_count``.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import typer

from magpie_core import hookimpl
from magpie_core.interfaces import KernelBackend, KernelNameParser, TraceAnalyzer
from magpie_core.measurement.stats import summarize
from magpie_core.measurement.timing import TimingSettings, measure
from magpie_core.reports import (
    CorrectnessResult,
    EvaluationOutcome,
    EvaluationTask,
    ParsedKernelName,
    PerformanceResult,
    StageStatus,
)


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


class KernelCount(TraceAnalyzer):
    """Kernel launches per name, read with the core's public trace library."""

    name = "kernel-count"
    description = "count kernel events per name"

    def analyze(self, traces, options, out_dir):
        from magpie_trace import load_trace

        counts = Counter(e.name for e in load_trace(traces).events if e.cat == "kernel")
        top = dict(counts.most_common(int(options.get("top", 5))))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "kernel_count.json").write_text(json.dumps(top))
        return {"kernels": top, "output": str(out_dir / "kernel_count.json")}


@hookimpl
def magpie_register_trace_analyzers(register):
    register(KernelCount())


@hookimpl
def magpie_register_commands(cli):
    @cli.command("kernel-count")
    def kernel_count(trace: Path, top: int = 5, output_dir: Path = Path("kernel_count")):
        """Count kernel events per name in a trace (a third-party command)."""
        from magpie_core.plugins import get_plugin_manager

        summary = get_plugin_manager().get("trace_analyzer", "kernel-count").analyze(trace, {"top": top}, output_dir)
        typer.echo(json.dumps(summary))


def example_kernel_count(trace: str, top: int = 5) -> dict[str, int]:
    """Count kernel events per name in a trace file (a third-party MCP tool)."""
    from magpie_trace import load_trace

    counts = Counter(e.name for e in load_trace(Path(trace)).events if e.cat == "kernel")
    return dict(counts.most_common(top))


@hookimpl
def magpie_register_mcp_tools(register):
    register(example_kernel_count)
