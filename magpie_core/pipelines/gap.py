"""Gap analysis of PyTorch profiler traces (``magpie gap``, ``magpie benchmark --trace-dir``).

AMD Magpie's kernel table (same CSV columns and JSON keys), plus what it does
not compute: min/max/std per kernel, share of GPU-busy and of wall time, GPU
idle time per device with busy time merged across streams, the largest idle
gaps with the CPU op running at that moment, and a launch-bound indicator.
Ranks are analyzed in parallel processes, this one included
(:mod:`magpie_core.fanout`; workers left idle share a large plain-JSON trace by
byte ranges); a broken rank is reported and the others still are.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from magpie_core.config.benchmark import GapAnalysisConfig
from magpie_core.fanout import Task, run_tasks
from magpie_core.reports import Model
from magpie_core.trace.analysis import (
    AnalysisOptions,
    KernelStat,
    RankAnalysis,
    WindowSpec,
    analyze_file,
    analyze_parts,
    part_count,
    table_part,
)
from magpie_core.trace.discover import TraceFile, discover
from magpie_core.trace.kernel_names import parse_many

log = logging.getLogger("magpie.gap")

#: name of the trace-analyzer component that maps kernels to source files (a plugin)
SOURCE_FINDER = "kernel-sources"

AMD_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]
EXTRA_COLUMNS = [
    "Min (us)",
    "Max (us)",
    "Std (us)",
    "% GPU busy",
    "% Wall",
    "Kernel family",
    "Kernel category",
    "Function",
    "Dtype",
    "Tile",
    "Parse confidence",
]


class TopKernel(Model):
    name: str
    calls: int
    self_cuda_total_us: float
    avg_time_us: float
    pct_total: float
    input_shapes: str
    min_us: float
    max_us: float
    std_us: float
    pct_gpu_busy: float
    pct_wall: float
    family: str = "unknown"
    category: str = "other"
    function: str | None = None
    dtype: str | None = None
    tile: str | None = None
    parse_confidence: float = 0.0
    source: dict[str, Any] | None = None


class GapInfo(Model):
    start_us: float
    duration_us: float
    before: str
    after: str
    host_bound: bool | None
    cpu_op: str | None
    annotation: str | None
    launch_call: str | None


class DeviceSummary(Model):
    device: str
    activities: int
    busy_us: float
    active_span_us: float
    idle_us: float
    idle_pct: float
    wall_us: float
    busy_pct_of_wall: float
    num_gaps: int
    host_bound_idle_us: float
    host_bound_idle_pct: float
    launch_bound: bool
    launch_records: int
    median_launch_to_start_us: float | None
    median_launch_call_us: float | None
    median_kernel_us: float | None
    kernels_shorter_than_launch_pct: float | None
    largest_gaps: list[GapInfo] = Field(default_factory=list)


class RankSummary(Model):
    rank: int
    label: str
    trace_file: str
    platform: str
    ok: bool
    error: str | None = None
    size_bytes: int = 0
    num_events: int = 0
    total_duration_us: float = 0.0
    trace_span_us: float = 0.0
    window_us: tuple[float, float] = (0.0, 0.0)
    window_note: str | None = None
    num_kernels: int = 0
    devices: list[DeviceSummary] = Field(default_factory=list)
    csv_path: str | None = None


class GapAnalysisResult(Model):
    """The JSON summary (``gap_analysis.json`` and ``benchmark_report.json``'s ``gap_analysis`` key)."""

    config: dict[str, Any]
    total_duration_us: float = 0.0
    num_ranks: int = 0
    top_kernels: list[TopKernel] = Field(default_factory=list)
    clamped_trace_paths: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    csv_path: str | None = None
    output_dir: str | None = None
    # magpie's own
    trace_path: str = ""
    ranks: list[RankSummary] = Field(default_factory=list)
    num_kernel_names: int = 0
    gpu_busy_us: float = 0.0
    gpu_idle_us: float = 0.0
    gpu_idle_pct: float = 0.0
    wall_us: float = 0.0
    launch_bound: bool = False
    full_csv_path: str | None = None
    gaps_csv_path: str | None = None
    json_path: str | None = None
    source_repos: list[dict[str, Any]] = Field(default_factory=list)
    elapsed_s: float = 0.0
    workers: int = 1


# -- helpers -----------------------------------------------------------------


def default_output_dir(trace_path: Path) -> Path:
    if trace_path.is_dir() and (trace_path / "torch_trace").is_dir():
        return trace_path / "gap_analysis"
    base = trace_path if trace_path.is_dir() else trace_path.parent
    return base.parent / "gap_analysis"


def _options(
    config: GapAnalysisConfig, annotation: str | None, window_us: tuple[float, float] | None
) -> AnalysisOptions:
    ann = annotation if annotation is not None else config.window_annotation
    start_us, end_us = window_us if window_us is not None else (config.window_start_us, config.window_end_us)
    return AnalysisOptions(
        categories=list(config.categories),
        ignore_categories=list(config.ignore_categories),
        min_duration_us=config.min_duration_us,
        window=WindowSpec(
            start_pct=config.trace_start_pct,
            end_pct=config.trace_end_pct,
            start_us=start_us,
            end_us=end_us,
            annotation=ann,
        ),
        top_gaps=config.top_gaps,
    )


def _split_plan(files: list[TraceFile], workers: int) -> list[int]:
    """How many byte-range parts each file is decoded in: with fewer files than workers, the large plain-JSON
    ones are shared by the workers; otherwise each worker takes whole files (parts would only add merges)."""
    if workers <= 1 or len(files) >= workers:
        return [1] * len(files)
    return [part_count(f.path, workers) for f in files]


def _run_ranks(files: list[TraceFile], options: AnalysisOptions, workers: int) -> list[RankAnalysis]:
    parts = _split_plan(files, workers)
    tasks: list[Task] = []
    weights: list[float] = []
    for f, n in zip(files, parts, strict=True):
        size = float(f.path.stat().st_size) if f.path.exists() else 0.0
        if n == 1:
            tasks.append((analyze_file, (str(f.path), f.rank, f.label, options)))
            weights.append(size)
        else:
            tasks.extend((table_part, (str(f.path), i, n, options)) for i in range(n))
            weights.extend([size / n] * n)
    results = iter(run_tasks(tasks, workers, weights))
    out = []
    for f, n in zip(files, parts, strict=True):
        got = [next(results) for _ in range(n)]
        if n > 1:
            # one large file decoded in parts by several workers, analyzed here; a failed part means
            # the file is read whole (analyze_parts), which also reports what is wrong with it
            tables = [None if isinstance(t, BaseException) else t for t in got]
            try:
                got = [analyze_parts(str(f.path), f.rank, f.label, options, tables)]
            except Exception as exc:
                got = [exc]
        r = got[0]
        if isinstance(r, BaseException):  # a worker that died (e.g. killed for memory) is one rank's error
            r = RankAnalysis(rank=f.rank, label=f.label, path=str(f.path), error=f"{f.path}: {r}")
        out.append(r)
    return out


def _settle_ranks(results: list[RankAnalysis]) -> None:
    """Prefer distributedInfo ranks when they are present and distinct across files."""
    dist = [r.dist_rank for r in results if r.error is None]
    if len(results) > 1 and dist and None not in dist and len(set(dist)) == len(dist):
        for r in results:
            if r.error is None and r.dist_rank is not None:
                r.rank = r.dist_rank
                r.label = f"rank-{r.dist_rank}"
    results.sort(key=lambda r: (r.rank, r.path))


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _device_summary(d: Any) -> DeviceSummary:
    return DeviceSummary(
        device=d.device,
        activities=d.activities,
        busy_us=d.busy_us,
        active_span_us=d.active_span_us,
        idle_us=d.idle_us,
        idle_pct=d.idle_pct,
        wall_us=d.wall_us,
        busy_pct_of_wall=100.0 * d.busy_us / d.wall_us if d.wall_us > 0 else 0.0,
        num_gaps=d.num_gaps,
        host_bound_idle_us=d.host_bound_idle_us,
        host_bound_idle_pct=d.host_bound_idle_pct,
        launch_bound=d.launch_bound,
        launch_records=d.launch_records,
        median_launch_to_start_us=d.median_launch_to_start_us,
        median_launch_call_us=d.median_launch_call_us,
        median_kernel_us=d.median_kernel_us,
        kernels_shorter_than_launch_pct=d.kernels_shorter_than_launch_pct,
        largest_gaps=[GapInfo(**{k: v for k, v in g.__dict__.items() if k != "device"}) for g in d.gaps],
    )


def _find_sources(
    kernels: list[TopKernel], config: GapAnalysisConfig, out_dir: Path, parsed: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]] | None, list[dict[str, Any]], list[str], list[str]]:
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        finder = get_plugin_manager().get("trace_analyzer", SOURCE_FINDER)
    except UnknownComponentError as exc:
        return None, [], [f"kernel sources not searched: {exc}"], []
    payload = [{"name": k.name, "parsed": parsed[k.name].model_dump()} for k in kernels]
    options = {
        "repos": config.kernel_source_repos or [],
        "cache_dir": config.repos_base_dir,
        "clone": config.clone_repos,
    }
    summary = finder.analyze(payload, options, out_dir)
    return (
        summary.get("sources", {}),
        summary.get("repos", []),
        list(summary.get("errors", [])),
        list(summary.get("columns", [])),
    )


