"""End-to-end benchmark statistics: between-repeat spread and the verdict of two benchmark runs.

A serving benchmark's numbers move from run to run far more than its per-request samples suggest
(scheduling, caches, a restarted server, a busy host), so a change between two runs is judged on
**repeat means**, not on pooled requests:

* each metric of each repeat is one value; a run with ``n`` repeats has ``n`` values;
* the change is the ratio of the two runs' geometric means, with Welch's t interval on the log
  values (unequal spreads and repeat counts allowed);
* IMPROVED / REGRESSED only when the 95% interval excludes "no change" *and* the change is at least
  ``min_effect``; WITHIN NOISE otherwise. The metrics' intervals hold jointly at 95% (a run is REGRESSED
  when any metric is). A run with a single repeat has no spread of its own: the change is called only when
  it dwarfs the metric's default noise floor (:data:`NOISE_FLOOR`), and the reason says how many repeats
  would settle it.
* the two sides of one interleaved run (``--interleave``, :mod:`magpie_benchmark.interleave`) are judged on
  their paired rounds instead (:func:`compare_paired_metric`): the noise between server lifetimes is measured
  by the rounds' spread, no floor is assumed, and the metrics' intervals hold jointly at 95%;
* NOT COMPARABLE when the two runs measured different workloads (:func:`fingerprint_differences`).
* no IMPROVED / REGRESSED (WITHIN NOISE, with the reason) when the measurement itself is confounded:
  both runs loaded one server at the same time (:func:`shared_server_reason`), or they ran at
  different times on an overloaded host (:func:`busy_host_reason`).

Engine-neutral: the inputs are magpie's own metric dicts (``magpie_benchmark.loadgen.metrics``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from magpie_core.measurement.stats import Z95, student_t
from magpie_core.reports import Model


class E2EVerdict(str, Enum):
    IMPROVED = "IMPROVED"
    REGRESSED = "REGRESSED"
    WITHIN_NOISE = "WITHIN NOISE"
    NOT_COMPARABLE = "NOT COMPARABLE"


@dataclass(frozen=True)
class E2EMetric:
    """One compared metric: where it is in a load point's metrics, and which way is better."""

    name: str
    keys: tuple[str, ...]
    higher_is_better: bool
    label: str


#: the metrics of an end-to-end verdict (keys into ``compute_metrics`` output)
E2E_METRICS: tuple[E2EMetric, ...] = (
    E2EMetric("request_throughput", ("request_throughput",), True, "throughput (req/s)"),
    E2EMetric("output_throughput", ("output_throughput",), True, "throughput (output tok/s)"),
    E2EMetric("request_goodput", ("request_goodput",), True, "goodput (req/s within SLO)"),
    E2EMetric("mean_ttft_ms", ("ttft", "mean_ms"), False, "TTFT mean (ms)"),
    E2EMetric("p99_ttft_ms", ("ttft", "p99_ms"), False, "TTFT p99 (ms)"),
    E2EMetric("mean_tpot_ms", ("tpot", "mean_ms"), False, "TPOT mean (ms)"),
    E2EMetric("mean_itl_ms", ("itl", "mean_ms"), False, "ITL mean (ms)"),
    E2EMetric("mean_e2el_ms", ("e2el", "mean_ms"), False, "E2E latency mean (ms)"),
    E2EMetric("p99_e2el_ms", ("e2el", "p99_ms"), False, "E2E latency p99 (ms)"),
)

