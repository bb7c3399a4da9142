"""magpie from Python and notebooks.

>>> import magpie
>>> run = magpie.gap("traces/rank0.json.gz")        # the ``gap`` trace analyzer, as ``magpie gap`` runs it
>>> run.top_kernels.head()                          # a pandas DataFrame
>>> inf = magpie.inference("traces/rank0.json.gz")  # the ``inference`` analyzer: stages and roofline
>>> inf.roofline.query("stage == 'decode_only'")
>>> inf.figure("roofline")                          # report.html's figure, drawn in the notebook
>>> magpie.load("magpie_runs/compare_x_20250101_120000").candidates   # any run folder or report JSON

The analyzers are the installed plugins', reached through the plugin manager as every caller reaches them
(docs/python-api.md); this package imports neither them nor pandas until a table is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magpie._figures import Figure
from magpie._results import (
    RESULT_TYPES,
    AnalyzeResult,
    BenchmarkResult,
    CompareResult,
    GapResult,
    InferenceResult,
    LoopResult,
    Result,
)

__all__ = [
    "AnalyzeResult",
    "BenchmarkResult",
    "CompareResult",
    "Figure",
    "GapResult",
    "InferenceResult",
    "LoopResult",
    "Result",
    "gap",
    "inference",
    "load",
]

#: report files, most specific first (a benchmark workspace also holds gap_analysis/ and tracelens/ below it)
REPORT_FILES = (
    "loop_report.json",
    "loop.json",  # a loop's record before ``magpie loop report`` concluded it
    "compare_report.json",
    "analyze_report.json",
    "benchmark_report.json",
    "gap_analysis.json",
    "inference_summary.json",
)
#: a report's ``mode`` -> the kind of result, where they differ
_MODE_KINDS = {"loop_report": "loop"}
#: a record's ``kind`` (files that are not reports: no ``mode``) -> the kind of result
_RECORD_KINDS = {"magpie-loop": "loop"}


def _report_file(folder: Path) -> Path:
    for pattern in ("{}", "*/{}"):
        for name in REPORT_FILES:
            found = sorted(folder.glob(pattern.format(name)))
            if found:
                return found[0]
    raise ValueError(f"{folder}: no magpie report in this folder (looked for {', '.join(REPORT_FILES)})")


def _kind(data: dict[str, Any], file: Path) -> str:
    """The kind of a report: its ``mode`` (the core's and the plugins' reports), else the analyzers' own keys."""
    mode = data.get("mode")
    if isinstance(mode, str) and mode:
        return _MODE_KINDS.get(mode, mode)
    if data.get("kind") in _RECORD_KINDS:
        return _RECORD_KINDS[data["kind"]]
    if data.get("analyzer") == "inference":
        return "inference"
    if "top_kernels" in data and "ranks" in data:
        return "gap"
    raise ValueError(f"{file}: not a magpie report (no 'mode', not a gap or inference summary)")


def load(path: str | Path) -> Result:
    """The run at ``path``, a run folder (workspace) or a report JSON, as its typed result:
    :class:`GapResult`, :class:`InferenceResult`, :class:`CompareResult`, :class:`AnalyzeResult`,
    :class:`BenchmarkResult` or :class:`LoopResult` (a loop's report, or its ``loop.json`` record before
    ``magpie loop report``). A path without a report is a ``ValueError`` naming it."""
    from magpie_core.reports import read_report_json

    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    file = _report_file(path) if path.is_dir() else path
    data = read_report_json(file)
    kind = _kind(data, file)
    if kind not in RESULT_TYPES:
        raise ValueError(f"{file}: a {kind!r} report; magpie.load reads {', '.join(RESULT_TYPES)}")
    return RESULT_TYPES[kind](data, file, file.parent)


def _run_analyzer(name: str, trace_path: str | Path, output_dir: str | Path | None, options: dict[str, Any]) -> Path:
    """Run the installed trace analyzer ``name`` into a new run folder (as its command does); the folder.

    Without ``output_dir`` the folder is made under ``./magpie_runs``, as the commands do: never next to traces it
    may only read.
    """
    from magpie_core.plugins import get_plugin_manager
    from magpie_core.runtime.workspace import DEFAULT_OUTPUT_ROOT, run_folder

    trace = Path(trace_path)
    if not trace.exists():
        raise ValueError(f"trace path not found: {trace}")
    analyzer = get_plugin_manager().get("trace_analyzer", name)
    base = Path(output_dir) if output_dir is not None else Path(DEFAULT_OUTPUT_ROOT)
    with run_folder(base, name, trace.name.split(".")[0]) as run_dir:
        analyzer.analyze(trace, options, run_dir)
    return run_dir


def gap(trace_path: str | Path, *, output_dir: str | Path | None = None, **settings: Any) -> GapResult:
    """Gap analysis of a trace file, a folder of rank traces or a benchmark workspace (``magpie gap``).

    ``settings``: the ``gap_analysis:`` block's keys (``top_k``, ``start_pct``, ``end_pct``, ``categories``,
    ``window_annotation``...; docs/gap-analysis.md). The tables and ``gap_analysis.json`` go to a new
    ``gap_<trace>_<time>/`` under ``output_dir``. Bad settings or nothing to analyze: ``ValueError``.
    """
    run_dir = _run_analyzer("gap", trace_path, output_dir, settings)
    return GapResult(*_summary(run_dir / "gap_analysis.json"))


def inference(
    trace_path: str | Path, *, output_dir: str | Path | None = None, stages: str = "all", **settings: Any
) -> InferenceResult:
    """Inference analysis of a trace (``magpie inference``): stage split, steady-state window, kernel table,
    per-op roofline.

    ``stages``: all | prefilldecode | decode | prefill; ``settings``: the analyzer's options (``spec``,
    ``window``, ``capture_traces``, ``label_suffix``, ``tracelens_tables``...; docs/inference-analysis.md).
    """
    run_dir = _run_analyzer("inference", trace_path, output_dir, {"stages": stages, **settings})
    return InferenceResult(*_summary(run_dir / "inference_summary.json"))


def _summary(file: Path) -> tuple[dict[str, Any], Path, Path]:
    """A summary the analyzer just wrote, read back as any later :func:`load` reads it (same numbers)."""
    from magpie_core.reports import read_report_json

    return read_report_json(file), file, file.parent
