"""Finding a run's report: a workspace folder or a report JSON, and what kind of run it was."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: file names of each kind's report, most specific first
REPORT_FILES = (
    ("compare_report.json", "compare"),
    ("analyze_report.json", "analyze"),
    ("benchmark_report.json", "benchmark"),
    ("gap_analysis.json", "gap"),
    ("inference_summary.json", "inference"),
)


class ReportInputError(ValueError):
    """A path that holds no report magpie can draw; the message names it and why."""


@dataclass
class Loaded:
    kind: str
    report: dict[str, Any]
    path: Path  # the JSON file
    workspace: Path


def kind_of(data: dict[str, Any], name: str) -> str | None:
    """The kind of a report's JSON data (``mode`` of core reports, the analyzers' own keys), or None."""
    if isinstance(data.get("mode"), str) and data["mode"]:
        return data["mode"]  # the core's reports, and any plugin's built on magpie_core.reports.Report
    if data.get("analyzer") == "inference":
        return "inference"
    if "top_kernels" in data and "ranks" in data:
        return "gap"
    return dict(REPORT_FILES).get(name)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ReportInputError(f"{path}: not a JSON report ({where})") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: not a magpie report (a JSON object is expected)")
    return data


def _report_file(folder: Path) -> Path:
    for name, _ in REPORT_FILES:
        if (folder / name).is_file():
            return folder / name
    for name, _ in REPORT_FILES:  # e.g. a benchmark workspace's gap_analysis/ or tracelens/ subfolder
        found = sorted(folder.glob(f"*/{name}"))
        if found:
            return found[0]
    names = ", ".join(n for n, _ in REPORT_FILES)
    raise ReportInputError(f"{folder}: no magpie report in this folder (looked for {names})")


def load(path: Path) -> Loaded:
    """The report at ``path`` (a workspace folder or a JSON file)."""
    if not path.exists():
        raise ReportInputError(f"{path}: no such file or folder")
    file = _report_file(path) if path.is_dir() else path
    data = _read(file)
    kind = kind_of(data, file.name)
    if kind is None:
        raise ReportInputError(f"{file}: not a magpie report (no 'mode', not a gap or inference summary)")
    _validate(kind, data, file)
    return Loaded(kind, data, file, file.parent)


def _validate(kind: str, data: dict[str, Any], file: Path) -> None:
    """The core's reports are checked against their models, so a damaged one is named, field and all."""
    from pydantic import ValidationError

    if kind == "benchmark":
        from magpie_benchmark.report import BenchmarkReport as model
    elif kind in ("analyze", "compare"):
        from magpie_core.pipelines import kernel_reports

        model = kernel_reports.AnalyzeReport if kind == "analyze" else kernel_reports.CompareReport
    else:
        return
    try:
        model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ReportInputError(f"{file}: not a valid {kind} report: {where}: {err['msg']}") from None
