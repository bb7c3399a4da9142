"""lm-eval's results JSON (``results_<date>.json``) -> per-task metrics, and the gate's verdict on them.

lm-eval names a metric ``<metric>,<filter>`` (``exact_match,none``, ``exact_match,strict-match``) and
its standard error ``<metric>_stderr,<filter>``. Without thresholds the gate passes when every task
asked for came back with a number (AMD Magpie's meaning: the evaluation produced evidence); with
thresholds, each one must hold too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from magpie_quality_gate.config import Bound

#: the metric reported first for a task when none is configured (the first one a task has)
PRIMARY_METRICS = (
    "exact_match,strict-match",
    "exact_match,flexible-extract",
    "exact_match,none",
    "acc_norm,none",
    "acc,none",
    "pass@1,none",
)


class ResultsError(ValueError):
    """lm-eval's results file is missing or not what lm-eval writes."""


def find_results(output_dir: Path) -> Path:
    """The newest ``results_*.json`` lm-eval wrote under ``output_dir`` (it adds a folder per model)."""
    found = sorted(output_dir.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ResultsError(f"lm-eval wrote no results_*.json under {output_dir}")
    return found[-1]


def parse_results(path: Path) -> dict[str, Any]:
    """``{"tasks": {task: {"metrics", "stderr", "n_samples", "n_shot", "version"}}, "lm_eval_version"}``."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not readable as JSON: {exc}") from None
    raw = data.get("results") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        raise ResultsError(f"{path}: no 'results' object (not an lm-eval results file)")
    samples = data.get("n-samples") or {}
    tasks = {}
    for task, entry in raw.items():
        if not isinstance(entry, dict):
            continue
        metrics, stderr = {}, {}
        for name, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue  # "N/A" stderr, sample_len and the like
            if "_stderr," in name:
                stderr[name.replace("_stderr,", ",", 1)] = float(value)
            elif "," in name:
                metrics[name] = float(value)
        tasks[task] = {
            "metrics": metrics,
            "stderr": stderr,
            "n_samples": (samples.get(task) or {}).get("effective"),
            "n_shot": (data.get("n-shot") or {}).get(task),
            "version": (data.get("versions") or {}).get(task),
        }
    return {"tasks": tasks, "lm_eval_version": data.get("lm_eval_version")}


def metric_key(metrics: dict[str, float], name: str) -> str | None:
    """``name`` as lm-eval spells it in ``metrics``: itself, or the one ``name,<filter>`` there is."""
    if name in metrics:
        return name
    matches = [k for k in metrics if k.split(",", 1)[0] == name]
    return matches[0] if len(matches) == 1 else None


def primary(metrics: dict[str, float], wanted: str | None) -> str | None:
    for name in (wanted, *PRIMARY_METRICS):
        key = metric_key(metrics, name) if name else None
        if key:
            return key
    return sorted(metrics)[0] if metrics else None


def _bound_check(task: str, metric: str, bound: Bound, metrics: dict[str, float]) -> dict[str, Any]:
    key = metric_key(metrics, metric)
    row: dict[str, Any] = {"task": task, "metric": key or metric, "min": bound.min, "max": bound.max, "value": None}
    if key is None:
        have = ", ".join(sorted(metrics)) or "none"
        return {**row, "passed": False, "why": f"{task}: no metric {metric!r} in lm-eval's results (has: {have})"}
    value = metrics[key]
    low = bound.min is not None and value < bound.min
    high = bound.max is not None and value > bound.max
    why = ""
    if low:
        why = f"{task} {key} {value:g} < {bound.min:g}"
    elif high:
        why = f"{task} {key} {value:g} > {bound.max:g}"
    return {**row, "value": value, "passed": not (low or high), "why": why}


def verdict(
    parsed: dict[str, Any], tasks: list[str], thresholds: dict[str, dict[str, Bound]], primary_metric: str | None
) -> dict[str, Any]:
    """The gate's verdict: per-task rows (primary metric and value), each threshold checked, ``passed``."""
    got = parsed["tasks"]
    problems = [f"{t}: not in lm-eval's results" for t in tasks if t not in got]
    problems += [f"{t}: no numeric metric" for t, entry in got.items() if not entry["metrics"]]
    for task in thresholds:
        if task not in got and task not in tasks:
            problems.append(f"{task}: has a threshold but is not among the tasks run")
    checks = [
        _bound_check(task, metric, bound, got[task]["metrics"])
        for task, bounds in thresholds.items()
        if task in got
        for metric, bound in bounds.items()
    ]
    problems += [c["why"] for c in checks if not c["passed"]]
    rows = {}
    for task, entry in got.items():
        key = primary(entry["metrics"], primary_metric)
        rows[task] = {**entry, "primary_metric": key, "value": entry["metrics"].get(key) if key else None}
    passed = not problems and bool(got)
    return {"passed": passed, "tasks": rows, "threshold_checks": checks, "problems": problems}
