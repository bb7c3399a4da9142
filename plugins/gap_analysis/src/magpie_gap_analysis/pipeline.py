"""Gap analysis of PyTorch profiler traces (``magpie gap``, ``magpie benchmark --trace-dir``).

AMD Magpie's kernel table (same CSV columns and JSON keys), plus what it does
not compute: min/max/std per kernel, share of GPU-busy and of wall time, GPU
idle time per device with busy time merged across streams, the largest idle
gaps with the CPU op running at that moment, and a launch-bound indicator.
Ranks are analyzed in parallel processes, this one included
(:mod:`magpie_trace.fanout`); workers left idle share a large plain-JSON trace:
it is read in byte ranges by threads of the process analyzing it
(:func:`magpie_trace.columns.split_table`). A broken rank is reported and
the others still are.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_trace.columns import category_matcher, collector_paused, part_count, split_table
from magpie_trace.discover import TraceFile, discover
from magpie_trace.fanout import Task, run_tasks
from magpie_trace.validity import skipped_messages

from magpie_core.kernel_names import parse_many
from magpie_core.runtime.workspace import DEFAULT_OUTPUT_ROOT
from magpie_gap_analysis.analysis import (
    AnalysisOptions,
    DeviceStats,
    KernelStat,
    RankAnalysis,
    WindowSpec,
    analyze_file,
    analyze_parts,
)
from magpie_gap_analysis.models import DeviceSummary, GapAnalysisResult, GapInfo, RankSummary, TopKernel
from magpie_gap_analysis.output import write_gaps, write_table

if TYPE_CHECKING:
    from magpie_core.reports import ParsedKernelName
    from magpie_gap_analysis.config import GapAnalysisConfig

__all__ = ["SOURCE_FINDER", "default_output_dir", "gap_analysis"]

log = logging.getLogger("magpie.gap")

#: name of the kernel-source finder component (a plugin) that maps kernels to source files
SOURCE_FINDER = "kernel-sources"

Parsed = dict[str, "ParsedKernelName"]


def default_output_dir(trace_path: Path) -> Path | None:
    """``<workspace>/gap_analysis`` for a benchmark workspace (or its ``torch_trace`` folder, or a trace in it), else
    None: magpie's run root (``./magpie_runs``, or the config's ``output.directory``), never next to traces it may
    only read."""
    base = trace_path if trace_path.is_dir() else trace_path.parent
    for workspace in (base, base.parent):
        if (workspace / "torch_trace").is_dir() and base in (workspace, workspace / "torch_trace"):
            return workspace / "gap_analysis"
    return None


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


# -- running the ranks -------------------------------------------------------------------------------------------


def _split_plan(files: list[TraceFile], workers: int) -> list[int]:
    """How many byte-range parts each file is read in, by threads of the process that analyzes it: with fewer files
    than workers, the large plain-JSON ones take the idle workers' share; otherwise each worker takes whole files
    (parts would only add merges)."""
    if workers <= 1 or len(files) >= workers:
        return [1] * len(files)
    return [part_count(f.path, workers // len(files)) for f in files]


def analyze_split(path: str, rank: int, label: str, options: AnalysisOptions, parts: int) -> RankAnalysis:
    """:func:`analyze_file` of a large plain-JSON file read in ``parts`` byte ranges on threads of this process; a part
    that cannot be read so means the whole file is read again by :func:`analyze_file`, which also reports what is
    wrong with it (:func:`analyze_parts`)."""
    with collector_paused():
        table = split_table(path, category_matcher(options.categories, options.ignore_categories), parts)
        return analyze_parts(path, rank, label, options, [table])


def _tasks(files: list[TraceFile], parts: list[int], options: AnalysisOptions) -> tuple[list[Task], list[float]]:
    """One task per file (read in parts on threads when split); weights: the bytes each reads."""
    tasks: list[Task] = []
    weights: list[float] = []
    for f, n in zip(files, parts, strict=True):
        weights.append(float(f.path.stat().st_size) if f.path.exists() else 0.0)
        if n == 1:
            tasks.append((analyze_file, (str(f.path), f.rank, f.label, options)))
        else:
            tasks.append((analyze_split, (str(f.path), f.rank, f.label, options, n)))
    return tasks, weights


def _rank_result(f: TraceFile, r: Any) -> RankAnalysis:
    """One file's analysis from its task's result; a worker that died is that rank's error."""
    if isinstance(r, BaseException):  # e.g. killed for memory
        return RankAnalysis(rank=f.rank, label=f.label, path=str(f.path), error=f"{f.path}: {r}")
    return r