def _write_table(
    path: Path,
    rows: list[TopKernel],
    *,
    sources: dict[str, dict[str, Any]] | None,
    repos: list[dict[str, Any]] | None = None,
    source_columns: list[str] | None = None,
) -> Path:
    source_columns = source_columns or []
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        if sources is not None:
            if repos:
                f.write("# Repository Path Mappings:\n")
                for repo in repos:
                    f.write(
                        f"# {repo['var']}={repo['path']}"
                        + (f" @ {repo['commit']}" if repo.get("commit") else "")
                        + "\n"
                    )
                f.write("#\n")
            first = len(AMD_COLUMNS) + 1
            f.write(
                f"# Note: columns {first}-{first + len(source_columns) - 1} come from the offline kernel source "
                "finder; check source_resolution before trusting source_file.\n"
            )
        writer = csv.writer(f)
        header = list(AMD_COLUMNS)
        if sources is not None:
            header += source_columns
        header += EXTRA_COLUMNS
        if sources is not None:
            header += ["Source line"]
        writer.writerow(header)
        for k in rows:
            row: list[Any] = [
                k.name,
                k.calls,
                _fmt(k.self_cuda_total_us),
                _fmt(k.avg_time_us),
                _fmt(k.pct_total),
                k.input_shapes,
            ]
            src = None
            if sources is not None:
                src = sources.get(k.name) or {
                    "kind": k.family,
                    "category": k.category,
                    "source_resolution": "unresolved",
                    "source_error": "not searched",
                }
                row += [src.get(c, "") or "" for c in source_columns]
            row += [
                _fmt(k.min_us),
                _fmt(k.max_us),
                _fmt(k.std_us),
                _fmt(k.pct_gpu_busy),
                _fmt(k.pct_wall),
                k.family,
                k.category,
                k.function or "",
                k.dtype or "",
                k.tile or "",
                f"{k.parse_confidence:.2f}",
            ]
            if src is not None:
                row.append(src.get("line") or "")
            writer.writerow(row)
    return path


