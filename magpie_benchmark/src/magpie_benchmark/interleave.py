"""``magpie benchmark --interleave BASE.yaml NEW.yaml --repeats N``: two configs measured in alternating rounds.

Two runs made one after the other cannot tell a change from what moved between them (a server lifetime's own
state, the machine's load, a warming cache): their repeats share one server lifetime each, so the change
between lifetimes is a floor that has to be assumed. Interleaving measures it instead:

* round ``r`` runs both configs back to back, base first in even rounds and new first in odd ones (a slow drift
  then favours neither side);
* every run of every round is a full ``magpie benchmark`` run with its own workspace: where magpie starts the
  server, each run is its own server lifetime, started and stopped like any other;
* each side's runs are merged into one ``benchmark_report.json`` (every repeat tagged with its round, metrics
  pooled over the requests of every round), so ``--compare``, the loop and the advice read it like any report;
* the verdict pairs the rounds (:func:`magpie_benchmark.stats.compare_paired_metric`): the 95% interval comes
  from the spread of the per-round differences, so the noise between lifetimes is in it, measured.

A run that fails (its server does not start, every request fails) keeps its workspace and its error, and its
round is left out of the pairing; the other rounds go on.
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from pathlib import Path
from typing import Any

from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.loadgen.client import RequestResult
from magpie_benchmark.loadgen.metrics import compute_metrics
from magpie_benchmark.stats import E2EComparison, compare_reports, repeat_stats
from magpie_core.runtime.workspace import create_workspace

log = logging.getLogger("magpie.benchmark")

SIDES = ("base", "new")
COMPARISON_NAME = "comparison.json"


def round_order(index: int) -> tuple[str, str]:
    """Which side runs first in round ``index``: base in even rounds, new in odd ones."""
    return SIDES if index % 2 == 0 else (SIDES[1], SIDES[0])


def run_interleaved(
    configs: dict[str, BenchmarkConfig],
    rounds: int,
    output_dir: Path,
    *,
    min_effect: float = 0.02,
    framework_component: Any | None = None,
) -> tuple[Path, E2EComparison]:
    """Measure ``configs["base"]`` and ``configs["new"]`` in ``rounds`` alternating rounds; write each side's
    merged report and the paired comparison under a fresh ``interleave_*`` workspace. Returns its path and the
    comparison. ``KeyboardInterrupt`` stops the rounds; what was measured is merged and kept.
    ``framework_component``: a serving framework object to use instead of the configs' registered one."""
    from magpie_benchmark.pipeline import run_benchmark
    from magpie_core.runtime.interrupts import RunInterrupted

    ws = create_workspace(output_dir, "interleave", configs["base"].framework)
    interleave_id = uuid.uuid4().hex
    reports: dict[str, list[tuple[int, dict[str, Any]]]] = {side: [] for side in SIDES}
    interrupted = False
    for index in range(rounds):
        for side in round_order(index):
            log.info("interleave round %d/%d: %s", index + 1, rounds, side)
            try:
                report = run_benchmark(
                    configs[side], ws.path / side / "rounds", framework_component=framework_component
                )
            except RunInterrupted:
                interrupted = True
                break
            reports[side].append((index, report.model_dump(mode="json")))
        if interrupted:
            break
    meta = {"id": interleave_id, "rounds": rounds, "order": [list(round_order(i)) for i in range(rounds)]}
    merged = {}
    for side in SIDES:
        merged[side] = merge_rounds(reports[side], {**meta, "side": side})
        (ws.path / side).mkdir(parents=True, exist_ok=True)
        (ws.path / side / "benchmark_report.json").write_text(json.dumps(merged[side], indent=2) + "\n")
    result = compare_reports(
        merged["base"],
        merged["new"],
        base_name=str(ws.path / "base" / "benchmark_report.json"),
        new_name=str(ws.path / "new" / "benchmark_report.json"),
        min_effect=min_effect,
    )
    (ws.path / COMPARISON_NAME).write_text(result.model_dump_json(indent=2) + "\n")
    if interrupted:
        raise KeyboardInterrupt
    return ws.path, result


def merge_rounds(runs: list[tuple[int, dict[str, Any]]], meta: dict[str, Any]) -> dict[str, Any]:
    """One side's runs as one report: the first measured run's fields, every run's repeats (tagged with their
    round and workspace) in each load point, metrics pooled over every round's requests, errors named by round."""
    measured = [(i, r) for i, r in runs if r.get("points")]
    template = copy.deepcopy(measured[0][1] if measured else runs[0][1] if runs else {"mode": "benchmark"})
    template["interleave"] = {**meta, "runs": [{"round": i, "workspace": r.get("workspace_dir")} for i, r in runs]}
    template["errors"] = [f"round {i + 1}: {e}" for i, r in runs for e in r.get("errors") or []]
    template["success"] = bool(measured) and all(r.get("success") for _, r in runs)
    for p, row in enumerate(template.get("points") or []):
        entries = [
            {**entry, "round": i, "workspace": r.get("workspace_dir")}
            for i, r in measured
            if p < len(r["points"])
            for entry in r["points"][p].get("repeats") or []
        ]
        for number, entry in enumerate(entries):
            entry["repeat"] = number
        row["repeats"] = entries
        row["metrics"] = pooled_metrics(entries, template.get("config") or {}) or row["metrics"]
        row["repeat_stats"] = repeat_stats([e["metrics"] for e in entries if e["metrics"].get("completed")])
    template["repeats"] = max((len(row["repeats"]) for row in template.get("points") or []), default=0)
    _summary_blocks(template)
    return template


def pooled_metrics(entries: list[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any] | None:
    """The metrics of every repeat's requests together (throughputs over the summed measuring time), read back
    from the repeats' sample files; None when a sample file is missing (the first run's metrics then stay)."""
    results: list[RequestResult] = []
    for entry in entries:
        samples = entry.get("samples")
        path = Path(entry.get("workspace") or "") / samples if samples else None
        if path is None or not path.is_file():
            return None
        with path.open() as fh:
            results += [RequestResult.from_sample(json.loads(line)) for line in fh if line.strip()]
    slo = {k: (config.get("slo") or {}).get(k) for k in ("ttft_ms", "tpot_ms", "e2el_ms")}
    metrics = compute_metrics(results, sum(e["metrics"].get("duration_s") or 0.0 for e in entries), slo_ms=slo)
    methods: dict[str, int] = {}  # as each run first counted them (a sample keeps the count, not the method's input)
    for entry in entries:
        for method, count in (entry["metrics"].get("token_count_methods") or {}).items():
            methods[method] = methods.get(method, 0) + count
    metrics["token_count_methods"] = methods
    return metrics


def _summary_blocks(report: dict[str, Any]) -> None:
    """AMD Magpie's top-level blocks from the merged summary point (as a single run fills them)."""
    from magpie_benchmark.report import BenchmarkReport, summarize_report

    model = BenchmarkReport.model_validate({k: v for k, v in report.items() if k in BenchmarkReport.model_fields})
    errors, success = model.errors, report["success"]
    summarize_report(model)
    model.errors = errors
    report.update(model.model_dump(mode="json", include={"summary_point", "throughput", "latency", "repeat_stats"}))
    report["success"] = success and model.success
