"""The gate's reading of lm-eval's results JSON and its verdict.

``data/lm_eval_results_tiny_qa.json`` is a real file: lm-eval 0.4.13 (local-completions) ran the
bundled ``tiny_qa`` task against the CPU vLLM server with the tests' tiny random Llama (which scores 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from magpie_quality_gate.config import Bound
from magpie_quality_gate.results import ResultsError, find_results, parse_results, verdict

DATA = Path(__file__).parent / "data"
REAL = DATA / "lm_eval_results_tiny_qa.json"


def test_parses_a_real_results_file() -> None:
    parsed = parse_results(REAL)
    assert parsed["lm_eval_version"] == "0.4.13"
    task = parsed["tasks"]["magpie_tiny_qa"]
    assert task["metrics"] == {"exact_match,none": 0.0}  # sample_len and the name/alias strings are not metrics
    assert task["stderr"] == {"exact_match,none": 0.0}
    assert (task["n_samples"], task["n_shot"], task["version"]) == (4, 0, 1.0)


def test_thresholds_name_a_metric_with_or_without_its_filter() -> None:
    parsed = parse_results(REAL)
    ok = verdict(parsed, ["magpie_tiny_qa"], {"magpie_tiny_qa": {"exact_match": Bound(min=0.0)}}, None)
    assert ok["passed"] and ok["threshold_checks"][0]["metric"] == "exact_match,none"
    assert ok["tasks"]["magpie_tiny_qa"]["primary_metric"] == "exact_match,none"
    bad = verdict(parsed, ["magpie_tiny_qa"], {"magpie_tiny_qa": {"exact_match,none": Bound(min=0.5)}}, None)
    assert not bad["passed"] and bad["problems"] == ["magpie_tiny_qa exact_match,none 0 < 0.5"]
    above = verdict(parsed, ["magpie_tiny_qa"], {"magpie_tiny_qa": {"exact_match": Bound(max=-1)}}, None)
    assert not above["passed"] and "0 > -1" in above["problems"][0]


def test_without_thresholds_the_gate_asks_for_evidence_of_every_task() -> None:
    parsed = parse_results(REAL)
    assert verdict(parsed, ["magpie_tiny_qa"], {}, None)["passed"]  # AMD Magpie's meaning: metrics came back
    missing = verdict(parsed, ["magpie_tiny_qa", "gsm8k"], {}, None)
    assert not missing["passed"] and missing["problems"] == ["gsm8k: not in lm-eval's results"]


def test_a_threshold_on_an_unknown_metric_or_task_fails_naming_it() -> None:
    parsed = parse_results(REAL)
    out = verdict(parsed, ["magpie_tiny_qa"], {"magpie_tiny_qa": {"acc": Bound(min=0)}, "mmlu": {"acc": 0}}, None)
    assert not out["passed"]
    assert any("no metric 'acc'" in p and "exact_match,none" in p for p in out["problems"])
    assert any(p.startswith("mmlu: has a threshold") for p in out["problems"])


def test_primary_metric_prefers_the_configured_one(tmp_path: Path) -> None:
    data = json.loads(REAL.read_text())
    data["results"]["magpie_tiny_qa"]["acc,none"] = 0.25
    path = tmp_path / "results_x.json"
    path.write_text(json.dumps(data))
    parsed = parse_results(path)
    assert verdict(parsed, [], {}, "acc")["tasks"]["magpie_tiny_qa"]["value"] == 0.25
    assert verdict(parsed, [], {}, None)["tasks"]["magpie_tiny_qa"]["primary_metric"] == "exact_match,none"


def test_bad_or_missing_results_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no results"):
        find_results(tmp_path)
    (tmp_path / "m").mkdir()
    bad = tmp_path / "m" / "results_1.json"
    bad.write_text("{not json")
    assert find_results(tmp_path) == bad
    with pytest.raises(ResultsError, match="not readable as JSON"):
        parse_results(bad)
    bad.write_text('{"configs": {}}')
    with pytest.raises(ResultsError, match="no 'results' object"):
        parse_results(bad)
