"""Typed results over the JSON reports magpie writes: their numbers as attributes, their tables as DataFrames.

A result keeps the report as written (``data``) and where it came from; every table is built from the report or
from the CSV files the analyzer wrote beside it (the same files ``magpie gap`` and ``magpie inference`` print
from), never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from magpie._figures import Figure, collect_figures
from magpie._tables import Rows, csv_frame, frame, resolve, table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "AnalyzeResult",
    "BenchmarkResult",
    "CompareResult",
    "GapResult",
    "InferenceResult",
    "LoopResult",
    "Result",
]


@dataclass
class Result:
    """A run's report. ``data``: the JSON as written; ``path``: the JSON file (None: made in memory);
    ``workspace``: the folder its other files are in."""

    kind: ClassVar[str] = ""

    data: dict[str, Any]
    path: Path | None = None
    workspace: Path | None = None
    _figures: list[Figure] | None = field(default=None, init=False, repr=False, compare=False)

    # -- tables ------------------------------------------------------------------------------------------------

    @classmethod
    def tables(cls) -> list[str]:
        """The names of this result's tables, in the order :meth:`to_excel` writes them."""
        names: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            names.update({k: None for k, v in vars(klass).items() if isinstance(v, table)})
        return list(names)

    def table(self, name: str) -> pd.DataFrame:
        """The table ``name`` (one of :meth:`tables`) as a DataFrame."""
        if name not in self.tables():
            raise KeyError(f"{type(self).__name__} has no table {name!r}; tables: {', '.join(self.tables())}")
        return getattr(self, name)

    def to_pandas(self, name: str | None = None) -> pd.DataFrame:
        """A table as a DataFrame: ``name``, or the first of :meth:`tables` (the one a reader looks at first)."""
        return self.table(name or self.tables()[0])

    def to_excel(self, path: str | Path) -> Path:
        """One workbook, a sheet per non-empty table (named as in :meth:`tables`)."""
        from magpie_trace.workbook import write_workbook

        frames = {name: self.table(name) for name in self.tables()}
        sheets = {k: (list(map(str, v.columns)), v.itertuples(index=False)) for k, v in frames.items() if not v.empty}
        return write_workbook(Path(path), sheets)

    # -- figures -----------------------------------------------------------------------------------------------

    def figures(self) -> dict[str, Figure]:
        """report.html's figures for this run, by name (the first of two with the same name keeps it)."""
        if self._figures is None:
            self._figures = collect_figures(self.kind, self.data, self.workspace)
        found: dict[str, Figure] = {}
        for fig in self._figures:
            found.setdefault(fig.name, fig)
        return found

    def figure(self, name: str) -> Figure:
        """The figure ``name``, or the first whose name starts with it (``"top_kernels"``, ``"roofline"``,
        ``"roofline_decode"``); a ``KeyError`` lists the names there are."""
        figures = self.figures()
        if name in figures:
            return figures[name]
        for full, fig in figures.items():
            if full.startswith(name + "_"):
                return fig
        known = ", ".join(figures) or "none (is the magpie-report plugin installed?)"
        raise KeyError(f"no figure {name!r} for this {self.kind} run; figures: {known}")

    def __repr__(self) -> str:
        where = self.path or "memory"
        return f"<magpie.{type(self).__name__} from {where}; tables: {', '.join(self.tables())}>"


# -- gap ---------------------------------------------------------------------------------------------------------


