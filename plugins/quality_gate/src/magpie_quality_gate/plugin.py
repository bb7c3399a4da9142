"""Entry point: the ``lm_eval`` benchmark check, its ``quality_gate:`` block and its report section.

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magpie_core import hookimpl


@hookimpl
def magpie_register_benchmark_checks(register: Callable[[Any], None]) -> None:
    from magpie_quality_gate.gate import LmEvalGate

    register(LmEvalGate())


@hookimpl
def magpie_register_config_blocks(register: Callable[[Any], None]) -> None:
    from magpie_core.interfaces import ConfigBlock
    from magpie_quality_gate.config import BLOCK, QualityGateConfig

    register(
        ConfigBlock(
            BLOCK,
            QualityGateConfig,
            scopes=("benchmark",),
            description="lm-eval quality gate after the load: tasks, thresholds (AMD Magpie: envs.RUN_EVAL)",
        )
    )


@hookimpl
def magpie_report_sections(page: Any) -> list[Any] | None:
    """report.html: the gate's verdict, per-task scores and thresholds of a benchmark run."""
    if page.kit is None or page.kind != "benchmark":
        return None
    gate = (page.report.get("checks") or {}).get("lm_eval")
    if not isinstance(gate, dict):
        return None
    from magpie_quality_gate.report_section import section

    return [section(page.kit, gate)]
