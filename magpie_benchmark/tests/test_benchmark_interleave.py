"""``--interleave``: rounds over server lifetimes, the noise measured from them, and the paired verdict.

The statistics are checked on simulated rounds with a fixed seed (what the interval promises, counted over
many experiments); the rounds themselves run for real against magpie's fake server, which magpie starts and
stops once per run (each run its own server lifetime). The real vLLM CPU server: ``tests/test_e2e_verdicts_vllm.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from magpie_benchmark.interleave import round_order, run_interleaved
from magpie_benchmark.stats import E2E_METRICS, E2EVerdict, compare_paired_metric, compare_reports

from tests.helpers.fake_framework import FakeFramework, config
from tests.helpers.load_injector import injected_load

THROUGHPUT = next(m for m in E2E_METRICS if m.name == "output_throughput")
TTFT = next(m for m in E2E_METRICS if m.name == "mean_ttft_ms")


def _experiments(
    change: float, noise: float, rounds: int, family: int = 1, n: int = 400, seed: int = 7
) -> list[E2EVerdict]:
    """``n`` simulated interleaved comparisons: every run's throughput is ``100 * (1 + change)`` (new side)
    or 100 (base), times log-normal noise of sd ``noise`` per run, plus a drift shared by the round's pair."""
    rng = np.random.default_rng(seed)
    verdicts = []
    for _ in range(n):
        drift = rng.normal(0, 0.3, rounds)  # the machine's load moving between rounds: cancels in the pair
        base = 100 * np.exp(drift + rng.normal(0, noise, rounds))
        new = 100 * (1 + change) * np.exp(drift + rng.normal(0, noise, rounds))
        verdicts.append(compare_paired_metric(THROUGHPUT, list(base), list(new), family=family).verdict)
    return verdicts


def test_a_10_percent_change_with_2_percent_noise_is_called() -> None:
    # one metric alone: 5 rounds; nine metrics judged jointly (what --compare does): 8 rounds
    for rounds, family in ((5, 1), (8, 9)):
        verdicts = _experiments(0.10, 0.02, rounds=rounds, family=family)
        assert verdicts.count(E2EVerdict.IMPROVED) / len(verdicts) >= 0.95, (rounds, family)
        assert E2EVerdict.REGRESSED not in verdicts


def test_identical_sides_are_not_called_even_with_a_drifting_machine() -> None:
    for rounds in (3, 5, 10):
        verdicts = _experiments(0.0, 0.05, rounds=rounds)
        # the whole interval must lie beyond the 2% effect: far rarer than the 5% a bare "excludes 0" allows
        assert (len(verdicts) - verdicts.count(E2EVerdict.WITHIN_NOISE)) / len(verdicts) <= 0.025


def test_joint_intervals_keep_an_aa_pair_uncalled_across_all_metrics() -> None:
    # nine independent metrics of an A/A pair: P(any called) stays under 5% jointly (per metric it would be ~9x)
    rng = np.random.default_rng(11)
    any_called = 0
    for _ in range(300):
        base, new = (100 * np.exp(rng.normal(0, 0.05, (9, 3))) for _ in range(2))
        verdicts = [
            compare_paired_metric(THROUGHPUT, list(b), list(c), family=9).verdict
            for b, c in zip(base, new, strict=True)
        ]
        any_called += any(v != E2EVerdict.WITHIN_NOISE for v in verdicts)
    assert any_called / 300 <= 0.05


def test_paired_verdict_reasons_and_direction() -> None:
    slower = compare_paired_metric(TTFT, [50, 52, 51], [60, 63, 61])
    assert slower.verdict == E2EVerdict.REGRESSED and "whole CI" in slower.reason
    assert "3 interleaved rounds" in slower.reason
    unclear = compare_paired_metric(THROUGHPUT, [100, 100, 100], [104, 95, 112])
    assert unclear.verdict == E2EVerdict.WITHIN_NOISE and "reaches within" in unclear.reason
    one = compare_paired_metric(THROUGHPUT, [100], [150])
    assert one.verdict == E2EVerdict.WITHIN_NOISE and "one interleaved round" in one.reason
    assert round_order(0) == ("base", "new") and round_order(1) == ("new", "base")