@dataclass(repr=False)
class GapResult(Result):
    """``magpie gap``: kernel time tables, GPU idle gaps, launch-bound indicators (``gap_analysis.json``)."""

    kind: ClassVar[str] = "gap"

    @property
    def gpu_idle_pct(self) -> float:
        return float(self.data.get("gpu_idle_pct", 0.0))

    @property
    def launch_bound(self) -> bool:
        return bool(self.data.get("launch_bound"))

    @property
    def errors(self) -> list[str]:
        return list(self.data.get("errors") or [])

    @table
    def top_kernels(self) -> Rows:
        """The top-k kernels by total time (``gap_analysis.csv``'s rows, unrounded)."""
        return [{k: v for k, v in row.items() if k != "source"} for row in self.data.get("top_kernels", [])]

    @table
    def all_kernels(self) -> pd.DataFrame:
        """Every kernel name (``gap_analysis_all_kernels.csv``; empty when that file is gone)."""
        path = resolve(self.data.get("full_csv_path"), self.workspace)
        return csv_frame(path) if path is not None else frame([])

    @table
    def gaps(self) -> Rows:
        """The largest GPU idle gaps of every device of every rank, with the CPU op the host was in."""
        return [
            {"rank": r["rank"], "device": d["device"], **g}
            for r in self.data.get("ranks", [])
            for d in r.get("devices", [])
            for g in d.get("largest_gaps", [])
        ]

    @table
    def devices(self) -> Rows:
        """Busy and idle time and the launch-bound verdict per device of each rank."""
        return [
            {"rank": r["rank"], **{k: v for k, v in d.items() if k not in ("largest_gaps", "timeline")}}
            for r in self.data.get("ranks", [])
            for d in r.get("devices", [])
        ]


# -- inference ---------------------------------------------------------------------------------------------------

#: TraceLens's tables as ``magpie inference`` writes them (``tracelens_tables`` in its summary; the CSV names and the
#: workbook's sheet names), in TraceLens's order
TRACELENS_TABLES = (
    "unified_perf_summary",
    "ops_summary",
    "ops_summary_by_category",
    "ops_unique_args",
    "gpu_timeline",
    "kernel_summary",
    "short_kernels_summary",
    "short_kernel_histogram",
    "collective_summary",
)


def _tracelens_table(name: str) -> table:
    """The DataFrame property of one TraceLens table (:meth:`InferenceResult.tracelens`)."""

    def rows(self: InferenceResult) -> pd.DataFrame:
        return self.tracelens(name)

    rows.__name__ = name
    rows.__doc__ = f"TraceLens's ``{name}.csv`` of every trace, with a ``trace`` column (:meth:`tracelens`)."
    return table(rows)


