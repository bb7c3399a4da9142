"""Repeats, workload fingerprint and the end-to-end verdict, against magpie's real local fake server.

The statistics alone (``magpie_benchmark.stats``) are checked on fixed numbers; the pipeline and
``magpie benchmark --compare`` run for real (server started, restarted and stopped by magpie).
The real vLLM CPU server runs in ``test_e2e_verdicts_vllm.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from magpie_benchmark.fingerprint import redact_argv, redact_env
from magpie_benchmark.pipeline import run_benchmark
from magpie_benchmark.stats import (
    E2E_METRICS,
    E2EVerdict,
    compare_metric,
    compare_reports,
    fingerprint_differences,
    repeats_needed,
)

from tests.helpers.fake_framework import FakeFramework, config

THROUGHPUT = next(m for m in E2E_METRICS if m.name == "output_throughput")
TTFT = next(m for m in E2E_METRICS if m.name == "mean_ttft_ms")


def test_verdicts_on_fixed_numbers() -> None:
    same = compare_metric(THROUGHPUT, [100, 104, 98], [101, 99, 103])
    assert same.verdict == E2EVerdict.WITHIN_NOISE and "includes no change" in same.reason
    assert same.ci95_pct[0] < 0 < same.ci95_pct[1]
    assert compare_metric(THROUGHPUT, [100, 104, 98], [40, 42, 41]).verdict == E2EVerdict.REGRESSED
    assert compare_metric(THROUGHPUT, [40, 42, 41], [100, 104, 98]).verdict == E2EVerdict.IMPROVED
    # lower is better for latencies: a drop is an improvement
    assert compare_metric(TTFT, [50, 52, 51], [20, 21, 20]).verdict == E2EVerdict.IMPROVED
    # a tight interval but a change inside the run-to-run floor: not claimed
    small = compare_metric(THROUGHPUT, [100, 100.5, 99.5], [110, 110.5, 109.5])
    assert small.verdict == E2EVerdict.WITHIN_NOISE and "noise floor" in small.reason


def test_single_repeat_needs_an_effect_that_dwarfs_the_floor() -> None:
    small = compare_metric(THROUGHPUT, [100], [90])
    assert small.verdict == E2EVerdict.WITHIN_NOISE
    # the floor is symmetric in log terms: the reason prints both directions, never "-70% exceeds ±60%"
    assert "noise floor is +60.0% / -37.5% (a factor of 1.60 either way)" in small.reason
    assert "--repeats" in small.reason and small.repeats_needed
    big = compare_metric(THROUGHPUT, [100], [30])
    assert big.verdict == E2EVerdict.REGRESSED and "dwarfs" in big.reason
    assert "called beyond +156.0% / -60.9% (a factor of 2.56 either way)" in big.reason
    assert compare_metric(THROUGHPUT, [30], [100]).verdict == E2EVerdict.IMPROVED  # symmetric in log
    assert repeats_needed(0.05, 0.10) is not None and repeats_needed(0.05, 0.0001) is None


def _restarted_run(rng: np.random.Generator, cv: float) -> dict:
    """A 3-repeat report, every repeat on its own server (the noise is in the repeats: no floor), whose nine
    end-to-end metrics are independent draws of the same process at ``cv``."""
    repeats = []
    for _ in range(3):
        metrics: dict = {"completed": 8}
        for metric in E2E_METRICS:
            *path, last = metric.keys
            node = metrics
            for key in path:
                node = node.setdefault(key, {})
            node[last] = float(100 * np.exp(rng.normal(0, cv)))
        repeats.append({"metrics": metrics})
    run = {"config": {"restart_between_repeats": True}, "repeats": 3, "fingerprint": {"workload": {}}}
    return {**run, "summary_point": 0, "points": [{"repeats": repeats}]}


def test_an_aa_pair_is_rarely_called_over_all_its_metrics() -> None:
    # the run's verdict is REGRESSED when any metric is: nine metrics each at 95% alone would call about a third
    # of A/A pairs (a CI run's A/A TTFT once was); joint intervals keep it at 5% for the whole run
    rng = np.random.default_rng(7)
    called = sum(
        compare_reports(_restarted_run(rng, 0.1), _restarted_run(rng, 0.1)).verdict != E2EVerdict.WITHIN_NOISE
        for _ in range(400)
    )
    assert called <= 0.07 * 400, called
    first = compare_reports(_restarted_run(rng, 0.1), _restarted_run(rng, 0.1))
    assert first.noise == "restarted" and "jointly over 9 metrics" in first.metrics[0].reason


def _report(values: list[float], start: float, *, url: str, load: float = 0.1) -> dict:
    """A benchmark_report.json with one load point whose repeats measured ``values`` (output tok/s) from ``start``."""
    repeats = [
        {
            "metrics": {"completed": 8, "output_throughput": v},
            "host": {"start": start + 10 * i, "end": start + 10 * i + 9, "load_avg_1m": load, "cpus": 2},
        }
        for i, v in enumerate(values)
    ]
    return {"base_url": url, "summary_point": 0, "points": [{"repeats": repeats}], "fingerprint": {"workload": {}}}


def test_no_verdict_when_the_runs_shared_a_server_or_an_overloaded_host() -> None:
    # a difference far beyond the noise: called when the runs were apart on a quiet host, or on their own servers
    base, new = [100.0, 101.0, 99.0], [250.0, 251.0, 249.0]
    apart = compare_reports(_report(base, 0, url="http://a"), _report(new, 100, url="http://a"))
    assert apart.verdict == E2EVerdict.IMPROVED
    own_servers = compare_reports(_report(base, 0, url="http://a"), _report(new, 5, url="http://b"))
    assert own_servers.verdict == E2EVerdict.IMPROVED
    # both loaded one server at the same time: each run was the other's load
    shared = compare_reports(_report(base, 0, url="http://a"), _report(new, 5, url="http://a"))
    assert shared.verdict == E2EVerdict.WITHIN_NOISE and "one server (http://a) at the same time" in shared.reasons[0]
    assert all("not called" in m.reason for m in shared.metrics)
    # apart in time on an overloaded host: the load moving between the runs can explain it
    busy = compare_reports(_report(base, 0, url="http://a", load=6.0), _report(new, 100, url="http://b"))
    assert busy.verdict == E2EVerdict.WITHIN_NOISE and "overloaded" in busy.reasons[0]
    # at the same time on their own servers, an overloaded host hits both alike: still called
    together = compare_reports(_report(base, 0, url="http://a", load=6.0), _report(new, 5, url="http://b"))
    assert together.verdict == E2EVerdict.IMPROVED


def test_fingerprint_differences_and_secrets() -> None:
    a = {"workload": {"load": {"points": [1]}, "model": {"id": "m"}}, "system": {"server_args": ["a"]}}
    b = {"workload": {"load": {"points": [2]}, "model": {"id": "m"}}, "system": {"server_args": ["b"]}}
    assert [d["field"] for d in fingerprint_differences(a, b, "workload")] == ["workload.load.points"]
    assert redact_env({"HF_TOKEN": "s3cret", "OMP_NUM_THREADS": "2"}) == {
        "HF_TOKEN": "<redacted>",
        "OMP_NUM_THREADS": "2",
    }
    assert redact_argv(["--api-key", "s3cret", "--port", "1", "--hf-token=abc"]) == [
        "--api-key",
        "<redacted>",
        "--port",
        "1",
        "--hf-token=<redacted>",
    ]


@pytest.fixture(scope="module")
def fake_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three runs with magpie's fake server: A and A2 alike (3 repeats), C with another input length."""
    out = tmp_path_factory.mktemp("repeats")
    runs = {}
    envs = {"CONC": 4, "ISL": 16, "OSL": 8, "NUM_PROMPTS": 12, "RANDOM_RANGE_RATIO": 0}
    for name, isl, restart in (("A", 16, True), ("A2", 16, False), ("C", 32, False)):
        cfg = config(
            run_kind="measurement",
            repeats=3 if name != "C" else 1,
            restart_between_repeats=restart,
            envs={**envs, "ISL": isl},
            load={"progress": False},
            server_env={"HF_TOKEN": "s3cret-value"},
        )
        report = run_benchmark(cfg, out / name, framework_component=FakeFramework())
        assert report.success, report.errors
        runs[name] = Path(report.workspace_dir) / "benchmark_report.json"
    return runs


