"""Where a comparison's verdicts are decided: the estimator (:func:`versus`), the rule (``stats.decide``, with the
run's noise floor), distrust beside an unstable run (:func:`rank`), why a candidate is not ranked, what an interrupted
run may still say (:func:`interrupted_verdicts`); beside the benchmark's verdicts in docs/kernel-evaluation.md."""

from __future__ import annotations

import math
from typing import Any

from magpie_core.measurement.stats import ProcessSpread, Speedup, Verdict, hierarchical_speedup, paired_speedup, speedup
from magpie_core.pipelines.blocked import MIN_BLOCKS
from magpie_core.pipelines.kernel_reports import CompareReport, ComparisonResults, KernelResult, RankEntry, summary_row
from magpie_core.reports import StageStatus


def interrupted_verdicts(report: CompareReport, stable: dict[str, Any] | None) -> CompareReport:
    """``report`` of a run stopped by a signal: a verdict only when the interleaved blocks had reached their minimum
    count; else no winner, and every decided candidate UNSTABLE."""
    report.interrupted = True
    blocks = int((stable or {}).get("blocks") or 0)
    if blocks >= MIN_BLOCKS:
        report.verdict = f"Interrupted after {blocks} interleaved blocks: {report.verdict}"
        return report
    what = f"timing stopped after {blocks} interleaved blocks" if stable else "before timing finished"
    report.verdict = f"Interrupted ({what}): no verdict"
    report.winner_id, report.results.winner = None, None
    for entry in report.ranking:
        if entry.verdict not in (None, "BASELINE"):
            entry.verdict = "UNSTABLE"
            entry.verdict_reason = f"interrupted after {blocks} of >= {MIN_BLOCKS} blocks"
    return report


def rank(
    results: list[KernelResult],
    base_index: int,
    *,
    min_effect: float = 0.02,
    workspace: str | None = None,
    stability: dict[str, Any] | None = None,
) -> CompareReport:
    """Rank correct, timed candidates by median; speedups and verdicts vs the baseline."""
    base = results[base_index]
    timed = [(i, r) for i, r in enumerate(results) if rankable(r)]
    timed.sort(key=lambda item: item[1].performance.timing.median)  # type: ignore[union-attr]
    base_ok = any(i == base_index for i, _ in timed)
    distrust = bool(stability and stability.get("unstable"))
    order = ["FASTER", "BASELINE", "SAME", "SLOWER"]  # by median within each; the undecided after every decided one
    entries = [_entry(i, r, base, base_index, base_ok, min_effect, stability) for i, r in timed]
    entries.sort(key=lambda e: order.index(e.verdict) if e.verdict in order else len(order))
    for position, entry in enumerate(entries, start=1):
        entry.rank = position
    winner_index, verdict = _winner(timed, min_effect, distrust, stability)
    unranked = [
        {"index": i, "kernel_id": r.kernel_id, "reason": _unranked_reason(r)}
        for i, r in enumerate(results)
        if all(i != j for j, _ in timed)
    ]
    correct = [r.correctness.status == StageStatus.PASSED for r in results]
    summary_lines = [
        f"Compared {len(results)} kernel implementations (baseline: {base.kernel_id})",
        f"Correctness: {sum(correct)}/{len(results)} passed",
        *[
            f"  {'✓' if ok else '✗'} Kernel {i}: {r.kernel_id}"
            for i, (ok, r) in enumerate(zip(correct, results, strict=True))
        ],
        verdict,
        *([f"Timing: {stability['message']}"] if stability else []),
    ]
    return CompareReport(
        workspace=workspace,
        baseline=base_index,
        baseline_id=base.kernel_id,
        results=ComparisonResults(
            kernel_results=results,
            comparison_metrics={
                "correctness": correct,
                "all_correct": all(correct),
                "perf_scores": [next((e.speedup for e in entries if e.index == i), None) for i in range(len(results))],
                "median_us": [r.median_us for r in results],
            },
            winner=winner_index,
            rankings=[(e.index, e.median_us) for e in entries],
            summary="\n".join(summary_lines),
        ),
        ranking=entries,
        winner_id=results[winner_index].kernel_id if winner_index is not None else None,
        verdict=verdict,
        unranked=unranked,
        summary_rows=[summary_row(r) for r in results],
        stability=stability,
    )