def _run_ranks(files: list[TraceFile], options: AnalysisOptions, workers: int) -> list[RankAnalysis]:
    tasks, weights = _tasks(files, _split_plan(files, workers), options)
    results = run_tasks(tasks, workers, weights)
    return [_rank_result(f, r) for f, r in zip(files, results, strict=True)]


def _settle_ranks(results: list[RankAnalysis]) -> None:
    """Prefer distributedInfo ranks when they are present and distinct across files."""
    dist = [r.dist_rank for r in results if r.error is None]
    if len(results) > 1 and dist and None not in dist and len(set(dist)) == len(dist):
        for r in results:
            if r.error is None and r.dist_rank is not None:
                r.rank = r.dist_rank
                r.label = f"rank-{r.dist_rank}"
    results.sort(key=lambda r: (r.rank, r.path))


# -- from rank analyses to the summary ---------------------------------------------------------------------------


def _merge_kernels(good: list[RankAnalysis]) -> tuple[dict[str, KernelStat], dict[str, dict[str, Any]]]:
    """Kernel statistics over all ranks, and the first launch context seen of each kernel."""
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
    return merged, contexts


def _add_totals(result: GapAnalysisResult, good: list[RankAnalysis], merged: dict[str, KernelStat]) -> None:
    result.total_duration_us = sum(r.total_duration_us for r in good)
    result.gpu_busy_us = sum(r.busy_us for r in good)
    result.wall_us = sum(r.wall_us for r in good)
    span = sum(d.active_span_us for r in good for d in r.devices)
    result.gpu_idle_us = sum(d.idle_us for r in good for d in r.devices)
    result.gpu_idle_pct = 100.0 * result.gpu_idle_us / span if span > 0 else 0.0
    result.launch_bound = any(d.launch_bound for r in good for d in r.devices)
    result.num_kernel_names = len(merged)


def _rows(stats: dict[str, KernelStat], total: float, busy: float, wall: float, parsed: Parsed) -> list[TopKernel]:
    """Table rows, longest total time first."""
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


def _find_sources(
    kernels: list[TopKernel],
    config: GapAnalysisConfig,
    parsed: Parsed,
    contexts: dict[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, dict[str, Any]] | None, list[dict[str, Any]], list[str], list[str]]:
    """(sources by kernel name or None when no finder is installed, repositories, errors, CSV columns)."""
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        finder = get_plugin_manager().get("source_finder", SOURCE_FINDER)
    except UnknownComponentError as exc:
        return None, [], [f"kernel sources not searched: {exc}"], []
    # the launch context (CPU op, Python frames) lets the finder prefer the library the trace points to
    payload = [
        {"name": k.name, "parsed": parsed[k.name].model_dump(), "context": (contexts or {}).get(k.name)}
        for k in kernels
    ]
    options = {
        "repos": config.kernel_source_repos or [],
        "cache_dir": config.repos_base_dir,
        "clone": config.clone_repos,
    }
    summary = finder.find(payload, options)
    return (
        summary.get("sources", {}),
        summary.get("repos", []),
        list(summary.get("errors", [])),
        list(summary.get("columns", [])),
    )