#: Default run-to-run noise floor per metric: the change between two runs of identical work that the
#: repeats inside one run cannot see (a restarted server, the machine's load moving between runs, where the
#: scheduler put the client process next to the server's). Source: a CPU server with a tiny Llama here
#: (concurrency 8, 16-32 requests, 2 cores shared by client and server), 2026-11-30. First, while the machine
#: was otherwise quiet, identical runs differed by up to 10 % in throughput, 15 % in mean TTFT, 7 % in TPOT and
#: 3 % in E2E latency. Later an A/A pair run one after the other on a quiet machine (fresh clone, CI-like)
#: differed by 30.5 % in throughput, 34 % / 43.5 % in mean / p99 TTFT, 15 % in TPOT and 23.5 % / 27.5 % in
#: mean / p99 E2E latency, each run's three repeats tight (CV 1-6 %): a per-run state the repeats cannot see.
#: Each floor is about twice the largest quiet difference seen. Under load from other processes identical runs
#: differed by up to 3.2x: no floor covers that, the between-repeat spread and the busy-host rule do. Numbers
#: and commands: docs/optimization-loop.md ("The default noise floor"). On a dedicated GPU host these floors
#: are conservative: measure your own A/A pair and pass ``--noise-floor``, or ``--restart-between-repeats``.
#: A single-repeat comparison is called only beyond ``SINGLE_RUN_FACTOR`` times this floor (in log).
NOISE_FLOOR: dict[str, float] = {
    "request_throughput": 0.60,
    "output_throughput": 0.60,
    "request_goodput": 0.60,
    "mean_ttft_ms": 0.70,
    "p99_ttft_ms": 0.90,
    "mean_tpot_ms": 0.30,
    "mean_itl_ms": 0.30,
    "mean_e2el_ms": 0.50,
    "p99_e2el_ms": 0.60,
}
#: the floor used for a metric not in :data:`NOISE_FLOOR`
DEFAULT_NOISE_FLOOR = 0.60
#: "dwarfs the noise floor": a single-run change counts only beyond this multiple of the floor
SINGLE_RUN_FACTOR = 2.0
#: most repeats ever suggested; beyond it the change is too small to resolve at that noise
MAX_SUGGESTED_REPEATS = 50
#: a host whose 1-minute load average exceeds this per CPU is overloaded: runs measured on it at different
#: times get no IMPROVED/REGRESSED (identical vLLM CPU runs here differed by up to 3.2x under such load)
BUSY_LOAD_PER_CPU = 1.0


def metric_value(metrics: dict[str, Any], keys: Sequence[str]) -> float | None:
    """The number at ``metrics[k1][k2]...``; None when absent, not a number, or not finite."""
    current: Any = metrics
    for key in keys:
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    try:
        value = float(current)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Mean and between-repeat spread of one metric's repeat values."""
    arr = np.asarray(values, dtype=float)
    n = len(arr)
    mean = float(arr.mean()) if n else math.nan
    std = float(arr.std(ddof=1)) if n > 1 else None
    out: dict[str, Any] = {"n": n, "mean": mean, "std": std, "values": [float(v) for v in arr]}
    out["cv"] = std / abs(mean) if std is not None and mean else None
    if std is not None:
        half = _t(n - 1) * std / math.sqrt(n)
        out["ci95"] = [mean - half, mean + half]
    out["min"] = float(arr.min()) if n else None
    out["max"] = float(arr.max()) if n else None
    return out