def _entry(
    i: int,
    r: KernelResult,
    base: KernelResult,
    base_index: int,
    base_ok: bool,
    min_effect: float,
    stability: dict[str, Any] | None,
) -> RankEntry:
    timing = r.performance.timing
    assert timing is not None
    entry = RankEntry(
        rank=0,  # placed by rank()
        index=i,
        kernel_id=r.kernel_id,
        median_us=timing.median,
        ci95_low_us=timing.ci95_low,
        ci95_high_us=timing.ci95_high,
    )
    if i == base_index:
        entry.speedup, entry.speedup_ci95, entry.verdict = 1.0, (1.0, 1.0), "BASELINE"
    elif base_ok:
        s = versus(base, r, min_effect, stability)
        if stability and stability.get("unstable"):
            s.verdict, s.reason = Verdict.UNSTABLE, stability["message"]
        entry.speedup, entry.speedup_ci95, entry.verdict = s.value, (s.ci_low, s.ci_high), s.verdict.value
        entry.verdict_reason = s.reason or None
    return entry


def versus(
    reference: KernelResult, other: KernelResult, min_effect: float, stability: dict[str, Any] | None = None
) -> Speedup:
    """How much faster ``other`` is than ``reference``: over processes and blocks when both were timed in
    several processes of the same blocks, paired block by block when timed in the same blocks (or rounds),
    else from the two sample sets. ``stability``: the run's (its process spread and noise floor)."""
    a, b = reference.performance, other.performance
    floor = noise_floor(stability)
    spread = process_spread(stability)
    if a.process_levels and b.process_levels and spread is not None and a.block_medians_us and b.block_medians_us:
        n = min(len(a.block_medians_us), len(b.block_medians_us))  # one side left the blocks early, decided
        blocks = tuple([p[:n] for p in x.process_blocks_us or [x.block_medians_us]] for x in (a, b))
        levels = (a.process_levels, b.process_levels)
        return hierarchical_speedup(*levels, spread, min_effect=min_effect, noise_floor=floor, blocks=blocks)
    if a.block_medians_us and b.block_medians_us and len(a.block_medians_us) == len(b.block_medians_us):
        return paired_speedup(a.block_medians_us, b.block_medians_us, min_effect=min_effect, noise_floor=floor)
    return speedup(a.samples_us or [], b.samples_us or [], min_effect=min_effect)


def process_spread(stability: dict[str, Any] | None) -> ProcessSpread | None:
    """The run's pooled between-process spread (None when the run did not measure one)."""
    pct, df = (stability or {}).get("process_spread_pct"), (stability or {}).get("process_spread_df")
    if not isinstance(pct, (int, float)) or not df or not math.isfinite(pct):
        return None
    return ProcessSpread(math.log1p(pct / 100) ** 2, int(df))


def noise_floor(stability: dict[str, Any] | None) -> float:
    """How far apart identical work came out in this run (a fraction; 0 when not measured)."""
    value = (stability or {}).get("noise_floor_pct")
    return value / 100 if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def rankable(result: KernelResult) -> bool:
    """Correct, timed, and its timing means something here (a candidate that is not is listed, not ranked)."""
    perf = result.performance
    return result.passed and perf.timing is not None and bool(perf.samples_us) and perf.timing_meaningful


def _winner(
    timed: list[tuple[int, KernelResult]], min_effect: float, distrust: bool, stability: dict[str, Any] | None
) -> tuple[int | None, str]:
    if not timed:
        return None, "No winner: no candidate is both correct and timed"
    if len(timed) == 1:
        i, r = timed[0]
        return i, f"Winner: Kernel {i} ({r.kernel_id}), the only correct and timed candidate"
    (i1, first), (_, second) = timed[0], timed[1]
    s = versus(second, first, min_effect, stability)
    interval = f"{s.value:.3f}x, 95% CI {s.ci_low:.3f}-{s.ci_high:.3f}"
    if s.verdict == Verdict.FASTER and not distrust:
        return i1, (
            f"Winner: Kernel {i1} ({first.kernel_id}), {s.value:.3f}x faster than the runner-up "
            f"{second.kernel_id} (95% CI {s.ci_low:.3f}-{s.ci_high:.3f})"
        )
    if distrust or s.verdict == Verdict.UNSTABLE:
        return None, (
            f"No verdict: the timing was too noisy to tell {first.kernel_id} from {second.kernel_id} "
            f"at {min_effect:.0%} ({interval})"
        )
    return None, f"No significant winner: {first.kernel_id} and {second.kernel_id} are within noise ({interval})"


def _unranked_reason(result: KernelResult) -> str:
    if result.compile.status in (StageStatus.FAILED, StageStatus.ERROR):
        return f"compile: {result.compile.message}"
    if result.correctness.status != StageStatus.PASSED:
        first_line = (result.correctness.message or "").splitlines()[:1]
        return f"correctness {result.correctness.status.value}: {' '.join(first_line)}"
    if result.performance.timing and not result.performance.timing_meaningful:
        return "timings not meaningful here: " + "; ".join(result.performance.notes[:1])
    return f"performance {result.performance.status.value}: {result.performance.message or 'no timing'}"
