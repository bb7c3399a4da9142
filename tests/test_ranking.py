"""compare: identical inputs, baseline outputs as the check, speedup intervals and verdicts."""

from __future__ import annotations

import json

import numpy as np

from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_core.measurement.stats import (
    SamplingSettings,
    Verdict,
    median_ci,
    paired_speedup,
    sample_until_stable,
    speedup,
    summarize,
)
from magpie_core.pipelines.blocked import CLEAR_FIRST_LOOK
from magpie_core.pipelines.compare import compare

from .conftest import DATA
from .helpers.load_injector import injected_load

KERNELS = DATA / "kernels"
PERF = {"budget_seconds": 4, "warmup_ms": 20, "min_samples": 20, "target_rse": 0.005}


def _variant(kid: str, fn: str, **extra) -> KernelConfig:
    return KernelConfig(id=kid, type="pytorch", entry=f"costs.py:{fn}", **extra)


def known_costs_file() -> KernelConfigFile:
    """Single work, double work and the same single work spelled differently (benchmarks reuse it)."""
    return KernelConfigFile(
        kernels=[
            _variant("single", "single_work"),
            _variant("double", "double_work"),
            _variant("single_again", "single_work_again"),
        ],
        performance=PERF,
    )


def test_verdicts_on_known_relative_costs_hold_under_load(tmp_path):
    """The guarantee, on a machine whose load comes and goes during the compare: identical work is never
    FASTER or SLOWER, double work is never FASTER (UNSTABLE is an honest answer to a noisy machine)."""
    with injected_load():
        report = compare(
            known_costs_file(), config_dir=KERNELS, output_dir=tmp_path, baseline="single", min_effect=0.25
        )
    by_id = {e.kernel_id: e for e in report.ranking}
    assert by_id["single"].verdict == "BASELINE"
    assert by_id["double"].verdict in ("SLOWER", "UNSTABLE")
    assert by_id["single_again"].verdict in ("SAME", "UNSTABLE")
    for entry in by_id.values():
        if entry.verdict == "UNSTABLE":
            assert entry.verdict_reason  # says why
    decided = [e.rank for e in report.ranking if e.verdict in ("FASTER", "BASELINE", "SAME", "SLOWER")]
    undecided = [e.rank for e in report.ranking if e.rank not in decided]
    assert all(u > d for u in undecided for d in decided), report.ranking  # never ranked above a decided one
    assert report.settings["timing"] == "interleaved blocks"
    stability = report.stability
    assert stability is not None and stability["blocks"] >= 20 and stability["message"]
    # no reference given: every candidate was checked against the baseline's outputs on the baseline's inputs
    for result in report.results.kernel_results:
        assert result.correctness.status.value == "passed"
        # paired block by block: the baseline in every block, a candidate in the first 10 or more (a decided one
        # may leave from the rule's first look)
        blocks, first = len(result.performance.block_medians_us), CLEAR_FIRST_LOOK
        assert blocks == stability["blocks"] if result.kernel_id == "single" else first <= blocks <= stability["blocks"]
    methods = {r.kernel_id: r.correctness.method for r in report.results.kernel_results}
    assert methods["double"] == "baseline outputs" and methods["single_again"] == "baseline outputs"
    saved = json.loads((tmp_path / report.workspace / "compare_report.json").read_text())
    assert saved["results"]["winner"] in (0, 2, None)  # never the double-work candidate
    assert saved["results"]["comparison_metrics"]["all_correct"] is True
    assert saved["stability"]["noise_floor_pct"] >= 0


