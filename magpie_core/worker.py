"""Isolated worker: evaluates one kernel in its own process.

``python -m magpie_core.worker TASK.json OUTCOME.json`` loads the backend
plugin named by the task and writes an
:class:`~magpie_core.reports.EvaluationOutcome`. A crash or hang here only
fails this kernel; the parent reads the exit status and the log.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import (
    CorrectnessResult,
    EvaluationOutcome,
    EvaluationTask,
    PerformanceResult,
    StageStatus,
)

EXIT_EXCEPTION = 3


def main(argv: list[str]) -> int:
    task_path, outcome_path = Path(argv[0]), Path(argv[1])
    task = EvaluationTask.model_validate_json(task_path.read_text())
    try:
        backend = get_plugin_manager().get("kernel_backend", task.kernel_type)
        outcome = backend.evaluate(task)
        code = 0
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        sys.stderr.write(text)
        message = f"{type(exc).__name__}: {exc}"
        outcome = EvaluationOutcome(
            correctness=CorrectnessResult(status=StageStatus.ERROR, message=message),
            performance=PerformanceResult(status=StageStatus.SKIPPED, message="correctness did not complete"),
        )
        code = EXIT_EXCEPTION
    outcome_path.write_text(outcome.model_dump_json(indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
