"""A benchmark run's checks (``magpie_register_benchmark_checks``, e.g. the lm-eval quality gate): the ones its config
asks for, made ready before anything starts, then run against the served model after the load; a failed check fails
the run, the load metrics stay."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.interfaces import BenchmarkCheck, CheckTarget

if TYPE_CHECKING:
    from magpie_benchmark.report import BenchmarkReport

log = logging.getLogger("magpie.benchmark")


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
