"""Hooks: the ``targeted-trace`` command group, the ``targeted-trace`` trace analyzer that
``magpie benchmark`` runs on a diagnostic capture's traces when ``profiler.targeted_trace.enabled``, and
that block itself (config block ``targeted_trace`` of the benchmark file's ``profiler:``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from magpie_core import hookimpl
from magpie_core.interfaces import TraceAnalyzer

#: the summary keys a benchmark report keeps (the summary is bounded; the shards stay on disk)
REPORT_KEYS = ("valid", "run_id", "coverage", "evidence_quality", "events", "runtime_by_target", "issues")


class TargetedTrace(TraceAnalyzer):
    name = "targeted-trace"
    description = "AMD Magpie's TargetedKernelTrace: kernels matching targets, as checksummed shards, validated"

    def analyze(self, traces: Path, options: dict[str, Any], out_dir: Path | None) -> dict[str, Any]:
        """``options``: the ``profiler.targeted_trace`` block, plus ``run_id`` and ``framework``.
        Adapts every trace under ``traces`` into ``out_dir`` (new), then postprocesses it."""
        from magpie_trace import find_trace_files

        from magpie_targeted_trace.adapt import adapt_torch
        from magpie_targeted_trace.config import TargetedTraceConfig
        from magpie_targeted_trace.postprocess import postprocess

        out = out_dir or Path("targeted_trace")
        config = TargetedTraceConfig.model_validate(
            {k: v for k, v in options.items() if k not in ("run_id", "framework")}
        )
        files = find_trace_files(traces) if traces.is_dir() else [traces]
        if not files:
            raise ValueError(f"{traces}: no trace files to adapt")
        run_id, framework = str(options.get("run_id") or out.parent.name), str(options.get("framework") or "unknown")
        adapt_torch(files, out, config, run_id=run_id, framework=framework)
        summary = postprocess(out, out / "summary.json")
        return {
            **{k: summary[k] for k in REPORT_KEYS},
            "manifest": str(out / "manifest.json"),
            "summary": str(out / "summary.json"),
        }


@hookimpl
def magpie_register_trace_analyzers(register: Any) -> None:
    register(TargetedTrace())


@hookimpl
def magpie_register_config_blocks(register: Any) -> None:
    from magpie_core.interfaces import ConfigBlock
    from magpie_targeted_trace.config import TargetedTraceConfig

    register(
        ConfigBlock(
            name="targeted_trace",
            model=TargetedTraceConfig,
            scopes=("benchmark.profiler",),
            description="AMD Magpie's TargetedKernelTrace: the diagnostic run's matching kernels as evidence shards",
        )
    )


@hookimpl
def magpie_register_commands(cli: typer.Typer) -> None:
    from magpie_targeted_trace.cli import app

    cli.add_typer(app, name="targeted-trace")