def _write_top(
    result: GapAnalysisResult,
    all_rows: list[TopKernel],
    config: GapAnalysisConfig,
    out_dir: Path,
    parsed: Parsed,
    contexts: dict[str, dict[str, Any]] | None = None,
) -> None:
    """The top-k table (with kernel sources when asked) and the table of every kernel."""
    top = all_rows[: config.top_k]
    sources: dict[str, dict[str, Any]] | None = None
    columns: list[str] = []
    if config.find_kernel_sources:
        sources, result.source_repos, errs, columns = _find_sources(top, config, parsed, contexts)
        result.errors.extend(errs)
        for k in top:
            k.source = (sources or {}).get(k.name)
    result.top_kernels = top
    table = write_table(
        out_dir / "gap_analysis.csv", top, sources=sources, repos=result.source_repos, source_columns=columns
    )
    result.csv_path = str(table)
    result.full_csv_path = str(write_table(out_dir / "gap_analysis_all_kernels.csv", all_rows, sources=None))


def _device_summary(d: DeviceStats) -> DeviceSummary:
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
        host_stalls=[g.duration_us for g in d.host_stalls()],
        host_stalls_after=", ".join(sorted({g.cpu_op for g in d.host_stalls() if g.cpu_op})) or None,
        launch_records=d.launch_records,
        median_launch_to_start_us=d.median_launch_to_start_us,
        median_launch_call_us=d.median_launch_call_us,
        median_kernel_us=d.median_kernel_us,
        kernels_shorter_than_launch_pct=d.kernels_shorter_than_launch_pct,
        largest_gaps=[GapInfo(**{k: v for k, v in g.__dict__.items() if k != "device"}) for g in d.gaps],
        timeline=d.timeline,
    )


def _rank_summary(
    r: RankAnalysis, good: list[RankAnalysis], config: GapAnalysisConfig, out_dir: Path, parsed: Parsed
) -> RankSummary:
    """One rank's summary, with its own top-k table unless ``no_rank_csv``."""
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
        skipped_events=skipped_messages(r.skipped),
    )
    if r.error is None and not config.no_rank_csv:
        suffix = r.rank if sum(1 for x in good if x.rank == r.rank) == 1 else f"{r.rank}_{Path(r.path).stem}"
        rank_rows = _rows(r.kernels, r.total_duration_us, r.busy_us, r.wall_us, parsed)[: config.top_k]
        summary.csv_path = str(write_table(out_dir / f"gap_analysis_rank{suffix}.csv", rank_rows, sources=None))
    return summary


# -- the pipeline ------------------------------------------------------------------------------------------------


def _trace_files(trace_path: Path, result: GapAnalysisResult) -> list[TraceFile]:
    """The rank traces under ``trace_path``; none: the reason is in ``result.errors``."""
    if not trace_path.exists():
        result.errors.append(f"trace path not found: {trace_path}")
        return []
    files = discover(trace_path)
    if not files:
        result.errors.append(f"no trace files (*.json, *.json.gz) found in {trace_path}")
    return files


def _analyze_ranks(
    files: list[TraceFile], options: AnalysisOptions, workers: int, result: GapAnalysisResult
) -> list[RankAnalysis]:
    """Every rank's analysis, in rank order; broken ranks are in ``result.errors``."""
    n_workers = max(1, min(workers, sum(_split_plan(files, workers))))
    result.workers = n_workers
    log.debug("gap analysis of %d trace file(s) with %d worker(s)", len(files), n_workers)
    ranks = _run_ranks(files, options, n_workers)
    _settle_ranks(ranks)
    result.errors.extend(r.error for r in ranks if r.error is not None)
    return ranks


def _mixed_jobs(ranks: list[Any]) -> str | None:
    """A warning when the traces read as ranks of one job come from different platforms (a CPU recording, a CUDA
    run and a ROCm run in one folder): they are merged all the same, and their shares are of the mix."""
    by_platform: dict[str, list[str]] = {}
    for r in ranks:
        by_platform.setdefault(r.platform or "unknown", []).append(Path(r.path).name)
    if len(by_platform) < 2:
        return None
    parts = "; ".join(f"{platform}: {', '.join(names)}" for platform, names in sorted(by_platform.items()))
    return (
        f"these traces are not the ranks of one job ({parts}): they were merged as {len(ranks)} ranks and every "
        "share is of the mix; give one job's traces (a file, or a folder of one run's ranks)"
    )