@dataclass(repr=False)
class InferenceResult(Result):
    """``magpie inference``: stage split, steady-state window, kernel and roofline tables
    (``inference_summary.json`` and the CSVs beside it)."""

    kind: ClassVar[str] = "inference"

    @property
    def errors(self) -> list[str]:
        return list(self.data.get("errors") or [])

    def _stages(self) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
        return [(tr, name, st) for tr in self.data.get("traces", []) for name, st in tr.get("stages", {}).items()]

    def _stacked(self, files: list[tuple[str | None, dict[str, Any]]]) -> pd.DataFrame:
        """CSV tables the analyzer wrote (file, the columns to put first), stacked; a file that is gone is left
        out."""
        import pandas as pd

        parts = [csv_frame(path, **extra) for file, extra in files if (path := resolve(file, self.workspace))]
        return pd.concat(parts, ignore_index=True) if parts else frame([])

    def _stage_csvs(self, key: str) -> pd.DataFrame:
        """One stage table (``roofline_csv``, ``kernels_csv``) of every stage of every trace, stacked."""
        return self._stacked(
            [(st.get(key), {"trace": Path(tr["trace_file"]).name, "stage": name}) for tr, name, st in self._stages()]
        )

    def tracelens(self, name: str) -> pd.DataFrame:
        """TraceLens's table ``name`` (one of :data:`TRACELENS_TABLES`, as TraceLens names its CSVs and Excel
        sheets: ``unified_perf_summary``, ``ops_summary``, ``kernel_summary`` ...) of every trace, stacked with a
        ``trace`` column; empty when the analysis wrote none (``tracelens_tables: false``, or no such table, as
        ``collective_summary`` without NCCL/RCCL kernels)."""
        if name not in TRACELENS_TABLES:
            raise KeyError(f"no TraceLens table {name!r}; tables: {', '.join(TRACELENS_TABLES)}")
        return self._stacked(
            [
                ((tr.get("tracelens_tables") or {}).get(name), {"trace": Path(tr["trace_file"]).name})
                for tr in self.data.get("traces", [])
            ]
        )

    @table
    def stages(self) -> Rows:
        """One row per stage of each trace: its window, kernel time, modelled share and bound time."""
        return [
            {
                "trace": Path(tr["trace_file"]).name,
                "stage": name,
                "window_iterations": len(st["window_iterations"]),
                "iterations": st["iterations"],
                "window_choice": st.get("window_choice"),
                "kernel_time_ms": st["kernel_time_us"] / 1000,
                "modelled_pct": st["modelled_kernel_time_pct"],
                "compute_bound_us": st.get("bound_time_us", {}).get("compute"),
                "memory_bound_us": st.get("bound_time_us", {}).get("memory"),
            }
            for tr, name, st in self._stages()
        ]

    @table
    def roofline(self) -> pd.DataFrame:
        """Per-op roofline rows of each stage's steady-state window (``*_kernel_roofline_simple.csv``)."""
        return self._stage_csvs("roofline_csv")

    @table
    def kernels(self) -> pd.DataFrame:
        """Per-kernel-name time of each stage's window (``*_kernels.csv``)."""
        return self._stage_csvs("kernels_csv")

    @table
    def iterations(self) -> pd.DataFrame:
        """Every engine step: phase, window membership, step time, GPU busy and idle time (``iterations.csv``)."""
        traces = self.data.get("traces", [])
        return self._stacked([(tr.get("iterations_csv"), {"trace": Path(tr["trace_file"]).name}) for tr in traces])

    # TraceLens's tables, one property each, so that they are among tables() and to_excel() writes them as sheets
    unified_perf_summary = _tracelens_table("unified_perf_summary")
    ops_summary = _tracelens_table("ops_summary")
    ops_summary_by_category = _tracelens_table("ops_summary_by_category")
    ops_unique_args = _tracelens_table("ops_unique_args")
    gpu_timeline = _tracelens_table("gpu_timeline")
    kernel_summary = _tracelens_table("kernel_summary")
    short_kernels_summary = _tracelens_table("short_kernels_summary")
    short_kernel_histogram = _tracelens_table("short_kernel_histogram")
    collective_summary = _tracelens_table("collective_summary")


# -- kernel compare and analyze ----------------------------------------------------------------------------------


def _timing_samples(kernel_results: list[dict[str, Any]]) -> Rows:
    """One row per timing sample of each kernel (``performance.samples_us``, in the order they were pooled): the
    samples the report's medians and intervals were computed from."""
    return [
        {"kernel_id": k.get("kernel_id"), "sample": i, "time_us": t}
        for k in kernel_results
        for i, t in enumerate((k.get("performance") or {}).get("samples_us") or [])
    ]


@dataclass(repr=False)
class CompareResult(Result):
    """``magpie compare``: candidates ranked against the baseline, with a verdict each (``compare_report.json``)."""

    kind: ClassVar[str] = "compare"

    @property
    def verdict(self) -> str:
        return str(self.data.get("verdict", ""))

    @property
    def winner(self) -> str | None:
        return self.data.get("winner_id")

    @table
    def candidates(self) -> Rows:
        """The ranking: median, speedup over the baseline, confidence interval and verdict per candidate."""
        return list(self.data.get("ranking", []))

    @table
    def summary(self) -> Rows:
        """One row per kernel, as ``magpie compare`` prints it (including the ones not ranked)."""
        return list(self.data.get("summary_rows", []))

    @table
    def samples(self) -> Rows:
        """Every timing sample of every kernel (``kernel_id``, ``sample``, ``time_us``); a kernel's median of them is
        its ``median_us`` in :attr:`candidates`."""
        return _timing_samples((self.data.get("results") or {}).get("kernel_results", []))