def _configs(new_server_args: list[str]) -> dict:
    envs = {"CONC": 4, "ISL": 16, "OSL": 8, "NUM_PROMPTS": 12, "RANDOM_RANGE_RATIO": 0}
    common = {"run_kind": "measurement", "envs": envs, "load": {"concurrencies": [4], "progress": False}}
    return {"base": config(**common), "new": config(**common, server_args=new_server_args)}


@pytest.fixture(scope="module")
def aa_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("interleave")
    folder, _ = run_interleaved(_configs([]), 3, out, min_effect=0.10, framework_component=FakeFramework())
    return folder


def test_interleaved_aa_merges_every_round_and_measures_its_noise(aa_folder: Path) -> None:
    base = json.loads((aa_folder / "base" / "benchmark_report.json").read_text())
    new = json.loads((aa_folder / "new" / "benchmark_report.json").read_text())
    for side, data in (("base", base), ("new", new)):
        assert data["success"] and data["interleave"]["side"] == side and data["repeats"] == 3
        point = data["points"][data["summary_point"]]
        assert [r["round"] for r in point["repeats"]] == [0, 1, 2]
        # every round was its own server lifetime: three runs, three servers, each stopped
        runs = data["interleave"]["runs"]
        pids = {json.loads((Path(r["workspace"]) / "benchmark_report.json").read_text())["server"]["pid"] for r in runs}
        assert len(pids) == 3
        # metrics pooled over every round's requests, read back from the sample files
        assert point["metrics"]["completed"] == 3 * 12 and data["throughput"]["completed_requests"] == 3 * 12
        assert data["repeat_stats"]["output_throughput"]["n"] == 3
    assert base["interleave"]["id"] == new["interleave"]["id"]
    comparison = json.loads((aa_folder / "comparison.json").read_text())
    assert comparison["noise"] == "interleaved" and comparison["rounds"] == 3
    # identical sides: no metric's whole interval lies beyond 10%
    assert {m["verdict"] for m in comparison["metrics"]} == {"WITHIN NOISE"}, comparison["metrics"]
    # the same two reports judged again by --compare's function: the same paired verdict
    again = compare_reports(base, new, min_effect=0.10)
    assert again.noise == "interleaved" and [m.verdict for m in again.metrics] == [
        m["verdict"] for m in comparison["metrics"]
    ]


def test_separate_runs_name_their_noise_as_assumed(aa_folder: Path) -> None:
    base = json.loads((aa_folder / "base" / "benchmark_report.json").read_text())
    first_run = Path(base["interleave"]["runs"][0]["workspace"]) / "benchmark_report.json"
    second_run = Path(base["interleave"]["runs"][1]["workspace"]) / "benchmark_report.json"
    result = compare_reports(json.loads(first_run.read_text()), json.loads(second_run.read_text()))
    assert result.noise == "assumed" and any("noise assumed, not measured" in r for r in result.reasons)


def test_interleaved_real_change_is_called(tmp_path: Path) -> None:
    # the new side's server answers its first token 200 ms later (20 ms before): a change of the system, called
    # with load injected on every core (it moves both sides of a round; the pairing keeps the change)
    with injected_load():
        folder, result = run_interleaved(
            _configs(["--ttft-ms", "220"]), 3, tmp_path, min_effect=0.10, framework_component=FakeFramework()
        )
    verdicts = {m.metric: m.verdict for m in result.metrics}
    assert verdicts["mean_ttft_ms"] == E2EVerdict.REGRESSED, result.metrics
    assert result.verdict == E2EVerdict.REGRESSED and result.noise == "interleaved"
    assert (folder / "comparison.json").is_file()
