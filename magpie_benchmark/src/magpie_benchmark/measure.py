"""The unprofiled measurement of a benchmark run: each load point's load sent and turned into its row of
``benchmark_report.json`` (metrics, client checks, the prompts' digest, a trace replay's sessions, the server's
prefix-cache counters), every point ``repeats`` times (:mod:`magpie_benchmark.repeats` pools them)."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_benchmark import repeats as rp
from magpie_benchmark.benchmark_server import ServerHandle, framework_or_none
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.fingerprint import prompt_digest
from magpie_benchmark.loadgen.metrics import PERCENTILES, compute_metrics, summarize
from magpie_benchmark.loadgen.replay import session_metrics
from magpie_benchmark.loadgen.runner import LoadResult, LoadSpec, run_load
from magpie_benchmark.loadgen.traces import TraceReplay
from magpie_benchmark.loadgen.traces import summary as trace_summary
from magpie_benchmark.workload import WORD_PROMPTS_WARNING, Point, make_requests, make_trace, trace_requests

if TYPE_CHECKING:
    from magpie_benchmark.report import BenchmarkReport

log = logging.getLogger("magpie.benchmark")


def run_point(
    config: BenchmarkConfig,
    base_url: str,
    model: str,
    point: Point,
    tokenizer: Any,
    num_prompts: int | None = None,
    label: str = "",
    warmup: int | None = None,
    seed_shift: int = 0,
    point_timeout_s: float | None = None,
    framework: Any | None = None,
) -> tuple[dict[str, Any], LoadResult]:
    """One load point against ``base_url``: its row of the report, and the load as it ran."""
    trace = make_trace(config, point, num_prompts, seed_shift, tokenizer) if point.trace else None
    if trace is not None:
        requests = trace_requests(trace.sessions)
    else:
        requests = make_requests(config, point, tokenizer, num_prompts or point.num_prompts, seed_shift)
    spec = _load_spec(config, base_url, model, point, requests, trace, label, warmup, point_timeout_s)
    probe = PrefixCacheProbe(framework or framework_or_none(config), base_url)
    load = run_load(spec)
    cache = probe.delta()
    row = _point_row(config, point, requests, spec, load, tokenizer)
    if trace is not None:
        row["warmup_requests"] = 0
        row["trace"] = _trace_block(config, trace, load, tokenizer)
    if cache is not None:
        row["prefix_cache"] = cache
    if config.load.save_requests:
        row["requests"] = [r.as_dict() for r in load.results]
    return row, load


def _load_spec(
    config: BenchmarkConfig,
    base_url: str,
    model: str,
    point: Point,
    requests: list[Any],
    trace: TraceReplay | None,
    label: str,
    warmup: int | None,
    point_timeout_s: float | None,
) -> LoadSpec:
    """What the load generator sends for ``point``: its requests (or trace sessions), rate, concurrency and waits."""
    timeout = config.sweep_matrix.per_client_timeout_s if config.sweep_matrix else config.timeout_seconds
    timeout = point_timeout_s or timeout
    return LoadSpec(
        base_url=base_url,
        model=model,
        requests=[] if trace else requests,  # no warm-up for a replay: it would fill the prefix cache
        endpoint=config.load.endpoint,
        request_rate=point.request_rate,
        burstiness=config.load.burstiness,
        max_concurrency=point.concurrency,
        warmup_requests=config.load.warmup_requests if warmup is None else warmup,
        ignore_eos=config.load.ignore_eos,
        seed=config.dataset.seed,
        request_timeout_s=config.load.request_timeout_s,
        request_deadline_s=config.load.request_deadline_s,
        stall_timeout_s=config.load.stall_timeout_s,
        point_timeout_s=timeout,
        extra_body=config.load.extra_body or None,
        progress=config.load.progress,
        label=label or point.label(),
        trace=trace,
    )


def _point_row(
    config: BenchmarkConfig, point: Point, requests: list[Any], spec: LoadSpec, load: LoadResult, tokenizer: Any
) -> dict[str, Any]:
    """The point's row: its shape, its metrics (SLOs and percentiles as configured), its client checks."""
    slo = {"ttft_ms": config.slo.ttft_ms, "tpot_ms": config.slo.tpot_ms, "e2el_ms": config.slo.e2el_ms}
    percentiles = sorted({*PERCENTILES, *config.load.metric_percentiles})
    metrics = compute_metrics(load.results, load.duration_s, tokenizer=tokenizer, slo_ms=slo, percentiles=percentiles)
    return {
        "concurrency": point.concurrency,
        "request_rate": None if math.isinf(point.request_rate) else point.request_rate,
        "burstiness": config.load.burstiness,
        "input_len": point.input_len,
        "output_len": point.output_len,
        "range_ratio": point.range_ratio,
        "num_prompts": len(requests),
        "warmup_requests": spec.warmup_requests,
        "endpoint": config.load.endpoint,
        **({"interrupted": True, "unfinished_requests": load.unfinished} if load.interrupted else {}),
        "metrics": metrics,
        "client_checks": _client_checks(load),
        "prompts": prompt_digest(requests),
    }


def _trace_block(config: BenchmarkConfig, trace: TraceReplay, load: LoadResult, tokenizer: Any) -> dict[str, Any]:
    """A replay point's ``trace``: the file, its settings, its sessions and turns, and how the prompts were built."""
    block = {
        "path": (trace.source or {}).get("cached_path", config.dataset.path),
        "source": trace.source,
        **config.load.trace.model_dump(),
        **trace_summary(trace.sessions),
        **session_metrics(load.results),
        "prompt_synthesis": "words" if tokenizer is None else "tokens",
    }
    if tokenizer is None:
        block["warning"] = WORD_PROMPTS_WARNING
        log.warning(WORD_PROMPTS_WARNING)
    return block


