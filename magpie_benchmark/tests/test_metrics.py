"""Metric definitions checked against values computed by hand."""

from __future__ import annotations

import pytest
from magpie_benchmark.loadgen.client import RequestResult
from magpie_benchmark.loadgen.metrics import compute_metrics, summarize


def ok(ttft: float, itl: list[float], out: int | None, prompt: int = 10, chunks: int | None = None) -> RequestResult:
    return RequestResult(
        success=True,
        prompt_len=prompt,
        output_tokens=out,
        ttft=ttft,
        itl=itl,
        latency=ttft + sum(itl),
        chunks=chunks if chunks is not None else len(itl) + 1,
    )


def test_hand_computed():
    a = ok(0.100, [0.010, 0.020, 0.030], 4)  # e2el 0.160, tpot (0.160-0.100)/3 = 0.020
    b = ok(0.300, [0.050], 2, prompt=20)  # e2el 0.350, tpot 0.050
    c = ok(0.200, [], 1)  # one token: no TPOT
    failed = RequestResult(success=False, error="HTTP 500: x", error_kind="http_500")
    m = compute_metrics([a, b, c, failed], duration_s=2.0, slo_ms={"ttft_ms": 250, "tpot_ms": 30})
    assert m["completed"] == 3 and m["failed"] == 1 and m["failure_reasons"] == {"http_500": 1}
    assert m["total_input_tokens"] == 40 and m["total_output_tokens"] == 7
    assert m["request_throughput"] == pytest.approx(1.5)
    assert m["output_throughput"] == pytest.approx(3.5)
    assert m["total_token_throughput"] == pytest.approx(23.5)
    assert m["ttft"]["mean_ms"] == pytest.approx(200.0)
    assert m["ttft"]["median_ms"] == pytest.approx(200.0)
    assert m["ttft"]["std_ms"] == pytest.approx(81.6496580927726)  # population std of 100, 300, 200
    assert m["tpot"]["mean_ms"] == pytest.approx(35.0) and m["tpot"]["count"] == 2
    assert m["itl"]["mean_ms"] == pytest.approx(27.5) and m["itl"]["count"] == 4
    assert m["itl"]["p99_ms"] == pytest.approx(30 + 0.97 * 20)  # linear interpolation between 30 and 50
    assert m["e2el"]["max_ms"] == pytest.approx(350.0)
    # goodput: a (ttft 100, tpot 20) and c (ttft 200, tpot counted as 0) meet both SLOs; b misses ttft
    assert m["request_goodput"] == pytest.approx(1.0)


def test_token_count_fallbacks():
    class Tok:
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return list(range(len(text.split())))

    r = ok(0.1, [0.1, 0.1], None, chunks=3)
    r.generated_text = "a b c d e"
    assert compute_metrics([r], 1.0, tokenizer=Tok())["token_count_methods"] == {"tokenizer": 1}
    assert compute_metrics([r], 1.0, tokenizer=Tok())["total_output_tokens"] == 5
    m = compute_metrics([r], 1.0)
    assert m["token_count_methods"] == {"chunks": 1} and m["total_output_tokens"] == 3


def test_empty_and_percentiles():
    assert summarize([])["mean_ms"] == 0.0
    s = summarize([0.001 * i for i in range(1, 101)])
    assert s["p90_ms"] == pytest.approx(90.1) and s["p95_ms"] == pytest.approx(95.05) and s["median_ms"] == 50.5
    m = compute_metrics([], 1.0)
    assert m["completed"] == 0 and m["request_goodput"] is None
