"""Reading magpie's report files: ``benchmark_report.json`` and the ``*_report.json`` of a workspace.

Used by the benchmark tools here and by other plugins' tools (magpie-advice compares
benchmark reports and gives advice about any report).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from magpie_mcp.models import ToolModel

REPORT_NAME = "benchmark_report.json"


class BenchmarkRun(ToolModel):
    path: str
    workspace: str
    framework: str | None = None
    model: str | None = None
    timestamp: str | None = None
    success: bool | None = None
    run_kind: str | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    mean_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    errors: list[str] = Field(default_factory=list)


def find_benchmark_reports(root: Path, limit: int = 200) -> list[Path]:
    """``<root>/benchmark_*/benchmark_report.json`` (and one level deeper), newest first."""
    paths = {*root.glob(f"benchmark_*/{REPORT_NAME}"), *root.glob(f"*/benchmark_*/{REPORT_NAME}")}
    if (root / REPORT_NAME).is_file():
        paths.add(root / REPORT_NAME)
    return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)[:limit]


def load_report_file(path: Path) -> dict[str, Any]:
    """A report as a dict, with ``_path`` (the file read); a folder means the report inside it."""
    if path.is_dir():
        candidates = [path / REPORT_NAME, *sorted(path.glob("*_report.json")), path / "gap_analysis.json"]
        path = next((c for c in candidates if c.is_file()), path / REPORT_NAME)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a magpie report")
    data.setdefault("_path", str(path))
    return data


def number(data: dict[str, Any], *keys: str) -> float | None:
    """The number at ``data[k1][k2]...``, or None when absent or not a number."""
    current: Any = data
    for key in keys:
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    try:
        return None if current is None else float(current)
    except (TypeError, ValueError):
        return None


def benchmark_run(path: Path, data: dict[str, Any]) -> BenchmarkRun:
    """The summary of one benchmark report."""
    try:
        return BenchmarkRun(
            path=str(path),
            workspace=str(data.get("workspace_dir") or data.get("workspace") or path.parent),
            framework=data.get("framework"),
            model=data.get("model"),
            timestamp=data.get("timestamp"),
            success=data.get("success"),
            run_kind=data.get("run_kind"),
            request_throughput=number(data, "throughput", "request_throughput"),
            output_throughput=number(data, "throughput", "output_throughput"),
            mean_ttft_ms=number(data, "latency", "ttft", "mean_ms"),
            mean_tpot_ms=number(data, "latency", "tpot", "mean_ms"),
            errors=[str(e) for e in data.get("errors") or []],
        )
    except ValidationError as exc:
        raise ValueError(f"{path}: not a benchmark report: {exc.errors()[0]['msg']}") from exc
