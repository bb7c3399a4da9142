"""``magpie benchmark`` for an offline framework: no server, one command is the benchmark.

AMD Magpie's command-launched frameworks (``benchmark.run_cmd``) run a verbatim command that writes
its own result file. The framework plugin (:class:`magpie_benchmark.interfaces.OfflineFramework`) runs the
command and reads that file; this module gives it the run folder, the GPUs' environment, and puts what
came back into the report:

1. Measurement (``run_kind`` measurement or auto): the command once, results in the run folder,
   its output in ``run_cmd.log``; the report's ``throughput``, ``latency`` and ``raw_result``.
2. Diagnostic (``run_kind`` diagnostic, or auto with the torch profiler on): the command again,
   profiled, in ``diagnostic/``, output in ``run_cmd_profile.log``; its traces move to
   ``torch_trace/`` and get the same trace analyses as a server's. Its numbers never replace the
   measurement (AMD Magpie's profiled pass writes no timings at all).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magpie_benchmark.amd_magpie import is_secret, server_envs
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.interfaces import OfflineFramework, OfflineRun
from magpie_core.runtime.workspace import Workspace

log = logging.getLogger("magpie.benchmark")

#: (trace folder, diagnostic record) -> analyses of the traces, recorded in the report
Analyze = Callable[[Path, dict[str, Any]], None]

MEASUREMENT_LOG = "run_cmd.log"
PROFILE_LOG = "run_cmd_profile.log"


def redact_argv(argv: list[str]) -> list[str]:
    """``argv`` for reports and logs: the value of a secret-looking flag (``--hf-token X``,
    ``--api_key=X``) shown as ``***``. Secrets belong in ``envs``, never on a command line (where
    ``ps`` shows them to every user); this keeps one that slipped in out of magpie's own files."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if flag.startswith("-") and is_secret(flag.lstrip("-").replace("-", "_")):
            if eq:
                out.append(f"{flag}=***")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out


def redact_command(text: str | None) -> str | None:
    """``run_cmd`` as reports and the config snapshot show it (see :func:`redact_argv`)."""
    if not text:
        return text
    try:
        return shlex.join(redact_argv(shlex.split(text)))
    except ValueError:  # unsplittable: the config check refuses it; never echo it
        return "***"


def describe(run: OfflineRun) -> dict[str, Any]:
    """One command's record in the report (no metrics: those have their own blocks)."""
    return {
        "command": redact_argv(run.argv),
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "duration_s": round(run.duration_s, 3),
        "log": str(run.log),
        "result_file": str(run.result_file) if run.result_file else None,
        "errors": list(run.errors),
    }


def run_offline_benchmark(
    config: BenchmarkConfig,
    framework: OfflineFramework,
    ws: Workspace,
    report: Any,
    gpu_env: dict[str, str],
    *,
    measure: bool,
    diagnose: bool,
    analyze: Analyze,
) -> None:
    """The measurement and/or diagnostic runs of ``framework``'s command, recorded in ``report``."""
    notes: list[str] = []
    report.offline = {"framework": framework.name, "notes": notes}
    if config.run_mode == "external":
        report.errors.append(
            f"{framework.name} is an offline framework: there is no server to reach (run_mode external)"
        )
        return
    if config.run_mode == "docker":
        notes.append(
            "run_mode docker: the command runs on this machine, as AMD Magpie runs command-launched frameworks"
        )
    env = {**server_envs(config.envs), **config.server_env, **gpu_env}
    if measure:
        run = framework.run_offline(config, ws.path, profile=False, env=env, log_path=ws.path / MEASUREMENT_LOG)
        report.offline["measurement"] = describe(run)
        report.raw_result = run.metrics or None
        report.throughput = dict(run.throughput)
        report.latency = dict(run.latency)
        report.errors += run.errors
    if diagnose:
        report.diagnostic = _diagnostic(config, framework, ws, env, analyze)
        report.errors += [f"diagnostic: {e}" for e in report.diagnostic["errors"]]


def _diagnostic(
    config: BenchmarkConfig, framework: OfflineFramework, ws: Workspace, env: dict[str, str], analyze: Analyze
) -> dict[str, Any]:
    out_dir = ws.sub("diagnostic")
    run = framework.run_offline(config, out_dir, profile=True, env=env, log_path=ws.path / PROFILE_LOG)
    trace_dir = ws.path / "torch_trace"
    trace_dir.mkdir(parents=True, exist_ok=True)
    traces = [t.rename(trace_dir / t.name) for t in run.traces]
    diag: dict[str, Any] = {
        **describe(run),
        "trace_dir": str(trace_dir),
        "traces": [str(t) for t in traces],
        "errors": list(run.errors),
    }
    if not traces and not run.errors:
        diag["errors"].append(f"the profiled run wrote no trace file (see {PROFILE_LOG})")
    if traces:
        analyze(trace_dir, diag)
    return diag