def test_repeats_keep_every_sample_and_the_spread(fake_runs: dict[str, Path]) -> None:
    data = json.loads(fake_runs["A"].read_text())
    ws = fake_runs["A"].parent
    (point,) = data["points"]
    assert data["repeats"] == 3 and [r["repeat"] for r in point["repeats"]] == [0, 1, 2]
    for r in point["repeats"]:
        lines = (ws / r["samples"]).read_text().splitlines()
        assert len(lines) == 12 and all(json.loads(x)["success"] for x in lines)
    assert point["metrics"]["completed"] == 36  # pooled over the repeats
    stats = data["repeat_stats"]["output_throughput"]
    assert stats["n"] == 3 and stats["std"] is not None and stats["ci95"][0] <= stats["mean"] <= stats["ci95"][1]
    # each repeat drew its own prompts (seed + repeat), from the same distribution
    assert len({r["prompts"]["sha256"] for r in point["repeats"]}) == 3
    assert len(data["server"]["restarts"]) == 2 and data["server"]["stopped"] is True


def test_fingerprint_names_the_workload_and_hides_secrets(fake_runs: dict[str, Path]) -> None:
    text = fake_runs["A"].read_text()
    fp = json.loads(text)["fingerprint"]
    w = fp["workload"]
    assert w["load"]["points"][0]["prompts"]["input_tokens"]["total"] > 0
    assert w["load"]["points"][0]["concurrency"] == 4 and w["model"]["id"] == "fake-model"
    assert w["magpie_version"] and w["hardware"]["cpu"]["count"]
    assert fp["system"]["server_env"]["HF_TOKEN"] == "<redacted>"
    assert "s3cret-value" not in json.dumps(fp)


