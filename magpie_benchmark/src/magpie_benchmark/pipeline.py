"""``magpie benchmark``: start (or reach) a serving framework, drive it, report.

One server lifetime per run. In order:

1. GPUs: pinned (``gpu_selection.devices``) or idle ones locked for this run.
2. Server: the framework plugin's argv, run locally or in a container, logs in
   ``server.log``; readiness is polled. ``external`` mode skips 1-2 and 7.
3. Measurement: every load point (one, or a sweep of concurrencies / rates /
   ``sweep_matrix`` cases), warm-up excluded, the profiler idle.
4. Diagnostic (``run_kind: diagnostic``, or ``auto`` with the torch profiler
   on): ``start_profile``, a short load, ``stop_profile``; traces are collected
   in ``torch_trace/`` and handed to gap analysis. Its numbers are kept apart
   and never replace the measurement.
5. Checks (``magpie_register_benchmark_checks``, e.g. the lm-eval quality gate) against the
   served model, after the load; a failed check fails the run, the load metrics stay.
6. ``benchmark_report.json`` with AMD Magpie's fields plus magpie's.
7. Server stopped (its process group), GPUs released, even after a failure.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field

from magpie_benchmark import lifecycle
from magpie_benchmark import repeats as rp
from magpie_benchmark.compat import (
    Refused,
    adapt_block,
    is_secret,
    redacted,
    server_envs,
    switched_on,
    throughput_block,
)
from magpie_benchmark.config import BenchmarkConfig, BenchmarkConfigFile
from magpie_benchmark.fingerprint import benchmark_fingerprint, engine_version, prompt_digest
from magpie_benchmark.interfaces import BenchmarkCheck, CheckTarget, CheckUnavailable, OfflineFramework
from magpie_benchmark.loadgen import agentx_corpus
from magpie_benchmark.loadgen import datasets as ds
from magpie_benchmark.loadgen.metrics import PERCENTILES, compute_metrics, summarize
from magpie_benchmark.loadgen.multimodal import attach_images
from magpie_benchmark.loadgen.probe import ProbeFailed, probe_server
from magpie_benchmark.loadgen.replay import session_metrics
from magpie_benchmark.loadgen.runner import LoadResult, LoadSpec, run_in_loop, run_load
from magpie_benchmark.loadgen.traces import TraceReplay, TraceSession, read_trace
from magpie_benchmark.loadgen.traces import summary as trace_summary
from magpie_benchmark.offline import redact_command, run_offline_benchmark
from magpie_benchmark.serving.docker import container_name, docker_command, stop_command, vendor_for
from magpie_benchmark.serving.gpu_leases import GpuLease, GpuSelectionError, select_gpus
from magpie_benchmark.serving.persistent import LifecycleError
from magpie_benchmark.serving.server import ServerError, ServerProcess, free_port
from magpie_core.config.common import dump
from magpie_core.config.loader import ConfigError, load_yaml, validate
from magpie_core.machine.hardware import write_report
from magpie_core.reports import Report
from magpie_core.runtime.interrupts import GRACE_S as INTERRUPT_GRACE_S
from magpie_core.runtime.interrupts import RunInterrupted
from magpie_core.runtime.workspace import Workspace, create_workspace

log = logging.getLogger("magpie.benchmark")

LATENCY_KEYS = ("ttft", "tpot", "itl", "e2el")


class BenchmarkReport(Report):
    """``benchmark_report.json``: AMD Magpie's fields, then magpie's own."""

    mode: str = "benchmark"
    success: bool = False
    framework: str = ""
    model: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    throughput: dict[str, Any] = Field(default_factory=dict)
    latency: dict[str, Any] = Field(default_factory=dict)
    kernel_summary: list[dict[str, Any]] = Field(default_factory=list)
    top_bottlenecks: list[dict[str, Any]] = Field(default_factory=list)
    tracelens_analysis: dict[str, Any] | None = None
    gap_analysis: dict[str, Any] | None = None
    gpu_monitor: dict[str, Any] | None = None
    errors: list[str] = Field(default_factory=list)
    execution_time: float = 0.0
    workspace_dir: str = ""
    profiling_enabled: bool = False
    run_kind: str = "measurement"
    # magpie's own
    run_mode: str = "local"
    base_url: str | None = None
    points: list[dict[str, Any]] = Field(default_factory=list)
    summary_point: int | None = None
    client_checks: dict[str, Any] = Field(default_factory=dict)
    diagnostic: dict[str, Any] | None = None
    server: dict[str, Any] = Field(default_factory=dict)
    gpus: dict[str, Any] = Field(default_factory=dict)
    metric_definitions: str = "TTFT, TPOT, ITL, E2EL and throughputs as defined in docs/benchmark.md"
    #: measurement repeats, and the summary point's between-repeat spread per metric (docs/optimization-loop.md)
    repeats: int = 1
    repeat_stats: dict[str, Any] | None = None
    #: what was measured and on what: compared runs must share ``workload`` (magpie_benchmark.fingerprint)
    fingerprint: dict[str, Any] | None = None
    #: ``profiler.targeted_trace``: the bounded summary and the manifest path (AMD Magpie's report keeps the same)
    targeted_trace: dict[str, Any] | None = None
    #: AMD Magpie's field: an offline framework's own metrics (e.g. images_per_sec), as its plugin read them
    raw_result: dict[str, Any] | None = None
    #: an offline framework's command runs (argv with secrets hidden, exit code, log, result file)
    offline: dict[str, Any] | None = None
    #: each benchmark check's verdict by check name (``passed``, ``summary``, the check's own fields)
    checks: dict[str, Any] = Field(default_factory=dict)


@dataclass
class Point:
    """One load point of a sweep."""

    concurrency: int | None
    request_rate: float
    input_len: int
    output_len: int
    num_prompts: int
    range_ratio: float

    trace: bool = False

    def label(self) -> str:
        if self.trace:
            return f"trace conc={self.concurrency}"
        rate = "inf" if math.isinf(self.request_rate) else f"{self.request_rate:g}"
        return f"conc={self.concurrency} rate={rate} isl={self.input_len} osl={self.output_len}"


# --- configuration ------------------------------------------------------------------


def load_benchmark_config(path: Path) -> BenchmarkConfig:
    """A benchmark YAML: AMD Magpie's ``benchmark:`` block, or the block's keys at top level.

    The ``envs`` keys magpie consumes become its own keys first (``magpie_benchmark.compat``).
    """
    data, lines = load_yaml(path)
    nested = isinstance(data, dict) and "benchmark" in data
    block = data["benchmark"] if nested else data
    if isinstance(block, dict):

        def line_of(key: str) -> int | None:
            return lines.get(("benchmark", key) if nested else (key,))

        try:
            block, warnings = adapt_block(block)
        except Refused as exc:
            raise ConfigError(path, str(exc), line_of(exc.key)) from None
        except ValueError as exc:
            raise ConfigError(path, str(exc), line_of("envs")) from None
        for message in warnings:
            log.warning("%s:%s: %s", path, line_of("envs"), message)
    if nested:
        return validate(BenchmarkConfigFile, {**data, "benchmark": block}, path, lines).benchmark
    return validate(BenchmarkConfig, block or {}, path, lines)


@dataclass(frozen=True)
class RunOverrides:
    """What a command line (``magpie benchmark``'s flags) or an MCP ``benchmark`` call sets over a benchmark YAML, in
    one type both build: ``None`` is "not given"; ``patch``: nested config keys (the load flags) merged over the file's.
    """

    model: str | None = None
    precision: str | None = None
    tp: int | None = None
    concurrency: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    torch_profiler: bool | None = None
    run_mode: str | None = None
    run_kind: str | None = None
    base_url: str | None = None
    docker_image: str | None = None
    timeout: float | None = None
    repeats: int | None = None
    restart_between_repeats: bool | None = None
    patch: dict[str, Any] = field(default_factory=dict)


def apply_overrides(
    config: BenchmarkConfig, framework: str | None, overrides: RunOverrides, *, from_file: bool = False
) -> BenchmarkConfig:
    """Command-line (or tool-call) values on top of the file. A torch profiler the file and flags leave unset is on
    for a file (AMD Magpie's default), off for a command-line run and for an external server."""
    data = config.model_dump()
    for block, values in overrides.patch.items():
        data[block] = _merged(data[block], values)
    envs = dict(data["envs"])
    if framework:
        data["framework"] = framework
    simple = {
        "model": "model",
        "precision": "precision",
        "run_mode": "run_mode",
        "run_kind": "run_kind",
        "base_url": "base_url",
        "docker_image": "docker_image",
        "timeout": "timeout_seconds",
        "repeats": "repeats",
        "restart_between_repeats": "restart_between_repeats",
    }
    for key, name in simple.items():
        if getattr(overrides, key) is not None:
            data[name] = getattr(overrides, key)
    for key, env in {"tp": "TP", "concurrency": "CONC", "input_len": "ISL", "output_len": "OSL"}.items():
        if getattr(overrides, key) is not None:
            envs[env] = getattr(overrides, key)
    data["envs"] = envs
    for key, block in config.plugin_blocks().items():  # a plugin may care which of its keys the file set
        data[key] = block.model_dump(exclude_unset=True)
    for key, block in config.profiler.plugin_blocks().items():
        data["profiler"][key] = block.model_dump(exclude_unset=True)
    if overrides.torch_profiler is not None:
        data["profiler"]["torch_profiler"]["enabled"] = overrides.torch_profiler
    if overrides.base_url and overrides.run_mode is None:
        data["run_mode"] = "external"
    torch = data["profiler"]["torch_profiler"]
    if torch["enabled"] is None:
        lifecycle = data.get("server_lifecycle") or {}
        kept_alive = lifecycle.get("enabled") and not lifecycle.get("cleanup")
        torch["enabled"] = from_file and data["run_mode"] != "external" and not kept_alive
    return validate(BenchmarkConfig, data, "command line")


def _merged(base: Any, patch: Any) -> Any:
    """``patch`` over ``base``, mapping by mapping (a flag sets one key of a nested block, not the block)."""
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    return {**base, **{k: _merged(base.get(k), v) for k, v in patch.items()}}


def plan_points(config: BenchmarkConfig) -> list[Point]:
    """The load points of this run, in order."""
    envs = config.envs
    load, dset = config.load, config.dataset
    conc = load.max_concurrency or config.env_int("CONC")
    isl = dset.input_len or config.env_int("ISL") or 1024
    osl = dset.output_len or config.env_int("OSL") or 512
    rrr = dset.range_ratio if dset.range_ratio is not None else float(envs.get("RANDOM_RANGE_RATIO", 0.0))
    rate = load.request_rate if load.request_rate is not None else math.inf

    def prompts(c: int | None, explicit: int | None = None) -> int:
        return explicit or load.num_prompts or config.env_int("NUM_PROMPTS") or 10 * (c or 1)

    if config.sweep_matrix and config.sweep_matrix.cases:
        out = []
        for case in config.sweep_matrix.cases:
            c = case.CONC or conc
            out.append(
                Point(
                    c,
                    case.request_rate or rate,
                    case.ISL or isl,
                    case.OSL or osl,
                    prompts(c, case.NUM_PROMPTS),
                    case.RANDOM_RANGE_RATIO if case.RANDOM_RANGE_RATIO is not None else rrr,
                )
            )
        return out
    concs: list[int | None] = list(load.concurrencies) if load.concurrencies else [conc]
    if dset.name == "trace":  # the trace sets the arrivals: one point per concurrency
        return [Point(c, math.inf, isl, osl, prompts(c), rrr, trace=True) for c in concs]
    rates = list(load.request_rates) if load.request_rates else [rate]
    return [Point(c, r, isl, osl, prompts(c), rrr) for c in concs for r in rates]


def trace_problem(config: BenchmarkConfig) -> str | None:
    """Why a trace replay cannot start (no file, a bad row naming file:line), checked before any server."""
    if config.dataset.name != "trace":
        return None
    try:
        make_trace(config, plan_points(config)[0])
    except ds.DatasetError as exc:
        return f"agentx is on: {exc}" if switched_on(config.agentx) else str(exc)
    return None


def make_trace(
    config: BenchmarkConfig, point: Point, max_sessions: int | None = None, seed_shift: int = 0, tokenizer: Any = None
) -> TraceReplay:
    """The sessions of ``dataset.path`` as ``load.trace`` says (hash-id texts salted per repeat; lengths in
    ``tokenizer``'s tokens, else in words)."""
    tr, dset = config.load.trace, config.dataset
    source = trace_source(config)
    sessions = read_trace(
        source.path,
        fmt=tr.format,
        time_scale=tr.time_scale,
        block_size=tr.block_size,
        default_output_len=dset.output_len or point.output_len,
        max_sessions=max_sessions or tr.max_sessions,
        salt=dset.seed + seed_shift,
        tokenizer=tokenizer,
    )
    return TraceReplay(sessions, keep_timing=tr.timing == "trace", source=source.report())


def trace_source(config: BenchmarkConfig) -> agentx_corpus.CorpusFile:
    """The trace file to replay: ``dataset.path``, ``dataset.url`` (cached download), or with ``agentx`` on
    InferenceX's agentic-coding corpus (see :mod:`magpie_benchmark.loadgen.agentx_corpus`)."""
    dset = config.dataset
    source = agentx_corpus.resolve(
        path=dset.path,
        url=dset.url,
        expected_sha256=dset.sha256,
        agentx=switched_on(config.agentx),
        model=config.model,
        envs={str(k).upper(): v for k, v in config.envs.items()},
    )
    if source is None:
        raise ds.DatasetError(
            "dataset.name is trace: set dataset.path (--dataset-path) to the trace file to replay (Mooncake JSONL, "
            "AIPerf multi_turn sessions or Weka agentic traces), or dataset.url to download one"
        )
    return source


#: ``points[i].trace.warning`` when a replay's prompts are built from words (no tokenizer)
WORD_PROMPTS_WARNING = (
    "no tokenizer: the trace's input lengths and hash-id blocks are tokens, but its prompts were built from "
    "plain words, so the server saw another number of tokens (see trace.prompt_tokens) and shared blocks are "
    "not block_size tokens long; set `tokenizer` (--tokenizer) to the served model's tokenizer"
)


def _trace_requests(sessions: list[TraceSession]) -> list[ds.SampleRequest]:
    """Each turn's new user message as a request (for the prompt digest of the fingerprint)."""
    return [ds.SampleRequest(t.text, t.input_len, t.output_len) for s in sessions for t in s.turns]


def make_requests(config: BenchmarkConfig, point: Point, tokenizer: Any, num: int, seed_shift: int = 0) -> list[Any]:
    dset = config.dataset
    if dset.name == "random":
        requests = ds.random_requests(
            num,
            point.input_len,
            point.output_len,
            point.range_ratio,
            dset.prefix_len,
            dset.seed + seed_shift,
            tokenizer,
        )
        if dset.multimodal is None:
            return requests
        return attach_images(requests, dset.multimodal.spec(), dset.seed + seed_shift)
    if not dset.path:
        raise ds.DatasetError(f"dataset.name {dset.name!r} needs dataset.path")
    fixed_out = dset.output_len
    if dset.name == "sharegpt":
        return ds.sharegpt_requests(dset.path, num, tokenizer, fixed_out, dset.seed + seed_shift)
    return ds.jsonl_requests(dset.path, num, tokenizer, fixed_out or point.output_len)


# --- server ---------------------------------------------------------------------------


@dataclass
class ServerHandle:
    base_url: str
    process: ServerProcess | None
    info: dict[str, Any]


def _http_post(url: str, timeout: float = 600.0, body: dict[str, Any] | None = None) -> tuple[int, str]:
    with httpx.Client(timeout=timeout) as client:
        resp = client.post(url) if body is None else client.post(url, json=body)
        return resp.status_code, resp.text[:300]


def served_model(base_url: str, fallback: str, timeout_s: float = 10.0) -> str:
    """The first model ``/v1/models`` lists (``fallback`` if it cannot say within ``timeout_s``)."""
    try:
        with httpx.Client(timeout=timeout_s) as client:
            data = client.get(base_url + "/v1/models").json().get("data") or []
        return str(data[0]["id"]) if data else fallback
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        return fallback


def server_argv(config: BenchmarkConfig, framework: Any, host: str, port: int, profile_dir: Path | None) -> list[str]:
    """The engine's command line: the plugin's, its profiler flags when profiling, then ``server_args``."""
    argv = list(framework.server_command(config, host, port))
    if profile_dir is not None:
        argv += framework.profiler_args(config, profile_dir)
    return argv + list(config.server_args)


def probe(config: BenchmarkConfig, base_url: str, report: BenchmarkReport) -> str:
    """Check that the server answers before any load (:mod:`magpie_benchmark.loadgen.probe`); the model name to
    send. Its timings go to ``report.server["probe"]``; :class:`ProbeFailed`, logged at once, when it does not."""
    load = config.load
    # the user's timeout bounds every wait, the probe's too (a silent server held `--timeout 5` for 35 s)
    step_s = min(load.probe_timeout_s, config.timeout_seconds)
    log.info("probing %s (each step at most %g s)", base_url, step_s)
    try:
        found = run_in_loop(
            lambda: probe_server(
                base_url,
                config.served_model_name,
                config.model,
                load.endpoint,
                step_s,
                ignore_eos=load.ignore_eos,
                extra_body=load.extra_body or None,
            )
        )
    except ProbeFailed as exc:
        log.error("the server is not answering: %s", exc)
        raise
    report.server["probe"] = found.as_dict()
    for note in found.notes:
        log.warning(note)
    return config.served_model_name or found.listed_model or config.model


def start_server(
    config: BenchmarkConfig, framework: Any, ws: Workspace, lease: GpuLease, profile_dir: Path | None
) -> ServerHandle:
    host = config.host
    port = config.port or free_port(host)
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    argv = server_argv(config, framework, host, port, profile_dir)
    server_env = {**server_envs(config.envs), **framework.server_env(config, profile_dir), **config.server_env}
    server_env.update(lease.env())
    stop_argv = None
    if config.run_mode == "docker":
        image = config.docker_image or framework.default_image(config.gpu_arch)
        if not image:
            raise ServerError(
                f"no docker_image given and {framework.name!r} has no default for gpu_arch {config.gpu_arch!r}"
            )
        name = container_name(ws.path.name)
        mounts = [ws.path]
        if Path(config.model).exists():
            mounts.append(Path(config.model))
        argv = docker_command(
            image=image,
            inner_argv=argv,
            name=name,
            vendor=vendor_for(config.gpu_arch, lease.vendor),
            devices=lease.indices,
            env=server_env,
            mounts=mounts,
            hf_cache=config.hf_cache_path,
        )
        stop_argv = stop_command(name, int(config.stop_grace_s))
        # secrets travel by name (-e KEY): docker reads their values from its own environment
        env = {**os.environ, **{k: v for k, v in server_env.items() if is_secret(k)}}
    else:
        env = {**os.environ, **server_env}
    proc = ServerProcess(argv, env, ws.path / "server.log", stop_argv=stop_argv)
    info: dict[str, Any] = {"argv": argv, "env": sorted(server_env), "log": str(proc.log_path), "port": port}
    proc.start()
    base_url = f"http://{host}:{port}"
    info["pid"] = proc.pid
    try:
        info["ready_s"] = proc.wait_ready(base_url + framework.readiness_path, config.server_ready_timeout_s)
    except BaseException:
        proc.stop(grace_s=min(config.stop_grace_s, 5.0))  # a server that never became ready is not left behind
        raise
    log.info("server ready in %.1f s at %s", info["ready_s"], base_url)
    return ServerHandle(base_url, proc, info)


# --- load points ------------------------------------------------------------------------


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
    trace = make_trace(config, point, num_prompts, seed_shift, tokenizer) if point.trace else None
    if trace is not None:
        requests = _trace_requests(trace.sessions)
    else:
        requests = make_requests(config, point, tokenizer, num_prompts or point.num_prompts, seed_shift)
    timeout = config.sweep_matrix.per_client_timeout_s if config.sweep_matrix else config.timeout_seconds
    timeout = point_timeout_s or timeout
    spec = LoadSpec(
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
    probe = PrefixCacheProbe(framework or _framework_or_none(config), base_url)
    load = run_load(spec)
    cache = probe.delta()
    slo = {"ttft_ms": config.slo.ttft_ms, "tpot_ms": config.slo.tpot_ms, "e2el_ms": config.slo.e2el_ms}
    percentiles = sorted({*PERCENTILES, *config.load.metric_percentiles})
    metrics = compute_metrics(load.results, load.duration_s, tokenizer=tokenizer, slo_ms=slo, percentiles=percentiles)
    row: dict[str, Any] = {
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
    if trace is not None:
        row["warmup_requests"] = 0
        row["trace"] = {
            "path": (trace.source or {}).get("cached_path", config.dataset.path),
            "source": trace.source,
            **config.load.trace.model_dump(),
            **trace_summary(trace.sessions),
            **session_metrics(load.results),
            "prompt_synthesis": "words" if tokenizer is None else "tokens",
        }
        if tokenizer is None:
            row["trace"]["warning"] = WORD_PROMPTS_WARNING
            log.warning(WORD_PROMPTS_WARNING)
    if cache is not None:
        row["prefix_cache"] = cache
    if config.load.save_requests:
        row["requests"] = [r.as_dict() for r in load.results]
    return row, load


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


# --- diagnostic run -------------------------------------------------------------------


def wait_for_traces(folder: Path, patterns: tuple[str, ...], timeout_s: float, settle_s: float = 2.0) -> list[Path]:
    """Trace files under ``folder`` once they exist and their sizes stop changing."""
    deadline = time.monotonic() + timeout_s
    last: dict[Path, int] = {}
    stable_since = None
    while True:
        found = {p: p.stat().st_size for pat in patterns for p in folder.rglob(pat) if p.is_file()}
        if found and found == last:
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since >= settle_s:
                return sorted(found)
        else:
            stable_since = None
        last = found
        if time.monotonic() > deadline:
            return sorted(found)
        time.sleep(0.5)


#: the trace analyzer of ``gap_analysis:`` (plugin distribution magpie-gap-analysis)
GAP_ANALYZER = "gap"


def run_trace_analyzer(
    name: str, distribution: str, what: str, trace_dir: Path, options: dict[str, Any], out_dir: Path
) -> dict[str, Any]:
    """The installed trace analyzer ``name`` on ``trace_dir``: its summary, or ``errors`` (never raises:
    the measurement must survive a missing or broken analysis)."""
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        analyzer = get_plugin_manager().get("trace_analyzer", name)
    except UnknownComponentError as exc:
        message = f"{what} is not available: install the plugin distribution {distribution} ({exc})"
        return {"errors": [message], "trace_dir": str(trace_dir)}
    try:
        data = dict(analyzer.analyze(trace_dir, options, out_dir))
    except (ValueError, OSError) as exc:
        return {"errors": [str(exc)], "trace_dir": str(trace_dir)}
    except Exception as exc:
        return {"errors": [f"{what} failed: {type(exc).__name__}: {exc}"], "trace_dir": str(trace_dir)}
    data.setdefault("trace_dir", str(trace_dir))
    return data


def block_options(block: Any) -> dict[str, Any]:
    """A plugin config block's settings as the analyzer's options (no block: {}, the analyzer's defaults)."""
    return block.model_dump() if block is not None else {}


def run_gap_analysis(config: BenchmarkConfig, trace_dir: Path, out_dir: Path) -> dict[str, Any]:
    """``gap_analysis:`` by the installed ``gap`` trace analyzer: its summary, or ``errors`` (never raises)."""
    options = block_options(config.plugin_block("gap_analysis"))
    return run_trace_analyzer(GAP_ANALYZER, "magpie-gap-analysis", "gap analysis", trace_dir, options, out_dir)


#: the trace analyzer of ``profiler.targeted_trace`` (plugin distribution magpie-targeted-trace)
TARGETED_ANALYZER = "targeted-trace"


def run_targeted_trace(config: BenchmarkConfig, trace_dir: Path, out_dir: Path, run_id: str) -> dict[str, Any]:
    """``profiler.targeted_trace``: the capture's matching kernels as checksummed shards, validated; the
    analyzer's bounded summary, its integrity issues as ``errors``."""
    block = block_options(config.profiler.plugin_block("targeted_trace"))
    options = {**block, "run_id": run_id, "framework": config.framework}
    data = run_trace_analyzer(TARGETED_ANALYZER, "magpie-targeted-trace", "targeted trace", trace_dir, options, out_dir)
    data.setdefault("errors", list(data.get("issues") or []))
    return data


TRACE_ANALYZER = "inference"


def run_tracelens_analysis(
    config: BenchmarkConfig, trace_dir: Path, out_dir: Path, point: Point | None
) -> dict[str, Any]:
    """``profiler.tracelens``: stage split and roofline by the installed ``inference`` trace analyzer.

    Writes ``<stage>_ISL<i>_OSL<o>_CONC<c>_kernel_roofline_simple.csv`` (AMD Magpie's names) and the rest
    under ``out_dir``; returns the analyzer's summary with ``outputs`` and ``errors`` (never raises).
    """
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    tl = config.profiler.tracelens
    result: dict[str, Any] = {"trace_dir": str(trace_dir), "output_dir": str(out_dir), "outputs": [], "errors": []}
    try:
        analyzer = get_plugin_manager().get("trace_analyzer", TRACE_ANALYZER)
    except UnknownComponentError as exc:
        result["errors"].append(str(exc))
        return result
    options: dict[str, Any] = {
        "stages": tl.analysis_stages,
        # excel: the CSVs, and one workbook of them (inference_tables_<label>.xlsx)
        "export_format": tl.export_format,
        # an offline workload (no point) has no load shape to name its tables by
        "label_suffix": f"_ISL{point.input_len}_OSL{point.output_len}_CONC{point.concurrency}" if point else "",
    }
    if tl.gpu_arch_config:
        options["spec"] = tl.gpu_arch_config
    notes = []
    if tl.analysis_mode != "inference":
        notes.append(f"analysis_mode {tl.analysis_mode!r}: magpie runs the inference analysis (use magpie gap too)")
    try:
        summary = analyzer.analyze(trace_dir, options, out_dir)
    except Exception as exc:  # the measurement must survive a broken analysis
        result["errors"].append(f"trace analysis failed: {type(exc).__name__}: {exc}")
        return result
    summary = dict(summary)
    summary.setdefault("errors", [])
    summary.setdefault("outputs", [])
    summary["trace_dir"] = str(trace_dir)
    summary["notes"] = notes
    return summary


def run_diagnostic(
    config: BenchmarkConfig,
    framework: Any,
    handle: ServerHandle,
    model: str,
    point: Point,
    tokenizer: Any,
    ws: Workspace,
    capture: int = 0,
) -> dict[str, Any]:
    """One profiled capture: start_profile, a short load, stop_profile, then wait for its traces.

    With ``profiler.torch_profiler.num_profiles`` above 1, each capture's new traces are moved to
    ``torch_trace/profile_<NNN>/`` (AMD Magpie's layout), so every capture is analyzed on its own.
    """
    tp = config.profiler.torch_profiler
    trace_dir = ws.path / "torch_trace"
    out: dict[str, Any] = {"trace_dir": str(trace_dir), "errors": [], "capture": capture + 1}
    if not framework.start_profile_path:
        out["errors"].append(f"{framework.name} has no profiler endpoints")
        return out
    if tp.num_steps and not getattr(framework, "supports_num_steps", False):
        out["errors"].append(f"profiler.torch_profiler.num_steps: {framework.name} cannot limit a capture to steps")
    before = set(_traces_now(trace_dir, framework.trace_patterns))
    num = config.load.diagnostic_num_prompts or max(point.concurrency or 1, 1)
    body = framework.start_profile_body(config) if hasattr(framework, "start_profile_body") else None
    status, text = _http_post(handle.base_url + framework.start_profile_path, body=body)
    out["start_profile"] = status
    if status >= 300:
        out["errors"].append(f"start_profile answered HTTP {status}: {text}")
        return out
    try:
        row, load = run_point(
            config,
            handle.base_url,
            model,
            point,
            tokenizer,
            num_prompts=num,
            label="diagnostic (profiled)",
            warmup=0,
            point_timeout_s=tp.capture_timeout_seconds,
            framework=framework,
        )
        out["point"] = row
        if load.stall is not None:
            out["errors"].append(f"the profiled load stopped: {load.stall}")
        if load.interrupted:
            raise KeyboardInterrupt  # no waiting for traces: the run is stopping
    finally:
        status, text = _http_post(handle.base_url + framework.stop_profile_path)
        out["stop_profile"] = status
        if status >= 300:
            out["errors"].append(f"stop_profile answered HTTP {status}: {text}")
    flush_s = tp.flush_timeout_seconds or min(config.timeout_seconds, 300)
    traces = [p for p in wait_for_traces(trace_dir, framework.trace_patterns, timeout_s=flush_s) if p not in before]
    if tp.num_profiles > 1 and traces:
        trace_dir = trace_dir / f"profile_{capture + 1:03d}"
        traces = _move_into(traces, trace_dir)
        out["trace_dir"] = str(trace_dir)
    out["traces"] = [str(p) for p in traces]
    if not traces:
        out["errors"].append(f"no trace file appeared under {trace_dir} within {flush_s:g} s")
    return out


def _traces_now(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    return [p for pat in patterns for p in folder.rglob(pat) if p.is_file()] if folder.is_dir() else []


def _move_into(files: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [f.rename(folder / f.name) for f in files]


# --- the run -----------------------------------------------------------------------------


def serving_framework(name: str | None) -> Any:
    from magpie_core.plugins import get_plugin_manager

    if not name:
        from magpie_core.plugins import UnknownComponentError

        raise UnknownComponentError("no framework given: set benchmark.framework or pass it as the FRAMEWORK argument")
    return get_plugin_manager().get("serving_framework", name)


def _detect_gpus() -> list[Any]:
    from magpie_core.plugins import get_plugin_manager

    return get_plugin_manager().detect_gpus()


def _tokenizer(config: BenchmarkConfig, report: BenchmarkReport) -> Any:
    name = config.tokenizer or (config.model if Path(config.model).exists() else None)
    try:
        tok = ds.load_tokenizer(name)
    except Exception as exc:  # a missing hub tokenizer must not stop the run
        report.client_checks.setdefault("notes", []).append(f"tokenizer {name!r} not loaded: {exc}")
        return None
    if tok is None:
        import importlib.util

        fix = (
            "give `tokenizer` (a hub name or a local folder) in the benchmark YAML"
            if importlib.util.find_spec("transformers")
            else "install transformers (pip install 'magpie-benchmark[tokenizer]') and give `tokenizer`"
        )
        note = (
            "no tokenizer: random and trace prompts are plain words, so the server decides their token count "
            "(often several tokens per word: not the requested input length, and not comparable with another "
            f"tool's run of the same dataset); {fix}. Output tokens come from the server's usage counts, else from "
            "chunk counts"
        )
        report.client_checks.setdefault("notes", []).append(note)
        log.warning(note)
    return tok


@dataclass
class _Held:
    """What a run holds and gives back whatever happens: its GPUs, its server, a kept server's lifecycle info."""

    lease: GpuLease | None = None
    handle: ServerHandle | None = None
    kept: dict[str, Any] | None = None


def run_benchmark(
    config: BenchmarkConfig, output_dir: Path, *, framework_component: Any | None = None
) -> BenchmarkReport:
    """Run the benchmark ``config`` describes; write and return its report."""
    t0 = time.monotonic()
    ws = create_workspace(output_dir, "benchmark", config.framework)
    hidden = {"envs": redacted(config.envs), "server_env": redacted(config.server_env)}
    if config.run_cmd:
        hidden["run_cmd"] = redact_command(config.run_cmd)
    ws.snapshot_config({"benchmark": {**dump(config), **hidden}})
    handler = ws.attach_log()
    measure = config.run_kind in ("measurement", "auto")
    diagnose = config.run_kind == "diagnostic" or (
        config.run_kind == "auto" and config.profiler.torch_profiler.enabled is True
    )
    report = BenchmarkReport(
        framework=config.framework or "",
        model=config.model,
        config={**config.model_dump(mode="json"), **hidden},
        workspace_dir=str(ws.path),
        workspace=str(ws.path),
        run_kind=config.run_kind,
        profiling_enabled=diagnose,
        run_mode=config.run_mode,
    )
    held = _Held()
    try:
        framework = framework_component
        if framework is None and (config.run_mode != "external" or diagnose or config.run_cmd):
            framework = serving_framework(config.framework)
        if isinstance(framework, OfflineFramework):
            held.lease = _lease_gpus(config)
            report.gpus = held.lease.as_dict()
            run_offline_benchmark(
                config,
                framework,
                ws,
                report,
                held.lease.env(),
                measure=measure,
                diagnose=diagnose,
                analyze=lambda trace_dir, diag: _analyze_capture(config, trace_dir, ws, None, report, diag, None),
            )
        else:
            _serve_and_measure(config, framework, ws, report, held, measure=measure, diagnose=diagnose)
    except (
        ServerError,
        GpuSelectionError,
        ds.DatasetError,
        NotImplementedError,
        LifecycleError,
        CheckUnavailable,
        ProbeFailed,
    ) as exc:
        report.errors.append(str(exc))
    except KeyboardInterrupt:
        report.interrupted = True
        report.errors.append("interrupted (Ctrl-C): the report holds the requests that finished before it")
    except Exception as exc:
        log.exception("benchmark failed")
        report.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        _give_back(config, report, held)
        summarize_report(report)
        report.execution_time = time.monotonic() - t0
        write_report(report, ws.report_path)
        logging.getLogger("magpie").removeHandler(handler)
        handler.close()
    if report.interrupted:
        if report.offline is not None:
            raise RunInterrupted("benchmark interrupted: the offline command was stopped", ws.report_path)
        done = sum(p["metrics"]["completed"] for p in report.points)
        raise RunInterrupted(f"benchmark interrupted: {done} request(s) completed", ws.report_path)
    return report


def _serve_and_measure(
    config: BenchmarkConfig,
    framework: Any,
    ws: Workspace,
    report: BenchmarkReport,
    held: _Held,
    *,
    measure: bool,
    diagnose: bool,
) -> None:
    """A served model: the server started (or reached, or kept), the load points measured, the checks run, the
    profiled diagnostic pass; ``held`` takes what must be given back."""
    if config.run_cmd:
        note = (
            f"benchmark.run_cmd is the command of an offline framework; {config.framework!r} starts a "
            "server, so run_cmd is not run (AMD Magpie ignores it there too)"
        )
        log.warning(note)
        report.client_checks.setdefault("notes", []).append(note)
    points = plan_points(config)
    checks = preflight_checks(config)
    handle = held.handle = _serve(config, framework, ws, report, held, diagnose)
    report.server = handle.info
    report.base_url = handle.base_url
    engine = engine_version(framework or _framework_or_none(config), handle.base_url)
    if engine:
        report.server["engine_version"] = engine
    model = probe(config, handle.base_url, report)
    tokenizer = _tokenizer(config, report)
    if measure:
        restart = None
        if config.restart_between_repeats and handle.process is not None:
            lease = held.lease
            restart = rp.restarter(lambda: start_server(config, framework, ws, lease, _profile_dir(ws, diagnose)))
        handle = held.handle = _measure_points(
            config, handle, model, points, tokenizer, report, restart, ws.path, framework
        )
        _fingerprint(config, report, framework, tokenizer)
    if checks:
        run_checks(checks, CheckTarget(handle.base_url, model, config, ws.path), report)
    if diagnose and handle.process is not None:
        _diagnose(config, framework, handle, model, points[0], tokenizer, ws, report)
    elif diagnose and held.kept is not None:
        report.errors.append("profiling needs a server this run starts; a reused server runs without the profiler")


def _serve(
    config: BenchmarkConfig, framework: Any, ws: Workspace, report: BenchmarkReport, held: _Held, diagnose: bool
) -> ServerHandle:
    """The server the load goes to: an external one, a kept one (``server_lifecycle``), or one started now."""
    if config.run_mode == "external":
        return _external_server(config, report, diagnose)
    if config.server_lifecycle and config.server_lifecycle.enabled:
        trace_dir = ws.path / "torch_trace" if diagnose else None
        handle, held.lease, held.kept = lifecycle.acquire(
            config,
            framework,
            lease_gpus=lambda: _lease_gpus(config),
            start=lambda cfg, gpus: start_server(cfg, framework, ws, gpus, trace_dir),
            handle_type=ServerHandle,
        )
        report.gpus = held.lease.as_dict() if held.lease else {"how": "reused server"}
        return handle
    held.lease = _lease_gpus(config)
    report.gpus = held.lease.as_dict()
    return start_server(config, framework, ws, held.lease, _profile_dir(ws, diagnose))


def _give_back(config: BenchmarkConfig, report: BenchmarkReport, held: _Held) -> None:
    """The server stopped (a kept one handed back to its lifecycle) and the GPUs released."""
    if held.kept is not None and held.handle is not None:
        lifecycle.finish(config, held.handle, held.kept)
    elif held.handle is not None and held.handle.process is not None:
        grace = min(config.stop_grace_s, INTERRUPT_GRACE_S) if report.interrupted else config.stop_grace_s
        report.server["exit_code"] = held.handle.process.stop(grace)
        report.server["stopped"] = True
    if held.lease is not None:
        held.lease.release()


def preflight_checks(config: BenchmarkConfig) -> list[BenchmarkCheck]:
    """The benchmark checks this run asks for, each ready to run; :class:`CheckUnavailable` (naming the
    config key and how to install what is missing) before anything starts otherwise."""
    from magpie_core.plugins import get_plugin_manager

    checks = [c for c in get_plugin_manager().components("benchmark_check").values() if c.wanted(config)]
    for check in checks:
        check.preflight(config)
    return checks


def run_checks(checks: list[BenchmarkCheck], target: CheckTarget, report: BenchmarkReport) -> None:
    """Each check's verdict into ``report.checks``; a failed one is a run error (the measurement is kept)."""
    for check in checks:
        log.info("check %s: running against %s", check.name, target.base_url)
        try:
            verdict = dict(check.run(target))
        except Exception as exc:  # a check that breaks fails the gate; it never costs the measurement
            log.exception("check %s failed to run", check.name)
            verdict = {"passed": False, "summary": f"{type(exc).__name__}: {exc}"}
        report.checks[check.name] = verdict
        if verdict.get("passed") is not True:
            report.errors.append(f"check {check.name} failed: {verdict.get('summary') or 'no verdict'}")


def _external_server(config: BenchmarkConfig, report: BenchmarkReport, diagnose: bool) -> ServerHandle:
    if not config.base_url:
        raise ServerError("run_mode external needs base_url (--base-url)")
    if diagnose:
        report.errors.append("profiling an external server: its traces stay where that server writes them")
    return ServerHandle(config.base_url.rstrip("/"), None, {"external": True})


def _lease_gpus(config: BenchmarkConfig) -> GpuLease:
    """The server's GPUs: pinned ones, or ``TP`` idle ones found by the vendor plugins."""
    gs = config.gpu_selection
    gpus = [] if gs.devices else _detect_gpus()
    return select_gpus(
        gpus,
        gs.count or config.env_int("TP") or 1,
        pinned=gs.devices,
        candidates=gs.candidates,
        min_free_memory_gb=gs.min_free_memory_gb,
    )


def _measure_points(
    config: BenchmarkConfig,
    handle: ServerHandle,
    model: str,
    points: list[Any],
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
    points: list[Any],
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


def _profile_dir(ws: Workspace, diagnose: bool) -> Path | None:
    return ws.path / "torch_trace" if diagnose else None


def _framework_or_none(config: BenchmarkConfig) -> Any | None:
    from magpie_core.plugins import UnknownComponentError

    try:
        return serving_framework(config.framework) if config.framework else None
    except UnknownComponentError:
        return None


def _fingerprint(config: BenchmarkConfig, report: BenchmarkReport, framework: Any | None, tokenizer: Any) -> None:
    """``report.fingerprint``; a failure is noted, never fatal (the measurement is what matters)."""
    try:
        gpus = _detect_gpus() if (report.gpus or {}).get("devices") else []
        report.fingerprint = benchmark_fingerprint(
            config,
            report,
            framework=framework or _framework_or_none(config),
            tokenizer=tokenizer,
            gpus=gpus,
            engine=report.server.get("engine_version"),
        )
    except Exception as exc:  # a probe that breaks must not cost the measurement
        log.warning("workload fingerprint failed: %s: %s", type(exc).__name__, exc)
        report.client_checks.setdefault("notes", []).append(f"no workload fingerprint: {type(exc).__name__}: {exc}")


def _diagnose(
    config: BenchmarkConfig,
    framework: Any,
    handle: ServerHandle,
    model: str,
    point: Any,
    tokenizer: Any,
    ws: Workspace,
    report: BenchmarkReport,
) -> None:
    """The profiled diagnostic captures (``num_profiles``, ``interval_seconds`` apart), then the trace
    analyses of what each recorded; the report's ``gap_analysis`` is the first capture's."""
    tp = config.profiler.torch_profiler
    captures = []
    for i in range(tp.num_profiles):
        if i and tp.interval_seconds:
            time.sleep(tp.interval_seconds)  # starts once the previous capture's traces are written
        diag = run_diagnostic(config, framework, handle, model, point, tokenizer, ws, capture=i)
        if handle.process:
            handle.process.check_alive()
        if diag.get("traces"):
            index = i if tp.num_profiles > 1 else None
            _analyze_capture(config, Path(diag["trace_dir"]), ws, point, report, diag, index)
        report.errors += [f"diagnostic: {e}" for e in diag["errors"]]
        captures.append(diag)
    report.diagnostic = {**captures[0], "captures": captures} if len(captures) > 1 else captures[0]


def _analyze_capture(
    config: BenchmarkConfig,
    trace_dir: Path,
    ws: Workspace,
    point: Any,
    report: BenchmarkReport,
    diag: dict[str, Any],
    index: int | None,
) -> None:
    suffix = "" if index is None else f"/profile_{index + 1:03d}"
    gap = run_gap_analysis(config, trace_dir, Path(f"{ws.path / 'gap_analysis'}{suffix}"))
    diag["gap_analysis"] = gap.get("output_dir") or gap.get("trace_dir")
    report.errors += [f"gap analysis: {e}" for e in gap.get("errors") or []]
    report.gap_analysis = report.gap_analysis or gap
    if getattr(config.profiler.plugin_block("targeted_trace"), "enabled", False):
        targeted = run_targeted_trace(config, trace_dir, Path(f"{ws.path / 'targeted_trace'}{suffix}"), ws.path.name)
        diag["targeted_trace"] = targeted.get("manifest") or targeted.get("trace_dir")
        report.errors += [f"targeted trace: {e}" for e in targeted["errors"]]
        report.targeted_trace = report.targeted_trace or targeted
    if config.profiler.tracelens.enabled:
        lens = run_tracelens_analysis(config, trace_dir, Path(f"{ws.path / 'tracelens'}{suffix}"), point)
        report.errors += [f"trace analysis: {e}" for e in lens.get("errors") or []]
        report.tracelens_analysis = report.tracelens_analysis or lens


def summarize_report(report: BenchmarkReport) -> None:
    """Top-level AMD fields from the last measured point (the heaviest load of a sweep)."""
    wanted_measurement = report.run_kind in ("measurement", "auto")
    if report.offline is not None:  # the command's own result file filled the AMD fields
        report.success = not report.errors and (bool(report.throughput) or not wanted_measurement)
        return
    measured = [i for i, p in enumerate(report.points) if p["metrics"]["completed"] > 0]
    if measured:
        idx = measured[-1]
        m = report.points[idx]["metrics"]
        report.summary_point = idx
        report.throughput = throughput_block(m)
        report.latency = {k: m[k] for k in LATENCY_KEYS}
        report.repeat_stats = report.points[idx].get("repeat_stats")
        report.client_checks.update({"points_ok": all(p["client_checks"]["ok"] for p in report.points)})
        methods: dict[str, int] = {}
        for p in report.points:
            for k, v in p["metrics"]["token_count_methods"].items():
                methods[k] = methods.get(k, 0) + v
        report.client_checks["token_count_methods"] = methods
    report.success = not report.errors and (bool(measured) or not wanted_measurement)


def _benchmark_task(args: tuple[dict[str, Any], str]) -> dict[str, Any]:
    """One benchmark config, run where an execution environment placed it (e.g. a cluster task holding its GPUs)."""
    config_data, output_dir = args
    config = BenchmarkConfig.model_validate(config_data)
    return run_benchmark(config, Path(output_dir)).model_dump(mode="json")


def run_benchmark_on_environment(config: BenchmarkConfig, output_dir: Path, environment: str) -> BenchmarkReport:
    """``run_mode: <environment>`` (an environment plugin's name): the whole benchmark (server and load)
    runs as one item of that execution environment, asking for the server's GPUs (``envs.TP``; the
    environment's own config block may say otherwise); the report comes back into this process.
    Workspaces belong on shared storage."""
    from magpie_core.plugins import get_plugin_manager

    env = get_plugin_manager().get("environment", environment).with_options(config.plugin_blocks())
    gpus = float(config.env_int("TP") or 1)
    inner = config.model_copy(update={"run_mode": "external" if config.base_url else "local"})
    (result,) = env.map(_benchmark_task, [(inner.model_dump(mode="json"), str(output_dir))], gpus_per_item=gpus)
    if isinstance(result, BaseException):
        return BenchmarkReport(
            framework=config.framework,
            model=config.model,
            run_mode=environment,
            success=False,
            errors=[f"{environment} task failed: {type(result).__name__}: {result}"],
        )
    report = BenchmarkReport.model_validate(result)
    report.run_mode = environment
    return report
