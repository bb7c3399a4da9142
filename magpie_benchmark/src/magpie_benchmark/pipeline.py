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

This module runs the steps in that order (:func:`run_benchmark`), or hands the whole run to an execution
environment (:func:`run_benchmark_on_environment`). Each step is its own module's: 1, 2 and 7
:mod:`~magpie_benchmark.benchmark_server`; 3 :mod:`~magpie_benchmark.workload` (the points, their requests and
traces) and :mod:`~magpie_benchmark.measure` (the load and its rows); 4 :mod:`~magpie_benchmark.diagnostic`;
5 :mod:`~magpie_benchmark.checks`; 6 :mod:`~magpie_benchmark.report`. The config a run starts from (a YAML and the
command line's overrides) is :mod:`~magpie_benchmark.run_config`'s.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from magpie_benchmark import repeats as rp
from magpie_benchmark.amd_magpie import redacted
from magpie_benchmark.benchmark_server import (
    Held,
    detect_gpus,
    framework_or_none,
    give_back,
    lease_gpus,
    probe,
    profiler_dir,
    server_for_run,
    serving_framework,
    start_server,
)
from magpie_benchmark.checks import preflight_checks, run_checks
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.diagnostic import analyze_capture, run_diagnostic_captures
from magpie_benchmark.fingerprint import benchmark_fingerprint, engine_version
from magpie_benchmark.interfaces import CheckTarget, CheckUnavailable, OfflineFramework
from magpie_benchmark.loadgen.datasets import DatasetError
from magpie_benchmark.loadgen.probe import ProbeFailed
from magpie_benchmark.measure import measure_points
from magpie_benchmark.offline import redact_command, run_offline_benchmark
from magpie_benchmark.report import BenchmarkReport, summarize_report
from magpie_benchmark.serving.gpu_leases import GpuSelectionError
from magpie_benchmark.serving.persistent import LifecycleError
from magpie_benchmark.serving.server import ServerError
from magpie_benchmark.workload import plan_points, tokenizer_for
from magpie_core.config.common import dump
from magpie_core.machine.hardware import write_report
from magpie_core.runtime.interrupts import RunInterrupted
from magpie_core.runtime.workspace import Workspace, create_workspace

log = logging.getLogger("magpie.benchmark")

#: what ends a run with an error in its report and nothing else to say (no traceback in the log)
RUN_ERRORS = (
    ServerError,
    GpuSelectionError,
    DatasetError,
    NotImplementedError,
    LifecycleError,
    CheckUnavailable,
    ProbeFailed,
)


def run_benchmark(
    config: BenchmarkConfig, output_dir: Path, *, framework_component: Any | None = None
) -> BenchmarkReport:
    """Run the benchmark ``config`` describes; write and return its report."""
    t0 = time.monotonic()
    ws = create_workspace(output_dir, "benchmark", config.framework)
    hidden = _hidden_values(config)
    ws.snapshot_config({"benchmark": {**dump(config), **hidden}})
    handler = ws.attach_log()
    measure = config.run_kind in ("measurement", "auto")
    diagnose = config.run_kind == "diagnostic" or (
        config.run_kind == "auto" and config.profiler.torch_profiler.enabled is True
    )
    report = _new_report(config, ws, hidden, diagnose)
    held = Held()
    try:
        _run(config, framework_component, ws, report, held, measure=measure, diagnose=diagnose)
    except RUN_ERRORS as exc:
        report.errors.append(str(exc))
    except KeyboardInterrupt:
        report.interrupted = True
        report.errors.append("interrupted (Ctrl-C): the report holds the requests that finished before it")
    except Exception as exc:
        log.exception("benchmark failed")
        report.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        give_back(config, report, held)
        summarize_report(report)
        report.execution_time = time.monotonic() - t0
        write_report(report, ws.report_path)
        logging.getLogger("magpie").removeHandler(handler)
        handler.close()
    if report.interrupted:
        raise _interrupted(report, ws)
    return report


def _hidden_values(config: BenchmarkConfig) -> dict[str, Any]:
    """The settings that may hold secrets, as reports and the config snapshot show them (values hidden)."""
    hidden = {"envs": redacted(config.envs), "server_env": redacted(config.server_env)}
    if config.run_cmd:
        hidden["run_cmd"] = redact_command(config.run_cmd)
    return hidden


def _new_report(config: BenchmarkConfig, ws: Workspace, hidden: dict[str, Any], diagnose: bool) -> BenchmarkReport:
    """The run's report before anything has run: what was asked for, where it is written."""
    return BenchmarkReport(
        framework=config.framework or "",
        model=config.model,
        config={**config.model_dump(mode="json"), **hidden},
        workspace_dir=str(ws.path),
        workspace=str(ws.path),
        run_kind=config.run_kind,
        profiling_enabled=diagnose,
        run_mode=config.run_mode,
    )


def _run(
    config: BenchmarkConfig,
    framework: Any | None,
    ws: Workspace,
    report: BenchmarkReport,
    held: Held,
    *,
    measure: bool,
    diagnose: bool,
) -> None:
    """The run itself: an offline framework's command, or a served model measured; ``held`` takes what must be
    given back."""
    if framework is None and (config.run_mode != "external" or diagnose or config.run_cmd):
        framework = serving_framework(config.framework)
    if isinstance(framework, OfflineFramework):
        held.lease = lease_gpus(config)
        report.gpus = held.lease.as_dict()
        run_offline_benchmark(
            config,
            framework,
            ws,
            report,
            held.lease.env(),
            measure=measure,
            diagnose=diagnose,
            analyze=lambda trace_dir, diag: analyze_capture(config, trace_dir, ws, None, report, diag, None),
        )
    else:
        _serve_and_measure(config, framework, ws, report, held, measure=measure, diagnose=diagnose)


def _interrupted(report: BenchmarkReport, ws: Workspace) -> RunInterrupted:
    """What an interrupted run raises once its report is written: what it got done before it stopped."""
    if report.offline is not None:
        return RunInterrupted("benchmark interrupted: the offline command was stopped", ws.report_path)
    done = sum(p["metrics"]["completed"] for p in report.points)
    return RunInterrupted(f"benchmark interrupted: {done} request(s) completed", ws.report_path)


def _serve_and_measure(
    config: BenchmarkConfig,
    framework: Any,
    ws: Workspace,
    report: BenchmarkReport,
    held: Held,
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
    handle = held.handle = server_for_run(config, framework, ws, report, held, diagnose)
    report.server = handle.info
    report.base_url = handle.base_url
    engine = engine_version(framework or framework_or_none(config), handle.base_url)
    if engine:
        report.server["engine_version"] = engine
    model = probe(config, handle.base_url, report)
    tokenizer = tokenizer_for(config, report)
    if measure:
        restart = None
        if config.restart_between_repeats and handle.process is not None:
            lease = held.lease
            restart = rp.restarter(lambda: start_server(config, framework, ws, lease, profiler_dir(ws, diagnose)))
        handle = held.handle = measure_points(
            config, handle, model, points, tokenizer, report, restart, ws.path, framework
        )
        _fingerprint(config, report, framework, tokenizer)
    if checks:
        run_checks(checks, CheckTarget(handle.base_url, model, config, ws.path), report)
    if diagnose and handle.process is not None:
        run_diagnostic_captures(config, framework, handle, model, points[0], tokenizer, ws, report)
    elif diagnose and held.kept is not None:
        report.errors.append("profiling needs a server this run starts; a reused server runs without the profiler")


def _fingerprint(config: BenchmarkConfig, report: BenchmarkReport, framework: Any | None, tokenizer: Any) -> None:
    """``report.fingerprint``; a failure is noted, never fatal (the measurement is what matters)."""
    try:
        gpus = detect_gpus() if (report.gpus or {}).get("devices") else []
        report.fingerprint = benchmark_fingerprint(
            config,
            report,
            framework=framework or framework_or_none(config),
            tokenizer=tokenizer,
            gpus=gpus,
            engine=report.server.get("engine_version"),
        )
    except Exception as exc:  # a probe that breaks must not cost the measurement
        log.warning("workload fingerprint failed: %s: %s", type(exc).__name__, exc)
        report.client_checks.setdefault("notes", []).append(f"no workload fingerprint: {type(exc).__name__}: {exc}")


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