def _rows(
    stats: dict[str, KernelStat], total: float, busy: float, wall: float, parsed: dict[str, Any]
) -> list[TopKernel]:
    out = []
    for k in sorted(stats.values(), key=lambda s: -s.total_us):
        p = parsed.get(k.name)
        out.append(
            TopKernel(
                name=k.name,
                calls=k.calls,
                self_cuda_total_us=k.total_us,
                avg_time_us=k.avg_us,
                pct_total=100.0 * k.total_us / total if total > 0 else 0.0,
                input_shapes="; ".join(k.shapes[:10]),
                min_us=k.min_us if k.calls else 0.0,
                max_us=k.max_us,
                std_us=k.std_us,
                pct_gpu_busy=100.0 * k.total_us / busy if busy > 0 else 0.0,
                pct_wall=100.0 * k.total_us / wall if wall > 0 else 0.0,
                family=p.family if p else "unknown",
                category=p.category if p else "other",
                function=p.function if p else None,
                dtype=p.dtype if p else None,
                tile=p.tile if p else None,
                parse_confidence=p.confidence if p else 0.0,
            )
        )
    return out


# -- the pipeline ------------------------------------------------------------


def gap_analysis(
    trace_path: Path,
    config: GapAnalysisConfig,
    output_dir: Path | None,
    *,
    window_annotation: str | None = None,
    window_us: tuple[float, float] | None = None,
    workers: int | None = None,
) -> GapAnalysisResult:
    """Analyze one trace file or a folder of rank traces; write CSVs and JSON under ``output_dir``."""
    t0 = time.perf_counter()
    trace_path = Path(trace_path)
    result = GapAnalysisResult(config=config.model_dump(mode="json"), trace_path=str(trace_path))
    if not trace_path.exists():
        result.errors.append(f"trace path not found: {trace_path}")
        return result
    files = discover(trace_path)
    if not files:
        result.errors.append(f"no trace files (*.json, *.json.gz) found in {trace_path}")
        return result
    out_dir = Path(output_dir) if output_dir is not None else default_output_dir(trace_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.output_dir = str(out_dir)

    options = _options(config, window_annotation, window_us)
    requested = workers or config.workers or os.cpu_count() or 1
    n_workers = max(1, min(requested, sum(_split_plan(files, requested))))
    result.workers = n_workers
    log.debug("gap analysis of %d trace file(s) with %d worker(s)", len(files), n_workers)
    ranks = _run_ranks(files, options, n_workers)
    _settle_ranks(ranks)

    good = [r for r in ranks if r.error is None]
    result.errors.extend(r.error for r in ranks if r.error is not None)  # type: ignore[misc]
    result.num_ranks = len(good)

    merged: dict[str, KernelStat] = {}
    contexts: dict[str, dict[str, Any]] = {}
    for r in good:
        for name, ks in r.kernels.items():
            if name in merged:
                merged[name].merge(ks)
            else:
                merged[name] = KernelStat(name, ks.calls, ks.total_us, ks.sumsq, ks.min_us, ks.max_us, list(ks.shapes))
        for name, ctx in r.contexts.items():
            contexts.setdefault(name, ctx)
        if r.window_note and "not found" in r.window_note:
            result.errors.append(f"rank {r.rank} ({Path(r.path).name}): {r.window_note}")
    parsed = parse_many(sorted(merged), contexts)

    result.total_duration_us = sum(r.total_duration_us for r in good)
    result.gpu_busy_us = sum(r.busy_us for r in good)
    result.wall_us = sum(r.wall_us for r in good)
    span = sum(d.active_span_us for r in good for d in r.devices)
    result.gpu_idle_us = sum(d.idle_us for r in good for d in r.devices)
    result.gpu_idle_pct = 100.0 * result.gpu_idle_us / span if span > 0 else 0.0
    result.launch_bound = any(d.launch_bound for r in good for d in r.devices)
    result.num_kernel_names = len(merged)

    all_rows = _rows(merged, result.total_duration_us, result.gpu_busy_us, result.wall_us, parsed)
    top = all_rows[: config.top_k]
    sources: dict[str, dict[str, Any]] | None = None
    columns: list[str] = []
    if config.find_kernel_sources:
        sources, result.source_repos, errs, columns = _find_sources(top, config, out_dir, parsed)
        result.errors.extend(errs)
        for k in top:
            k.source = (sources or {}).get(k.name)
    result.top_kernels = top
    result.csv_path = str(
        _write_table(
            out_dir / "gap_analysis.csv", top, sources=sources, repos=result.source_repos, source_columns=columns
        )
    )
    result.full_csv_path = str(_write_table(out_dir / "gap_analysis_all_kernels.csv", all_rows, sources=None))

    for r in ranks:
        summary = RankSummary(
            rank=r.rank,
            label=r.label,
            trace_file=r.path,
            platform=r.platform,
            ok=r.error is None,
            error=r.error,
            size_bytes=r.size_bytes,
            num_events=r.num_events,
            total_duration_us=r.total_duration_us,
            trace_span_us=r.trace_span_us,
            window_us=r.window_us,
            window_note=r.window_note,
            num_kernels=len(r.kernels),
            devices=[_device_summary(d) for d in r.devices],
        )
        if r.error is None and not config.no_rank_csv:
            suffix = r.rank if sum(1 for x in good if x.rank == r.rank) == 1 else f"{r.rank}_{Path(r.path).stem}"
            rank_rows = _rows(r.kernels, r.total_duration_us, r.busy_us, r.wall_us, parsed)[: config.top_k]
            summary.csv_path = str(_write_table(out_dir / f"gap_analysis_rank{suffix}.csv", rank_rows, sources=None))
        result.ranks.append(summary)

    gaps_path = out_dir / "gpu_gaps.csv"
    with gaps_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "rank",
                "device",
                "start (us)",
                "duration (us)",
                "host bound",
                "cpu op",
                "annotation",
                "launch call",
                "kernel before",
                "kernel after",
            ]
        )
        for rs in result.ranks:
            for d in rs.devices:
                for g in d.largest_gaps:
                    w.writerow(
                        [
                            rs.rank,
                            d.device,
                            _fmt(g.start_us),
                            _fmt(g.duration_us),
                            "" if g.host_bound is None else str(g.host_bound).lower(),
                            g.cpu_op or "",
                            g.annotation or "",
                            g.launch_call or "",
                            g.before,
                            g.after,
                        ]
                    )
    result.gaps_csv_path = str(gaps_path)
    result.elapsed_s = time.perf_counter() - t0
    json_path = out_dir / "gap_analysis.json"
    result.json_path = str(json_path)
    json_path.write_text(result.model_dump_json(indent=2) + "\n")
    return result