class PrefixCacheProbe:
    """The server's prefix-cache counters before a load point; :meth:`delta` reads them after it.

    The framework plugin says where and which counters (``metrics_path``, ``prefix_cache_counters``);
    a framework without them, or a server that does not answer, gives no numbers (never an error).
    """

    def __init__(self, framework: Any | None, base_url: str) -> None:
        path = getattr(framework, "metrics_path", None)
        self._read = (lambda: _counters(framework, base_url + path)) if path else (lambda: None)
        self._before = self._read()

    def delta(self) -> dict[str, Any] | None:
        after = self._read()
        if self._before is None or after is None:
            return None
        hits = after["hits"] - self._before["hits"]
        queries = after["queries"] - self._before["queries"]
        return {
            "hit_tokens": hits,
            "query_tokens": queries,
            "hit_rate": hits / queries if queries > 0 else None,
            "source": "server counters (framework plugin), difference over the point",
        }


def _counters(framework: Any, url: str) -> dict[str, float] | None:
    from magpie_benchmark.serving.prometheus import fetch

    text = fetch(url)
    return framework.prefix_cache_counters(text) if text is not None else None


def _client_checks(load: LoadResult) -> dict[str, Any]:
    lag = summarize(load.schedule_lag_s)
    checks: dict[str, Any] = {
        "clock": load.clock,
        "schedule_lag": lag,
        "target_rate": load.target_rate,
        "achieved_rate": load.achieved_rate,
        "warmup_failed": load.warmup_failed,
        "timed_out": load.timed_out,
        "stalled": load.stall is not None,
        "client_cpu_s": load.client_cpu_s,
    }
    chunks = sum(r.chunks for r in load.results)
    if load.client_cpu_s is not None and chunks:
        checks["client_cpu_us_per_chunk"] = 1e6 * load.client_cpu_s / chunks
    if load.client_cpu_s is not None and load.duration_s > 0:
        checks["client_cpu_share"] = load.client_cpu_s / load.duration_s  # of one core
    warnings = []
    if lag["p99_ms"] > 10.0:
        warnings.append(f"requests left up to {lag['p99_ms']:.1f} ms late (p99): the client may be the bottleneck")
    if load.target_rate and load.achieved_rate and load.achieved_rate < 0.95 * load.target_rate:
        warnings.append(f"achieved {load.achieved_rate:.2f} req/s of the {load.target_rate:.2f} targeted")
    checks["warnings"] = warnings
    checks["ok"] = not warnings
    return checks


def measure_points(
    config: BenchmarkConfig,
    handle: ServerHandle,
    model: str,
    points: list[Point],
    tokenizer: Any,
    report: BenchmarkReport,
    restart: rp.Restart | None = None,
    ws_path: Path | None = None,
    framework: Any | None = None,
) -> ServerHandle:
    """The unprofiled measurement: every load point, ``repeats`` times (each repeat's prompts drawn with
    seed + repeat, so a prefix cache cannot favour later repeats); stops when the server fails.
    Returns the server handle in use at the end (a new one after restarts)."""
    report.repeats = config.repeats
    loads: list[list[LoadResult]] = []
    for rep in range(config.repeats):
        if rep and restart is not None:
            handle = restart(handle, report, config.stop_grace_s)
        if not _measure_repeat(config, handle, model, points, tokenizer, report, rep, loads, ws_path, framework):
            break
    slo = {"ttft_ms": config.slo.ttft_ms, "tpot_ms": config.slo.tpot_ms, "e2el_ms": config.slo.e2el_ms}
    for row, point_loads in zip(report.points, loads, strict=False):
        rp.pool_repeats(row, point_loads, tokenizer, slo)
    return handle


def _measure_repeat(
    config: BenchmarkConfig,
    handle: ServerHandle,
    model: str,
    points: list[Point],
    tokenizer: Any,
    report: BenchmarkReport,
    rep: int,
    loads: list[list[LoadResult]],
    ws_path: Path | None,
    framework: Any | None = None,
) -> bool:
    """One repeat of every load point; False when the run must stop."""
    pause = config.load.inter_point_sleep_s or (config.sweep_matrix and config.sweep_matrix.inter_client_sleep_s)
    for i, point in enumerate(points):
        if (i or rep) and pause:
            time.sleep(pause)
        label = point.label() if config.repeats == 1 else f"repeat {rep + 1}/{config.repeats} {point.label()}"
        row, load = run_point(
            config, handle.base_url, model, point, tokenizer, label=label, seed_shift=rep, framework=framework
        )
        rp.record_repeat(report.points, i, row, rep, load, ws_path)
        if rep == 0:
            loads.append([])
        loads[i].append(load)
        if load.interrupted:
            raise KeyboardInterrupt  # the point kept its finished requests; the sweep stops here
        if handle.process:
            handle.process.check_alive()
        if load.timed_out:
            report.errors.append(f"point {point.label()} timed out; the server may hang")
            return False
        if load.stall is not None:  # the server stopped answering: the next points would wait the same way
            report.errors.append(f"point {point.label()} stopped ({handle.base_url}): {load.stall}")
            return False
        if row["metrics"]["completed"] == 0:
            report.errors.append(f"point {point.label()}: every request failed ({row['metrics']['failure_reasons']})")
            if config.sweep_matrix and config.sweep_matrix.on_failure == "abort":
                return False
    return True