def _not_one_jobs_ranks(ranks: list[Any]) -> str | None:
    """A warning when the ranks the traces record themselves (``distributedInfo``) say they are not one job's:
    two traces of the same rank, different world sizes, or more traces than their world size."""
    recorded: dict[int, list[str]] = {}
    for r in ranks:
        if r.dist_rank is not None:
            recorded.setdefault(r.dist_rank, []).append(Path(r.path).name)
    sizes = sorted({r.world_size for r in ranks if r.world_size is not None})
    problems = [f"rank {rank} in {', '.join(names)}" for rank, names in sorted(recorded.items()) if len(names) > 1]
    if len(sizes) > 1:
        problems.append(f"world sizes {', '.join(map(str, sizes))}")
    elif sizes and len(ranks) > sizes[0]:
        problems.append(f"{len(ranks)} traces of a world of {sizes[0]}")
    if len(ranks) < 2 or not problems:
        return None
    return (
        f"the traces' own ranks (distributedInfo) say they are not one job's ({'; '.join(problems)}): they were "
        "merged as ranks numbered in file order, and every share is of the mix"
    )


def gap_analysis(
    trace_path: Path,
    config: GapAnalysisConfig,
    output_dir: Path | None,
    *,
    window_annotation: str | None = None,
    window_us: tuple[float, float] | None = None,
    workers: int | None = None,
) -> GapAnalysisResult:
    """Analyze one trace file or a folder of rank traces; write CSVs and JSON under ``output_dir``.

    ``output_dir`` None: :func:`default_output_dir`. ``window_annotation``, ``window_us`` and ``workers``
    override the config's. Nothing to analyze (no such path, no trace in it): ``output_dir`` of the result is
    None and ``errors`` says why.
    """
    t0 = time.perf_counter()
    trace_path = Path(trace_path)
    result = GapAnalysisResult(config=config.model_dump(mode="json"), trace_path=str(trace_path))
    files = _trace_files(trace_path, result)
    if not files:
        return result
    out_dir = (
        Path(output_dir) if output_dir is not None else default_output_dir(trace_path) or Path(DEFAULT_OUTPUT_ROOT)
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    result.output_dir = str(out_dir)

    options = _options(config, window_annotation, window_us)
    ranks = _analyze_ranks(files, options, workers or config.workers or os.cpu_count() or 1, result)
    good = [r for r in ranks if r.error is None]
    result.num_ranks = len(good)
    result.errors.extend(
        f"rank {r.rank} ({Path(r.path).name}): {r.window_note}"
        for r in good
        if r.window_note and "not found" in r.window_note
    )
    result.warnings.extend(
        f"rank {r.rank} ({Path(r.path).name}): {msg}" for r in good for msg in skipped_messages(r.skipped)
    )
    result.warnings.extend(w for w in (_mixed_jobs(good), _not_one_jobs_ranks(good)) if w)
    merged, contexts = _merge_kernels(good)
    parsed = parse_many(sorted(merged), contexts)
    _add_totals(result, good, merged)

    all_rows = _rows(merged, result.total_duration_us, result.gpu_busy_us, result.wall_us, parsed)
    _write_top(result, all_rows, config, out_dir, parsed, contexts)
    result.ranks = [_rank_summary(r, good, config, out_dir, parsed) for r in ranks]
    result.gaps_csv_path = str(write_gaps(out_dir / "gpu_gaps.csv", result.ranks))
    result.elapsed_s = time.perf_counter() - t0
    json_path = out_dir / "gap_analysis.json"
    result.json_path = str(json_path)
    json_path.write_text(result.model_dump_json(indent=2) + "\n")
    return result
