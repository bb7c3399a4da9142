"""Repeated measurement of a benchmark's load points (``benchmark.repeats``).

Each load point row of ``benchmark_report.json`` gets:

* ``repeats``: one entry per repeat — its metrics, client checks, prompt digest and the file of its
  per-request samples (``samples/point<i>_repeat<r>.jsonl`` in the workspace, one JSON line per request);
* ``metrics``: the pooled metrics of every repeat's requests (throughputs over the summed measuring
  time), so AMD Magpie's top-level blocks stay one set of numbers;
* ``repeat_stats``: each end-to-end metric's mean and between-repeat spread
  (:func:`magpie_benchmark.stats.repeat_stats`), what ``magpie benchmark --compare`` judges changes by.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from magpie_benchmark.loadgen.metrics import compute_metrics
from magpie_benchmark.loadgen.runner import LoadResult
from magpie_benchmark.stats import repeat_stats

log = logging.getLogger("magpie.benchmark")


class Restart(Protocol):
    def __call__(self, handle: Any, report: Any, grace_s: float) -> Any: ...


def restarter(start: Callable[[], Any]) -> Restart:
    """A restart between repeats: stop the handle's server, start a fresh one (recorded in ``server.restarts``)."""

    def restart(handle: Any, report: Any, grace_s: float) -> Any:
        if handle.process is not None:
            handle.process.stop(grace_s)
        new = start()
        report.server.setdefault("restarts", []).append({k: new.info.get(k) for k in ("pid", "port", "ready_s")})
        report.base_url = new.base_url
        log.info("server restarted for the next repeat (ready in %.1f s)", new.info.get("ready_s") or 0.0)
        return new

    return restart


def host_state(duration_s: float) -> dict[str, Any]:
    """When the repeat ran (wall clock) and how busy this machine was: ``--compare`` refuses a verdict between
    runs measured at different times on an overloaded host."""
    end = time.time()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"start": end - duration_s, "end": end, "load_avg_1m": load, "cpus": os.cpu_count()}


def write_samples(path: Path, load: LoadResult) -> None:
    """One JSON line per request of one repeat (the loadgen's per-request record)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in load.results:
            fh.write(json.dumps(r.as_dict()) + "\n")


def record_repeat(
    rows: list[dict[str, Any]], index: int, row: dict[str, Any], rep: int, load: LoadResult, ws_path: Path | None
) -> None:
    """Add repeat ``rep`` of load point ``index``: the first repeat makes the row, later ones join it."""
    entry: dict[str, Any] = {
        "repeat": rep,
        "metrics": row["metrics"],
        "client_checks": row["client_checks"],
        "prompts": row["prompts"],
        "host": host_state(load.duration_s),
    }
    if "prefix_cache" in row:  # the server's counters over this repeat (a trace replay's cache hits)
        entry["prefix_cache"] = row["prefix_cache"]
    if ws_path is not None:
        samples = ws_path / "samples" / f"point{index}_repeat{rep}.jsonl"
        write_samples(samples, load)
        entry["samples"] = str(samples.relative_to(ws_path))
    if rep == 0:
        row["repeats"] = [entry]
        rows.append(row)
        return
    rows[index]["repeats"].append(entry)
    if "requests" in row and "requests" in rows[index]:
        rows[index]["requests"] += [{**r, "repeat": rep} for r in row["requests"]]


def pool_repeats(row: dict[str, Any], loads: list[LoadResult], tokenizer: Any, slo: dict[str, Any]) -> None:
    """The row's pooled metrics, merged client checks and between-repeat spread."""
    entries = row.get("repeats") or []
    if len(loads) > 1:
        results = [r for load in loads for r in load.results]
        row["metrics"] = compute_metrics(
            results, sum(load.duration_s for load in loads), tokenizer=tokenizer, slo_ms=slo
        )
        checks = dict(row["client_checks"])
        checks["warnings"] = [
            f"repeat {e['repeat'] + 1}: {w}" for e in entries for w in e["client_checks"].get("warnings") or []
        ]
        checks["ok"] = all(e["client_checks"].get("ok") for e in entries)
        row["client_checks"] = checks
    measured = [e["metrics"] for e in entries if e["metrics"].get("completed")]
    row["repeat_stats"] = repeat_stats(measured)
