"""The ``magpie kernelbench`` command group (see :mod:`magpie_kernels_pytorch.kernelbench_run`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from magpie_kernels_pytorch.kernelbench import KernelBenchBlock
from magpie_kernels_pytorch.kernelbench_run import fast_p, run

kernelbench_app = typer.Typer(help="KernelBench problem sets: every problem x solution, fast_p with magpie's verdicts")


def _compare(output_dir: Path, measure_performance: bool) -> Any:
    def compare_one(block: KernelBenchBlock, base: Path) -> dict[str, Any]:
        from magpie_core.config.kernel import KernelConfigFile
        from magpie_core.pipelines.compare import compare
        from magpie_core.pipelines.kernels import prepare_kernel_file

        file = prepare_kernel_file(KernelConfigFile.model_validate({"kernelbench": block.model_dump()}), base)
        report = compare(file, config_dir=base, output_dir=output_dir, measure_performance=measure_performance)
        return json.loads(report.model_dump_json())

    return compare_one


@kernelbench_app.command("run")
def run_command(
    problems_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="KernelBench problem files"),
    solutions: Path = typer.Option(..., "--solutions", exists=True, file_okay=False, help="DIR/<problem>/*.py"),
    results: Path = typer.Option(Path("kernelbench_results.jsonl"), "--results", help="appended JSONL; resumable"),
    output_dir: Path = typer.Option(Path("magpie_kernelbench"), "--output-dir", "-o", help="compare workspaces"),
    no_perf: bool = typer.Option(False, "--no-perf", help="correctness only"),
) -> None:
    """Compare every problem's solutions with its reference; print fast_p (KernelBench's, and verified)."""
    rows = run(problems_dir, solutions, results, _compare(output_dir, not no_perf))
    typer.echo(json.dumps({"rows": len(rows), "fast_p": fast_p(rows, False), "fast_p_verified": fast_p(rows, True)}))
