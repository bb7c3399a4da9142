"""The quality gate's section of a benchmark's ``report.html`` (drawn with the report plugin's kit)."""

from __future__ import annotations

from typing import Any


def section(kit: Any, gate: dict[str, Any]) -> Any:
    passed = gate.get("passed") is True
    banner = kit.banner(
        f"quality gate {'passed' if passed else 'FAILED'}: {gate.get('summary', '')}",
        "passed" if passed else "failed",
        detail=f"lm-eval {gate.get('lm_eval_version') or ''} via {gate.get('endpoint')}; files in lm_eval/",
    )
    rows = [
        [task, row.get("primary_metric"), row.get("value"), row.get("n_samples"), row.get("n_shot")]
        for task, row in (gate.get("tasks") or {}).items()
    ]
    scores = kit.table(["task", "metric", "value", "samples", "shots"], rows, title="lm-eval scores")
    checks = gate.get("threshold_checks") or []
    verdicts = ["passed" if c["passed"] else "failed" for c in checks]
    limits = kit.table(
        ["task", "metric", "value", "min", "max", "verdict"],
        [[c["task"], c["metric"], c["value"], c["min"], c["max"], v] for c, v in zip(checks, verdicts, strict=True)],
        title="thresholds",
        tones=verdicts,
    )
    return kit.section(
        "Quality gate (lm-eval)",
        banner,
        scores if rows else None,
        limits if checks else None,
        kit.bullets(gate.get("errors") or [], "failed"),
    )