def test_compare_aa_changed_workload_and_the_flag(fake_runs: dict[str, Path]) -> None:
    a, a2, c = (json.loads(fake_runs[k].read_text()) for k in ("A", "A2", "C"))
    aa = compare_reports(a, a2)
    assert aa.comparable and not aa.workload_differences
    assert {m.verdict for m in aa.metrics} <= {E2EVerdict.WITHIN_NOISE, E2EVerdict.IMPROVED, E2EVerdict.REGRESSED}
    changed = compare_reports(a, c)
    assert not changed.comparable and changed.verdict == E2EVerdict.NOT_COMPARABLE
    fields = {d["field"] for d in changed.workload_differences}
    assert "workload.load.points[0].input_len" in fields
    assert all(m.verdict == E2EVerdict.NOT_COMPARABLE for m in changed.metrics)
    assert "input_len" in json.dumps(changed.workload_differences)
    forced = compare_reports(a, c, allow_different_workload=True)
    assert forced.comparable and forced.allowed_different_workload
    assert forced.reasons[0].startswith("compared anyway (--allow-different-workload)")


def _magpie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "magpie_core", *args], capture_output=True, text=True, timeout=120)


def test_compare_command(fake_runs: dict[str, Path], tmp_path: Path) -> None:
    out = _magpie("benchmark", "--compare", str(fake_runs["A"]), str(fake_runs["A2"].parent), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["comparable"] is True
    out = _magpie("benchmark", "--compare", str(fake_runs["A"]), str(fake_runs["C"]))
    assert out.returncode == 1 and "NOT COMPARABLE" in out.stdout and "workload.load.points" in out.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = _magpie("benchmark", "--compare", str(fake_runs["A"]), str(bad))
    assert out.returncode == 2 and "bad.json:1: not valid JSON" in out.stderr and "Traceback" not in out.stderr
    out = _magpie("benchmark", "--compare", str(fake_runs["A"]), str(tmp_path / "missing.json"))
    assert out.returncode == 2 and "cannot read" in out.stderr