def repeat_stats(repeat_metrics: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each end-to-end metric's spread over the repeats of one load point (metrics present in every repeat)."""
    out = {}
    for metric in E2E_METRICS:
        values = [metric_value(m, metric.keys) for m in repeat_metrics]
        if values and all(v is not None for v in values):
            out[metric.name] = spread([v for v in values if v is not None])
    return out


def _t(dof: float, family: int = 1) -> float:
    """Two-sided Student t quantile for ``family`` intervals at 95% together; dof rounded down (a wider, safer
    interval)."""
    if dof >= 200 and family == 1:
        return Z95
    return _t_family(max(math.floor(min(dof, 1000)), 1), family)


@functools.lru_cache(maxsize=256)
def _t_family(dof: int, family: int) -> float:
    """Two-sided t quantile for ``family`` intervals at 95% together (Bonferroni: each at 1 - 0.05/family)."""
    return student_t(1 - 0.025 / max(family, 1), dof)


class MetricVerdict(Model):
    """The verdict on one metric: each run's mean and spread, the change and its 95% interval."""

    metric: str
    label: str
    higher_is_better: bool
    base: dict[str, Any]
    new: dict[str, Any]
    change_pct: float | None
    ci95_pct: list[float] | None
    verdict: E2EVerdict
    reason: str
    repeats_needed: int | None = None


def welch_log_interval(base: Sequence[float], new: Sequence[float], family: int = 1) -> tuple[float, float, float]:
    """Log of new/base (geometric means) with Welch's 95% t interval: (estimate, low, high). ``family``: the
    interval is one of that many judged together, at 95% for all of them (Bonferroni)."""
    x, y = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    n, m = len(x), len(y)
    vx, vy = float(x.var(ddof=1)) / n, float(y.var(ddof=1)) / m
    est = float(y.mean() - x.mean())
    se2 = vx + vy
    if se2 <= 0:
        return est, est, est
    dof = se2 * se2 / ((vx * vx) / (n - 1) + (vy * vy) / (m - 1))
    half = _t(dof, family) * math.sqrt(se2)
    return est, est - half, est + half


def repeats_needed(cv: float, change: float, at_least: int = 2, family: int = 1) -> int | None:
    """Repeats per side (from ``at_least``) for a 95% t interval of a ``change`` (fraction) to exclude zero at
    noise ``cv``; conservative: Student's t with n-1 degrees of freedom, as for very unequal spreads."""
    effect = abs(math.log1p(change)) if change > -1 else math.inf
    if cv <= 0 or effect == 0:
        return None
    for n in range(max(at_least, 2), MAX_SUGGESTED_REPEATS + 1):
        if _t(n - 1, family) * cv * math.sqrt(2 / n) < effect:
            return n
    return None


def _verdict(
    metric: E2EMetric,
    base: dict[str, Any],
    new: dict[str, Any],
    change_pct: float | None,
    ci95_pct: list[float] | None,
    verdict: E2EVerdict,
    reason: str,
    needed: int | None = None,
) -> MetricVerdict:
    return MetricVerdict(
        metric=metric.name,
        label=metric.label,
        higher_is_better=metric.higher_is_better,
        base=base,
        new=new,
        change_pct=change_pct,
        ci95_pct=ci95_pct,
        verdict=verdict,
        reason=reason,
        repeats_needed=needed,
    )


def _bounds(bar: float) -> str:
    """A noise bar as the changes it stands for: it is symmetric in log (a factor either way), so +90% up
    matches -47.4% down, and "-51.6% exceeds ±90%" would read as a contradiction."""
    return f"+{bar:.1%} / {1 / (1 + bar) - 1:+.1%} (a factor of {1 + bar:.2f} either way)"


def _better(higher_is_better: bool, log_change: float) -> bool:
    return (log_change > 0) == higher_is_better


def compare_metric(
    metric: E2EMetric,
    base: Sequence[float],
    new: Sequence[float],
    *,
    min_effect: float = 0.02,
    noise_floor: float | None = None,
    family: int = 1,
) -> MetricVerdict:
    """The verdict on one metric from each run's repeat values.

    ``noise_floor``: the run-to-run change that repeats inside one run cannot see (restarts, the
    machine's load moving between the two runs); default :data:`NOISE_FLOOR` for the metric. A change
    is called only when the interval excludes no change *and* it exceeds ``max(min_effect, floor)``.
    ``family``: how many metrics are judged together; their intervals hold at 95% jointly (an A/A pair has at
    most a 5% chance of any metric being called by its interval, not 5% per metric).
    """
    b, c = spread(base), spread(new)
    if not base or not new or min(base) <= 0 or min(new) <= 0:
        return _verdict(metric, b, c, None, None, E2EVerdict.NOT_COMPARABLE, "no positive value in one of the runs")
    floor = NOISE_FLOOR.get(metric.name, DEFAULT_NOISE_FLOOR) if noise_floor is None else noise_floor
    if len(base) < 2 or len(new) < 2:
        return _single_run_verdict(metric, b, c, min_effect, floor)
    est, lo, hi = welch_log_interval(base, new, family)
    change, ci = math.expm1(est), [100 * math.expm1(lo), 100 * math.expm1(hi)]
    cv = math.sqrt(((b["cv"] or 0.0) ** 2 + (c["cv"] or 0.0) ** 2) / 2)
    bar = max(min_effect, floor)
    excludes_zero = lo > 0 or hi < 0
    joint = f" (jointly over {family} metrics)" if family > 1 else ""
    if excludes_zero and abs(est) >= math.log1p(bar):
        verdict = E2EVerdict.IMPROVED if _better(metric.higher_is_better, est) else E2EVerdict.REGRESSED
        reason = f"the 95% CI{joint} excludes zero and {change:+.1%} is beyond {_bounds(bar)}"
        return _verdict(metric, b, c, 100 * change, ci, verdict, reason)
    if excludes_zero and floor > min_effect and abs(change) >= min_effect:
        reason = (
            f"{change:+.1%} (95% CI {ci[0]:+.1f}% to {ci[1]:+.1f}%) is within the run-to-run noise floor of "
            f"{_bounds(floor)}: repeats inside one run do not see server restarts or the machine's load changing "
            "between the two runs (--restart-between-repeats for both runs, or --noise-floor from your own A/A runs)"
        )
        return _verdict(metric, b, c, 100 * change, ci, E2EVerdict.WITHIN_NOISE, reason)
    if excludes_zero:
        reason = f"the 95% CI{joint} excludes zero, but {change:+.1%} is below the {min_effect:.0%} effect of interest"
        return _verdict(metric, b, c, 100 * change, ci, E2EVerdict.WITHIN_NOISE, reason)
    reason = f"95% CI{joint} {ci[0]:+.1f}% to {ci[1]:+.1f}% includes no change"
    reason += f" (repeats {b['n']} and {c['n']}, CV {cv:.1%})"
    needed = repeats_needed(cv, change, at_least=max(b["n"], c["n"]) + 1, family=family)
    if abs(change) >= min_effect:
        reason += _settle_hint(needed, change, cv, floor)
    return _verdict(metric, b, c, 100 * change, ci, E2EVerdict.WITHIN_NOISE, reason, needed)


def _single_run_verdict(
    metric: E2EMetric, b: dict[str, Any], c: dict[str, Any], min_effect: float, floor: float
) -> MetricVerdict:
    """One side has one repeat: no spread of its own, so only a change that dwarfs the noise floor counts."""
    est = math.log(c["mean"] / b["mean"])
    change = math.expm1(est)
    bar = max(math.expm1(SINGLE_RUN_FACTOR * math.log1p(floor)), min_effect)
    cv = max(floor, min_effect) / (Z95 * math.sqrt(2))  # the floor read as a 95% bound on a two-run difference
    if abs(est) > math.log1p(bar):  # symmetric in log: x2 and x0.5 are the same size of change
        verdict = E2EVerdict.IMPROVED if _better(metric.higher_is_better, est) else E2EVerdict.REGRESSED
        reason = (
            f"single repeat: {change:+.1%} dwarfs the noise floor of {_bounds(floor)}; "
            f"it is called beyond {_bounds(bar)}"
        )
        return _verdict(metric, b, c, 100 * change, None, verdict, reason)
    needed = repeats_needed(cv, change)
    reason = (
        f"{b['n']} and {c['n']} repeat(s): no between-repeat spread to judge {change:+.1%} against; the "
        f"noise floor is {_bounds(floor)}; a single run's change is called beyond {_bounds(bar)}"
    )
    if abs(change) >= min_effect:
        reason += _settle_hint(needed, change, cv, floor)
    return _verdict(metric, b, c, 100 * change, None, E2EVerdict.WITHIN_NOISE, reason, needed)


def _settle_hint(needed: int | None, change: float, cv: float, floor: float) -> str:
    if needed is None:
        return f"; {change:+.1%} is too small to resolve at CV {cv:.1%} within {MAX_SUGGESTED_REPEATS} repeats"
    how = f"--repeats {needed}" if abs(change) >= floor else f"--repeats {needed} --restart-between-repeats"
    return f"; about {needed} repeats per run ({how}, both runs) would settle {change:+.1%} at CV {cv:.1%}"


# --- interleaved rounds: the noise measured, not assumed -----------------------------------------------


def paired_log_interval(
    base: Sequence[float], new: Sequence[float], family: int = 1
) -> tuple[float, float, float, float]:
    """Mean log(new/base) over paired rounds with its t interval and the rounds' sd: (est, lo, hi, sd).

    Each round measured both sides back to back (order alternating), each in its own server lifetime where
    magpie starts the servers: the pair's difference carries everything that moves between lifetimes and
    cancels what drifts slowly (the machine's load, a warming cache), and the t interval on n-1 degrees of
    freedom includes that between-lifetime variance instead of assuming a floor for it. ``family``: the
    interval is one of that many judged together, at 95% for all of them (Bonferroni)."""
    d = np.log(np.asarray(new, dtype=float)) - np.log(np.asarray(base, dtype=float))
    n = len(d)
    est = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else math.nan
    if n < 2:
        return est, math.nan, math.nan, sd
    half = _t_family(n - 1, family) * sd / math.sqrt(n)
    return est, est - half, est + half, sd


def rounds_needed(sd: float, change: float, min_effect: float, at_least: int, family: int = 1) -> int | None:
    """Interleaved rounds for the interval of ``change`` to clear ``min_effect`` at a between-round sd."""
    room = abs(math.log1p(change)) - math.log1p(min_effect) if change > -1 else math.inf
    if not sd or sd != sd or room <= 0:
        return None
    for n in range(max(at_least, 2), MAX_SUGGESTED_REPEATS + 1):
        if _t_family(n - 1, family) * sd / math.sqrt(n) < room:
            return n
    return None


def compare_paired_metric(
    metric: E2EMetric, base: Sequence[float], new: Sequence[float], *, min_effect: float = 0.02, family: int = 1
) -> MetricVerdict:
    """The verdict on one metric from interleaved rounds (``base[i]`` and ``new[i]`` measured in round i).

    IMPROVED / REGRESSED only when the whole interval lies beyond ``min_effect`` in one direction: an
    interval that reaches below the effect of interest does not prove one (the kernel verdicts' rule).
    ``family``: how many metrics are judged together; their intervals hold at 95% jointly, so an A/A pair has
    at most a 5% chance of any metric being called, not 5% per metric."""
    b, c = spread(base), spread(new)
    if len(base) != len(new) or not base or min(base) <= 0 or min(new) <= 0:
        return _verdict(metric, b, c, None, None, E2EVerdict.NOT_COMPARABLE, "no positive value in some round")
    est, lo, hi, sd = paired_log_interval(base, new, family)
    change = math.expm1(est)
    if len(base) < 2:
        reason = f"one interleaved round: no between-round spread to judge {change:+.1%} against (--repeats 3 or more)"
        return _verdict(metric, b, c, 100 * change, None, E2EVerdict.WITHIN_NOISE, reason)
    ci = [100 * math.expm1(lo), 100 * math.expm1(hi)]
    bar = math.log1p(min_effect)
    joint = f", 95% jointly over {family} metrics" if family > 1 else ""
    measured = f"{len(base)} interleaved rounds, between-round sd {sd:.1%}{joint}"
    if lo > bar or hi < -bar:
        verdict = E2EVerdict.IMPROVED if _better(metric.higher_is_better, est) else E2EVerdict.REGRESSED
        reason = f"the whole CI ({ci[0]:+.1f}% to {ci[1]:+.1f}%) is beyond ±{min_effect:.0%} ({measured})"
        return _verdict(metric, b, c, 100 * change, ci, verdict, reason)
    reason = f"CI {ci[0]:+.1f}% to {ci[1]:+.1f}% reaches within ±{min_effect:.0%} ({measured})"
    needed = rounds_needed(sd, change, min_effect, len(base) + 1, family)
    if needed is not None:
        reason += f"; about {needed} rounds (--repeats {needed}) would settle {change:+.1%}"
    return _verdict(metric, b, c, 100 * change, ci, E2EVerdict.WITHIN_NOISE, reason, needed)


def report_rounds(report: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """An interleaved side's summary-point repeats by round: ``{round: [metrics, ...]}`` (measured ones only)."""
    points = report.get("points") or []
    idx = report.get("summary_point")
    if not isinstance(idx, int) or not 0 <= idx < len(points):
        return {}
    rounds: dict[int, list[dict[str, Any]]] = {}
    for entry in points[idx].get("repeats") or []:
        metrics = entry.get("metrics") if isinstance(entry, dict) else None
        if isinstance(metrics, dict) and metrics.get("completed") and isinstance(entry.get("round"), int):
            rounds.setdefault(entry["round"], []).append(metrics)
    return rounds


def interleaved_pair(base: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two reports are the two sides of one interleaved run (``magpie benchmark --interleave``)."""
    a, b = base.get("interleave") or {}, new.get("interleave") or {}
    return bool(a.get("id")) and a.get("id") == b.get("id") and a.get("side") != b.get("side")


def _compare_paired_metrics(
    base: dict[str, Any], new: dict[str, Any], min_effect: float
) -> tuple[list[MetricVerdict], int]:
    """Per-metric paired verdicts over the rounds both sides measured; a round's value is the geometric mean
    of its repeats (one per round unless the configs ask for more)."""
    a, b = report_rounds(base), report_rounds(new)
    shared = sorted(a.keys() & b.keys())
    columns = {}
    for metric in E2E_METRICS:
        pairs = [(_round_value(a[r], metric), _round_value(b[r], metric)) for r in shared]
        kept = [(x, y) for x, y in pairs if x is not None and y is not None]
        if kept:
            columns[metric] = kept
    out = [
        compare_paired_metric(m, [x for x, _ in kept], [y for _, y in kept], min_effect=min_effect, family=len(columns))
        for m, kept in columns.items()
    ]
    return out, len(shared)


def _round_value(repeats: list[dict[str, Any]], metric: E2EMetric) -> float | None:
    values = [metric_value(m, metric.keys) for m in repeats]
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


# --- workload identity --------------------------------------------------------------------------------


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts (and lists of dicts) as ``a.b[0].c`` keys; other lists stay values."""
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        out: dict[str, Any] = {}
        for i, item in enumerate(data):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    if not isinstance(data, dict) or not data:
        return {prefix: data}
    out = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def fingerprint_differences(
    base: dict[str, Any] | None, new: dict[str, Any] | None, group: str
) -> list[dict[str, Any]]:
    """Fields of fingerprint ``group`` (``workload`` or ``system``) that differ: ``{field, base, new}``."""
    a = flatten((base or {}).get(group) or {}, group)
    b = flatten((new or {}).get(group) or {}, group)
    return [
        {"field": k, "base": a.get(k), "new": b.get(k)} for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)
    ]


# --- two benchmark reports ------------------------------------------------------------------------------


class E2EComparison(Model):
    """``magpie benchmark --compare BASE NEW``: per-metric verdicts, and whether the runs are comparable."""

    base: str
    new: str
    comparable: bool
    verdict: E2EVerdict  # NOT COMPARABLE, else IMPROVED/REGRESSED when some metric is and none goes the other way
    workload_differences: list[dict[str, Any]]
    #: the system under test (server args and env, engine version, image): what a compare is about
    system_differences: list[dict[str, Any]]
    allowed_different_workload: bool = False
    repeats: list[int]
    metrics: list[MetricVerdict]
    reasons: list[str]
    min_effect: float
    #: the run-to-run floor used (None: each metric's default, :data:`NOISE_FLOOR`)
    noise_floor: float | None = None
    #: where the run-to-run noise came from: ``interleaved`` (paired rounds, :func:`compare_paired_metric`),
    #: ``restarted`` (every repeat its own server), ``assumed`` (fixed floors: the runs could not measure it)
    noise: str = "assumed"
    #: interleaved: the rounds paired (both sides measured in each)
    rounds: int | None = None


def report_repeats(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary load point's metrics, one dict per repeat (a report without repeats: one)."""
    points = report.get("points") or []
    idx = report.get("summary_point")
    if isinstance(idx, int) and 0 <= idx < len(points):
        point = points[idx]
        repeats = [r.get("metrics") for r in point.get("repeats") or [] if isinstance(r, dict)]
        repeats = [r for r in repeats if isinstance(r, dict) and r.get("completed")]
        return repeats or [point.get("metrics") or {}]
    throughput, latency = report.get("throughput") or {}, report.get("latency") or {}
    if not throughput:
        return []
    return [{**throughput, **latency}]  # an AMD Magpie report: one run, top-level blocks only


def compare_reports(
    base: dict[str, Any],
    new: dict[str, Any],
    *,
    base_name: str = "base",
    new_name: str = "new",
    allow_different_workload: bool = False,
    min_effect: float = 0.02,
    noise_floor: float | None = None,
) -> E2EComparison:
    """The end-to-end verdict of ``new`` against ``base`` (two ``benchmark_report.json`` dicts)."""
    base_runs, new_runs = report_repeats(base), report_repeats(new)
    reasons = [
        f"{name} has no successful measurement" for name, r in ((base_name, base_runs), (new_name, new_runs)) if not r
    ]
    fp_base, fp_new = base.get("fingerprint"), new.get("fingerprint")
    workload = fingerprint_differences(fp_base, fp_new, "workload")
    missing = [name for name, fp in ((base_name, fp_base), (new_name, fp_new)) if not fp]
    if missing:
        reasons.append(
            f"no workload fingerprint in {' and '.join(missing)} (an older report): the workload cannot be checked"
        )
    elif workload:
        reasons.append("different workloads: " + ", ".join(d["field"] for d in workload))
    comparable = not reasons or (allow_different_workload and bool(base_runs) and bool(new_runs))
    noise, rounds = _noise_source(base, new, noise_floor), None
    if noise == "interleaved":
        metrics, rounds = _compare_paired_metrics(base, new, min_effect)
    else:
        if noise == "restarted":
            noise_floor = 0.0  # every repeat had its own server: the spread already carries the run-to-run noise
        metrics = _compare_metrics(base_runs, new_runs, min_effect, noise_floor) if base_runs and new_runs else []
    if not comparable:
        metrics = [m.model_copy(update={"verdict": E2EVerdict.NOT_COMPARABLE, "reason": reasons[0]}) for m in metrics]
    elif reasons:
        reasons = [f"compared anyway (--allow-different-workload): {r}" for r in reasons]
    # interleaved rounds ran one after the other, and what the machine's load did to them is in their spread
    confounded = (shared_server_reason(base, new) or busy_host_reason(base, new)) if comparable else None
    if confounded and noise != "interleaved":
        metrics = [_cap(m, confounded) for m in metrics]
        reasons.append(confounded)
    if noise == "assumed" and comparable:
        reasons.append(
            ASSUMED_NOISE if noise_floor is None else f"run-to-run noise floor {noise_floor:.0%} (--noise-floor)"
        )
    return E2EComparison(
        base=base_name,
        new=new_name,
        comparable=comparable,
        verdict=_overall(metrics) if comparable else E2EVerdict.NOT_COMPARABLE,
        workload_differences=workload,
        system_differences=fingerprint_differences(fp_base, fp_new, "system"),
        allowed_different_workload=allow_different_workload and bool(workload or missing),
        repeats=[len(base_runs), len(new_runs)],
        metrics=metrics,
        reasons=reasons,
        min_effect=min_effect,
        noise_floor=noise_floor,
        noise=noise,
        rounds=rounds,
    )


def _hosts(report: dict[str, Any]) -> list[dict[str, Any]]:
    points = report.get("points") or []
    idx = report.get("summary_point")
    if not isinstance(idx, int) or not 0 <= idx < len(points):
        return []
    return [r["host"] for r in points[idx].get("repeats") or [] if isinstance(r, dict) and r.get("host")]


def _overlap(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Whether two runs' repeats were measured during overlapping wall-clock windows."""
    a_start, a_end = min(h["start"] for h in a), max(h["end"] for h in a)
    b_start, b_end = min(h["start"] for h in b), max(h["end"] for h in b)
    return a_start < b_end and b_start < a_end


def shared_server_reason(base: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why no verdict can be trusted: both runs sent their load to one server at the same time, so each run's
    requests were the other's load, and which run's requests the server batched first can decide any
    difference (an A/A pair run this way in CI, against a real CPU server, was once called IMPROVED)."""
    a, b = _hosts(base), _hosts(new)
    url = base.get("base_url")
    if not a or not b or not url or url != new.get("base_url") or not _overlap(a, b):
        return None
    return (
        f"both runs loaded one server ({url}) at the same time: each run's requests were the other's load, so "
        "the server's scheduling, not the change, may explain any difference; run them one after the other, or "
        "each against its own server"
    )


def busy_host_reason(base: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why no verdict can be trusted: the host was overloaded and the two runs were measured at different
    times (their repeats did not overlap), so a change of the machine's load can explain any difference."""
    a, b = _hosts(base), _hosts(new)
    if not a or not b:
        return None
    loads = [(h.get("load_avg_1m") or 0.0) / max(h.get("cpus") or 1, 1) for h in a + b]
    if max(loads) <= BUSY_LOAD_PER_CPU:
        return None
    if _overlap(a, b):
        return None  # measured at the same time: the load hit both runs alike
    worst = max(a + b, key=lambda h: (h.get("load_avg_1m") or 0.0) / max(h.get("cpus") or 1, 1))
    return (
        f"the host was overloaded (load average {worst.get('load_avg_1m'):.1f} on {worst.get('cpus')} CPUs) and the "
        "runs were measured at different times: the machine's load may explain any difference (identical runs "
        "have differed by up to 3.2x under such load); re-run on a quiet machine, or run both at the same time, "
        "each against its own server"
    )


def _cap(m: MetricVerdict, reason: str) -> MetricVerdict:
    if m.verdict not in (E2EVerdict.IMPROVED, E2EVerdict.REGRESSED):
        return m
    return m.model_copy(
        update={"verdict": E2EVerdict.WITHIN_NOISE, "reason": f"{m.change_pct:+.1f}% not called: {reason}"}
    )


#: what a comparison of two separate runs says about its noise: the floors are a guess, not a measurement
ASSUMED_NOISE = (
    "noise assumed, not measured: the runs' repeats shared one server lifetime each, so the change between "
    "lifetimes is each metric's default floor (magpie_benchmark.stats.NOISE_FLOOR); measure it with "
    "--interleave BASE.yaml NEW.yaml (rounds over server lifetimes), or --restart-between-repeats for both runs"
)


def _noise_source(base: dict[str, Any], new: dict[str, Any], noise_floor: float | None) -> str:
    """``interleaved``, ``restarted`` or ``assumed`` (an explicit ``--noise-floor`` is a floor the user chose)."""
    if interleaved_pair(base, new):
        return "interleaved"
    if noise_floor is None and _restarted(base) and _restarted(new):
        return "restarted"
    return "assumed"


def _restarted(report: dict[str, Any]) -> bool:
    return bool((report.get("config") or {}).get("restart_between_repeats")) and (report.get("repeats") or 1) > 1


def _compare_metrics(
    base_runs: list[dict[str, Any]], new_runs: list[dict[str, Any]], min_effect: float, noise_floor: float | None
) -> list[MetricVerdict]:
    columns = {}
    for metric in E2E_METRICS:
        b = [metric_value(m, metric.keys) for m in base_runs]
        n = [metric_value(m, metric.keys) for m in new_runs]
        if all(v is None for v in b) and all(v is None for v in n):
            continue  # e.g. goodput without SLOs in either run
        columns[metric] = [v for v in b if v is not None], [v for v in n if v is not None]
    # the run's verdict is REGRESSED when any metric is: the intervals hold jointly, or an A/A pair of 3-repeat runs
    # over 9 metrics was called REGRESSED on its TTFT (CI, 2026-12-02)
    family = len(columns)
    return [
        compare_metric(m, b, n, min_effect=min_effect, noise_floor=noise_floor, family=family)
        for m, (b, n) in columns.items()
    ]


def _overall(metrics: list[MetricVerdict]) -> E2EVerdict:
    verdicts = {m.verdict for m in metrics}
    if E2EVerdict.REGRESSED in verdicts:
        return E2EVerdict.REGRESSED
    if E2EVerdict.IMPROVED in verdicts:
        return E2EVerdict.IMPROVED
    return E2EVerdict.WITHIN_NOISE