def test_paired_blocks_cancel_load_that_changes_between_blocks():
    """Load that slows whole blocks (by up to 10x) moves both sides of each ratio: the answer stays right."""
    rng = np.random.default_rng(4)
    load = rng.choice([1.0, 3.0, 10.0], size=60)  # the machine's speed, block by block
    base = 100 * load * rng.lognormal(0, 0.02, 60)
    same = 100 * load * rng.lognormal(0, 0.02, 60)
    triple = 300 * load * rng.lognormal(0, 0.02, 60)
    assert paired_speedup(base, same, min_effect=0.05).verdict == Verdict.SAME
    s = paired_speedup(base, triple, min_effect=0.05)
    assert s.verdict == Verdict.SLOWER and 0.31 < s.value < 0.35
    # what separate windows did: the baseline timed in a busy minute, the same work in a quiet one
    busy_window, quiet_window = 300 * rng.lognormal(0, 0.02, 60), 100 * rng.lognormal(0, 0.02, 60)
    assert speedup(busy_window, quiet_window, min_effect=0.05).verdict == Verdict.FASTER  # confidently wrong


def test_paired_verdicts_are_unstable_when_blocks_disagree():
    rng = np.random.default_rng(5)
    base = rng.lognormal(np.log(100), 0.05, 40)
    noisy = base * rng.lognormal(0, 0.6, 40)  # one side hit unevenly inside blocks
    s = paired_speedup(base, noisy, min_effect=0.05)
    assert s.verdict == Verdict.UNSTABLE and "too noisy" in s.reason
    few = paired_speedup(base[:3], base[:3] * 1.5, min_effect=0.05)  # three rounds, consistent: decided
    assert few.verdict == Verdict.SLOWER
    assert paired_speedup(base[:1], base[:1], min_effect=0.05).verdict == Verdict.UNSTABLE


def test_a_wrong_candidate_is_never_ranked(tmp_path):
    file = KernelConfigFile(
        kernels=[
            KernelConfig(id="base", type="pytorch", entry="faulty.py:good", get_inputs="get_inputs"),
            KernelConfig(id="wrong", type="pytorch", entry="faulty.py:wrong_values"),
            KernelConfig(id="partial", type="pytorch", entry="faulty.py:partial_write"),
        ],
        performance={"budget_seconds": 1, "min_samples": 5},
    )
    report = compare(file, config_dir=KERNELS, output_dir=tmp_path)
    assert [e.kernel_id for e in report.ranking] == ["base"]
    reasons = {u["kernel_id"]: u["reason"] for u in report.unranked}
    assert "mismatch at index (3, 7)" in reasons["wrong"]
    assert "non-finite" in reasons["partial"]
    assert report.winner_id == "base"


def test_median_ci_covers_the_true_median():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(400):
        samples = np.sort(rng.lognormal(mean=0.0, sigma=0.5, size=60))
        lo, hi = median_ci(samples)
        hits += lo <= 1.0 <= hi  # the lognormal's median is exp(0) = 1
    assert 0.92 <= hits / 400 <= 0.995


def test_speedup_verdicts_on_synthetic_samples():
    rng = np.random.default_rng(2)
    base = rng.normal(100, 2, 200)
    assert speedup(base, rng.normal(50, 1, 200)).verdict == Verdict.FASTER
    assert speedup(base, rng.normal(200, 4, 200)).verdict == Verdict.SLOWER
    assert speedup(base, rng.normal(100, 2, 200)).verdict == Verdict.SAME
    tiny = speedup(base, rng.normal(99.5, 0.01, 200))  # "significant" but below min_effect
    assert tiny.verdict == Verdict.SAME
    wide = speedup(rng.lognormal(0, 1, 30), rng.lognormal(0, 1, 30))  # could be 2x either way
    assert wide.verdict == Verdict.UNSTABLE


def test_sampling_stops_for_the_right_reason():
    rng = np.random.default_rng(3)
    samples, reason = sample_until_stable(lambda: float(rng.normal(10, 0.01)), SamplingSettings(min_samples=10))
    assert reason == "converged" and len(samples) < 100
    samples, reason = sample_until_stable(
        lambda: float(rng.lognormal(0, 2)), SamplingSettings(max_samples=50, budget_seconds=60)
    )
    assert reason == "max_samples" and len(samples) == 50
    stats = summarize(samples, reason)
    assert stats.p5 <= stats.median <= stats.p95 and stats.ci95_low <= stats.median <= stats.ci95_high