def _short(name: str, width: int = 72) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def print_summary(result: GapAnalysisResult, top_k: int) -> None:
    from rich.table import Table

    from magpie_core.cli.app import console

    table = Table(title=f"top {min(top_k, len(result.top_kernels))} kernels ({result.num_ranks} rank(s))")
    for col in ("#", "kernel", "category", "calls", "total (us)", "avg (us)", "% total", "% busy"):
        if col == "kernel":
            table.add_column(col, no_wrap=True, overflow="ellipsis", min_width=20, max_width=40)
        else:
            table.add_column(col, justify="left" if col == "category" else "right", no_wrap=True)
    for i, k in enumerate(result.top_kernels[:top_k], 1):
        label = k.function or k.name
        table.add_row(
            str(i),
            _short(label),
            k.category,
            str(k.calls),
            _fmt(k.self_cuda_total_us),
            _fmt(k.avg_time_us),
            _fmt(k.pct_total),
            _fmt(k.pct_gpu_busy),
        )
    console.print(table)
    for r in result.ranks:
        if not r.ok:
            continue
        for d in r.devices:
            flag = "  [bold]LAUNCH-BOUND[/bold]" if d.launch_bound else ""
            console.print(
                f"rank {r.rank} device {d.device}: busy {_fmt(d.busy_us)} us, idle {_fmt(d.idle_us)} us "
                f"({d.idle_pct:.1f}% of active span, {d.host_bound_idle_pct:.0f}% of it waiting on the host), "
                f"{d.num_gaps} gaps{flag}"
            )
            if d.largest_gaps:
                g = d.largest_gaps[0]
                console.print(
                    f"  largest gap {_fmt(g.duration_us)} us at +{_fmt(g.start_us)} us; CPU op: "
                    f"{g.cpu_op or '-'}; next: {_short(g.after, 60)}",
                    markup=False,
                )
    for err in result.errors:
        console.print(f"[yellow]warning:[/yellow] {err}", soft_wrap=True)
    console.print(f"wrote {result.csv_path} and {result.json_path}", markup=False)


def run_gap_analysis(trace_dir: Path, config: GapAnalysisConfig, output_dir: Path | None, **extra: Any) -> int:
    """CLI entry: run, print (table or ``as_json``), return the exit code (0 ok, 1 some rank failed)."""
    from magpie_core.cli.app import UsageError

    trace_dir = Path(trace_dir)
    if not trace_dir.exists():
        raise UsageError(f"trace path not found: {trace_dir}")
    result = gap_analysis(
        trace_dir,
        config,
        output_dir,
        window_annotation=extra.get("window_annotation"),
        window_us=extra.get("window_us"),
        workers=extra.get("workers"),
    )
    if result.output_dir is None:
        raise UsageError("; ".join(result.errors) or f"nothing to analyze in {trace_dir}")
    if extra.get("as_json"):
        print(json.dumps(json.loads(result.model_dump_json()), indent=2))
    else:
        print_summary(result, config.top_k)
    failed = [r for r in result.ranks if not r.ok]
    return 1 if failed or result.num_ranks == 0 else 0
