"""``analyze``: every kernel of a file evaluated on its own (:func:`~.jobs.evaluate_kernel`), one report."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from magpie_core.config.common import dump
from magpie_core.config.kernel import KernelConfigFile
from magpie_core.machine.hardware import write_report
from magpie_core.pipelines.jobs import Progress, interrupted, interrupted_result, run_jobs
from magpie_core.pipelines.kernel_files import check_backends, environment_options, kernel_jobs
from magpie_core.pipelines.kernel_reports import AnalyzeReport, KernelResult, summary_row
from magpie_core.runtime.workspace import create_workspace


def analyze(
    file: KernelConfigFile,
    *,
    config_dir: Path,
    output_dir: Path,
    environment: str = "local",
    workers: int = 1,
    measure_performance: bool = True,
    progress: Progress | None = None,
    environment_defaults: dict[str, Any] | None = None,
) -> AnalyzeReport:
    check_backends(file)
    options = environment_options(file, environment_defaults)
    label = file.all_kernels()[0].id
    ws = create_workspace(output_dir, "analyze", label)
    handler = ws.attach_log()
    settings = {"environment": environment, "workers": workers, "measure_performance": measure_performance}
    jobs = kernel_jobs(file, config_dir, ws, measure_performance)
    done: dict[int, KernelResult] = {}
    try:
        ws.snapshot_config(dump(file))
        results = run_jobs(jobs, environment, workers, progress, options, on_done=done.__setitem__)
        report = AnalyzeReport(
            workspace=str(ws.path), results=results, summary=[summary_row(r) for r in results], settings=settings
        )
        write_report(report, ws.report_path)
        return report
    except KeyboardInterrupt:
        results = [done.get(i) or interrupted_result(job) for i, job in enumerate(jobs)]
        AnalyzeReport(
            workspace=str(ws.path),
            results=results,
            summary=[summary_row(r) for r in results],
            settings=settings,
            interrupted=True,
        ).write(ws.report_path)
        raise interrupted("analyze", len(done), len(jobs), ws.report_path) from None
    finally:
        logging.getLogger("magpie").removeHandler(handler)