@dataclass(repr=False)
class AnalyzeResult(Result):
    """``magpie analyze``: compile, correctness and timing of each kernel (``analyze_report.json``)."""

    kind: ClassVar[str] = "analyze"

    @table
    def kernels(self) -> Rows:
        """One row per kernel, as ``magpie analyze`` prints it."""
        return list(self.data.get("summary", []))

    @table
    def samples(self) -> Rows:
        """Every timing sample of every kernel (``kernel_id``, ``sample``, ``time_us``)."""
        return _timing_samples(self.data.get("results", []))


# -- benchmark and loop ------------------------------------------------------------------------------------------


@dataclass(repr=False)
class BenchmarkResult(Result):
    """``magpie benchmark``: load points and their metrics, per-request samples, and the diagnostic run's trace
    analyses when it had them (``benchmark_report.json``)."""

    kind: ClassVar[str] = "benchmark"

    @property
    def success(self) -> bool:
        return bool(self.data.get("success"))

    @table
    def points(self) -> pd.DataFrame:
        """One row per load point; nested metrics flattened to ``metrics.ttft.median_ms`` and so on."""
        import pandas as pd

        points = [{k: v for k, v in p.items() if k not in ("requests", "prompts")} for p in self._points()]
        return pd.json_normalize(points) if points else frame([])

    @table
    def requests(self) -> Rows:
        """Every recorded request (``load.save_requests``) of every point, with the point's index and load."""
        return [
            {"point": i, "concurrency": p.get("concurrency"), "request_rate": p.get("request_rate"), **r}
            for i, p in enumerate(self._points())
            for r in p.get("requests") or []
        ]

    def _points(self) -> list[dict[str, Any]]:
        return list(self.data.get("points", []))

    @cached_property
    def gap(self) -> GapResult | None:
        """The diagnostic run's gap analysis, when the benchmark ran one."""
        block = self.data.get("gap_analysis")
        return GapResult(block, self.path, self.workspace) if isinstance(block, dict) and "ranks" in block else None

    @cached_property
    def inference(self) -> InferenceResult | None:
        """The diagnostic run's trace analysis (``profiler.tracelens``), when the benchmark ran one."""
        block = self.data.get("tracelens_analysis")
        return InferenceResult(block, self.path, self.workspace) if isinstance(block, dict) else None


@dataclass(repr=False)
class LoopResult(Result):
    """``magpie loop report``: the optimization loop's conclusion and the condition that decided it
    (``loop_report.json``); or the loop's record while it runs (``loop.json``: its steps, kernels and compares, no
    conclusion yet)."""

    kind: ClassVar[str] = "loop"

    @property
    def concluded(self) -> bool:
        """Whether this is the loop's report (``magpie loop report`` wrote it), not its record in progress."""
        return self.data.get("mode") == "loop_report"

    @property
    def success(self) -> bool:
        return bool(self.data.get("success"))

    @property
    def conclusion(self) -> str:
        """The report's conclusion ("success", or "not a success: ..."); empty for a record not concluded."""
        return str(self.data.get("conclusion", ""))

    @table
    def conditions(self) -> Rows:
        """Each condition of success, whether it holds and why."""
        return list(self.data.get("conditions", []))

    @table
    def kernels(self) -> Rows:
        """The kernels the loop selected and their sources."""
        return list(self.data.get("kernels", []))

    @table
    def compares(self) -> Rows:
        """The kernel comparisons the loop recorded."""
        return list(self.data.get("compares", []))

    @table
    def history(self) -> Rows:
        """Every step recorded, in order (time, step, path, kernel): the record's own, or for a report the record
        it names (``files.loop``; empty when that file is gone)."""
        record = self.data
        if self.concluded:
            from magpie_core.reports import read_report_json

            path = resolve((self.data.get("files") or {}).get("loop"), self.workspace)
            record = read_report_json(path) if path is not None else {}
        return list(record.get("history", []))


RESULT_TYPES: dict[str, type[Result]] = {
    cls.kind: cls for cls in (GapResult, InferenceResult, CompareResult, AnalyzeResult, BenchmarkResult, LoopResult)
}
