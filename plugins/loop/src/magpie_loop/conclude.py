"""The final optimization report of a loop, and its one conclusion.

The conclusion is ``success`` only when every condition holds:

* ``correctness``: every carried-forward candidate passed its correctness check (proved, not merely run),
  and so did its baseline;
* ``kernel_gain``: each such candidate is FASTER than its baseline (interval and effect, magpie compare);
* ``source_mapping``: every selected kernel maps to its source with certainty (the finder's ``exact``);
* ``same_workload``: the final re-benchmark measured the baseline's workload (same fingerprint);
* ``end_to_end_gain``: some end-to-end metric IMPROVED beyond noise and none REGRESSED.

Otherwise the conclusion names each failing condition and why. A missing step fails the conditions
that need it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from magpie_loop.state import CERTAIN_RESOLUTION, LoopState, now
from magpie_loop.steps import E2E_NAME

REPORT_JSON = "loop_report.json"
REPORT_MD = "loop_report.md"
PASSED = "passed"


class Condition(BaseModel):
    name: str
    ok: bool
    detail: str


class LoopReport(BaseModel):
    mode: str = "loop_report"
    loop: str
    written: str
    conclusion: str  # "success", or "not a success: ..." naming the failing conditions
    success: bool
    conditions: list[Condition]
    failing: list[str]
    kernels: list[dict[str, Any]] = Field(default_factory=list)
    compares: list[dict[str, Any]] = Field(default_factory=list)
    end_to_end: dict[str, Any] | None = None
    files: dict[str, Any] = Field(default_factory=dict)


def _correctness(state: LoopState) -> Condition:
    if not state.compares:
        return Condition(name="correctness", ok=False, detail="no kernel compare recorded")
    bad = []
    for c in state.compares:
        for kid in (c.baseline_id, c.candidate_id):
            status = c.correctness.get(str(kid)) if kid else None
            if status != PASSED:
                bad.append(f"{kid or 'no candidate'} in {Path(c.path).name}: correctness {status or 'not recorded'}")
    ok = not bad
    detail = "every candidate and its baseline passed correctness" if ok else "; ".join(bad)
    return Condition(name="correctness", ok=ok, detail=detail)


def _kernel_gain(state: LoopState) -> Condition:
    if not state.compares:
        return Condition(name="kernel_gain", ok=False, detail="no kernel compare recorded")
    bad = [
        f"{c.candidate_id or 'no candidate'}: {c.verdict or 'not ranked'}"
        + (f" ({c.verdict_reason})" if c.verdict_reason else "")
        for c in state.compares
        if c.verdict != "FASTER"
    ]
    detail = "every candidate is FASTER than its baseline" if not bad else "; ".join(bad)
    return Condition(name="kernel_gain", ok=not bad, detail=detail)


def _source_mapping(state: LoopState) -> Condition:
    if not state.kernels:
        return Condition(name="source_mapping", ok=False, detail="no kernel selected from the analyses")
    bad = [f"{k.name}: {k.source_resolution}" + (f" ({k.note})" if k.note else "") for k in state.kernels
           if k.source_resolution != CERTAIN_RESOLUTION]  # fmt: skip
    detail = "every selected kernel maps to one source (exact)" if not bad else "; ".join(bad)
    return Condition(name="source_mapping", ok=not bad, detail=detail)


def _e2e(state: LoopState) -> dict[str, Any] | None:
    if state.final is None or not state.final.summary.get("e2e_compare"):
        return None
    try:
        return dict(json.loads(Path(state.final.summary["e2e_compare"]).read_text()))
    except (OSError, ValueError):
        return None


def _same_workload(state: LoopState, e2e: dict[str, Any] | None) -> Condition:
    if state.baseline is None or state.final is None or e2e is None:
        missing = "baseline" if state.baseline is None else "final re-benchmark"
        return Condition(name="same_workload", ok=False, detail=f"no {missing} recorded")
    diffs = [d["field"] for d in e2e.get("workload_differences") or []]
    reasons = [r for r in e2e.get("reasons") or [] if "fingerprint" in r or "measurement" in r]
    if diffs or reasons:
        return Condition(name="same_workload", ok=False, detail="; ".join(reasons or ["differs: " + ", ".join(diffs)]))
    return Condition(name="same_workload", ok=True, detail="baseline and final share the workload fingerprint")


def _end_to_end_gain(e2e: dict[str, Any] | None) -> Condition:
    if e2e is None:
        return Condition(name="end_to_end_gain", ok=False, detail="no final re-benchmark recorded")
    metrics = e2e.get("metrics") or []
    improved = [m["metric"] for m in metrics if m["verdict"] == "IMPROVED"]
    regressed = [m["metric"] for m in metrics if m["verdict"] == "REGRESSED"]
    if not e2e.get("comparable"):
        return Condition(
            name="end_to_end_gain", ok=False, detail="NOT COMPARABLE: " + "; ".join(e2e.get("reasons") or [])
        )
    if regressed:
        return Condition(name="end_to_end_gain", ok=False, detail="REGRESSED: " + ", ".join(regressed))
    if not improved:
        noisy = [f"{m['metric']} {m['change_pct']:+.1f}%" for m in metrics if m.get("change_pct") is not None][:4]
        return Condition(
            name="end_to_end_gain", ok=False, detail="within noise on every metric (" + ", ".join(noisy) + ")"
        )
    return Condition(name="end_to_end_gain", ok=True, detail="IMPROVED: " + ", ".join(improved))


def build_report(state: LoopState, loop_dir: Path) -> LoopReport:
    e2e = _e2e(state)
    conditions = [
        _correctness(state),
        _kernel_gain(state),
        _source_mapping(state),
        _same_workload(state, e2e),
        _end_to_end_gain(e2e),
    ]
    failing = [c.name for c in conditions if not c.ok]
    conclusion = (
        "success"
        if not failing
        else "not a success: " + "; ".join(f"{c.name} ({c.detail})" for c in conditions if not c.ok)
    )
    return LoopReport(
        loop=state.name,
        written=now(),
        conclusion=conclusion,
        success=not failing,
        conditions=conditions,
        failing=failing,
        kernels=[k.model_dump() for k in state.kernels],
        compares=[c.model_dump() for c in state.compares],
        end_to_end=_e2e_summary(e2e),
        files={
            "loop": str((loop_dir / "loop.json").resolve()),
            "baseline": state.baseline.path if state.baseline else None,
            "profile": state.profile.path if state.profile else None,
            "analyses": [a.path for a in state.analyses],
            "final": state.final.path if state.final else None,
            "e2e_compare": str((loop_dir / E2E_NAME).resolve()) if e2e else None,
        },
    )


def _e2e_summary(e2e: dict[str, Any] | None) -> dict[str, Any] | None:
    if e2e is None:
        return None
    keys = ("metric", "label", "change_pct", "ci95_pct", "verdict", "reason")
    return {
        "verdict": e2e.get("verdict"),
        "repeats": e2e.get("repeats"),
        "reasons": e2e.get("reasons"),
        "system_differences": e2e.get("system_differences"),
        "metrics": [{k: m.get(k) for k in keys} for m in e2e.get("metrics") or []],
    }


def write_report(report: LoopReport, loop_dir: Path) -> tuple[Path, Path]:
    json_path, md_path = loop_dir / REPORT_JSON, loop_dir / REPORT_MD
    json_path.write_text(report.model_dump_json(indent=2) + "\n")
    md_path.write_text(markdown(report))
    return json_path, md_path


def markdown(report: LoopReport) -> str:
    """The report as one page of Markdown."""
    lines = [f"# Optimization loop: {report.loop}", "", f"**Conclusion: {report.conclusion}**", "", "## Conditions", ""]
    lines += [f"- [{'x' if c.ok else ' '}] **{c.name}**: {c.detail}" for c in report.conditions]
    lines += ["", "## Kernels", "", "| kernel | source mapping | source file |", "|---|---|---|"]
    lines += [f"| `{k['name']}` | {k['source_resolution']} | {k.get('source_file') or '-'} |" for k in report.kernels]
    lines += ["", "## Kernel compares", "", "| kernel | candidate | speedup | 95% CI | verdict | correctness |"]
    lines.append("|---|---|---|---|---|---|")
    for c in report.compares:
        ci = c.get("speedup_ci95") or [None, None]
        ci_text = f"{ci[0]:.3f}-{ci[1]:.3f}" if None not in ci else "-"
        speed = f"{c['speedup']:.3f}x" if c.get("speedup") is not None else "-"
        correct = ", ".join(f"{k}: {v}" for k, v in (c.get("correctness") or {}).items())
        row = [c.get("kernel") or "-", c.get("candidate_id"), speed, ci_text, c.get("verdict"), correct]
        lines.append("| " + " | ".join(str(x) for x in row) + " |")
    lines += ["", "## End to end (final re-benchmark vs baseline)", ""]
    e2e = report.end_to_end
    if e2e is None:
        lines.append("no final re-benchmark recorded")
    else:
        lines += [f"Verdict: {e2e['verdict']} (repeats {e2e['repeats']})", "", "| metric | change | 95% CI | verdict |"]
        lines.append("|---|---|---|---|")
        for m in e2e["metrics"]:
            ci = m.get("ci95_pct")
            ci_text = f"{ci[0]:+.1f}% to {ci[1]:+.1f}%" if ci else "-"
            change = f"{m['change_pct']:+.1f}%" if m.get("change_pct") is not None else "-"
            lines.append(f"| {m['label']} | {change} | {ci_text} | {m['verdict']} |")
    return "\n".join(lines) + "\n"
