"""The load generator against a real local streaming server (magpie_benchmark.loadgen.fake_server, in a thread)."""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import numpy as np
import pytest
from magpie_benchmark.loadgen import LoadSpec, SampleRequest, arrival_offsets, compute_metrics, run_load
from magpie_benchmark.loadgen.client import SseParser, build_payload
from magpie_benchmark.loadgen.fake_server import FakeSettings, in_thread
from magpie_benchmark.serving.server import free_port


@pytest.fixture(scope="module")
def fake():
    settings = FakeSettings(ttft_ms=30, itl_ms=5)
    with in_thread(settings) as url:
        yield url, settings


def reqs(n: int, out: int = 8) -> list[SampleRequest]:
    return [SampleRequest(prompt=f"prompt {i}", prompt_len=2, expected_output_len=out) for i in range(n)]


def test_streaming_timings_and_usage(fake):
    url, settings = fake
    settings.records.clear()
    result = run_load(LoadSpec(base_url=url, model="fake-model", requests=reqs(6), max_concurrency=3))
    assert all(r.success for r in result.results)
    assert result.clock in ("kernel", "loop_wake")
    for r in result.results:
        assert r.output_tokens == 8 and r.chunks == 8 and len(r.itl) == 7
        assert r.ttft >= 0.030 - 1e-3
        assert r.latency == pytest.approx(r.ttft + sum(r.itl))
    metrics = compute_metrics(result.results, result.duration_s)
    assert metrics["completed"] == 6 and metrics["token_count_methods"] == {"usage": 6}
    assert metrics["total_output_tokens"] == 48
    # per-request ITL against the server's own write times
    by_key = {rec["key"]: rec for rec in settings.records}
    for spec_req, r in zip(reqs(6), result.results, strict=True):
        sends = by_key[spec_req.prompt]["sends"]
        for k, gap in enumerate(r.itl, 1):
            assert abs(gap - (sends[k] - sends[k - 1])) < 0.05


def test_chat_endpoint(fake):
    url, _ = fake
    result = run_load(LoadSpec(base_url=url, model="fake-model", requests=reqs(2, 4), endpoint="chat"))
    assert [r.success for r in result.results] == [True, True]
    assert result.results[0].generated_text == " tok" * 4


def test_warmup_excluded_and_concurrency_respected(fake):
    url, settings = fake
    settings.records.clear()
    result = run_load(
        LoadSpec(base_url=url, model="fake-model", requests=reqs(8, 4), max_concurrency=2, warmup_requests=3)
    )
    assert len(settings.records) == 11  # 3 warm-up + 8 measured
    assert len(result.results) == 8
    # never more than 2 streams open at once: sort the measured request intervals
    spans = sorted((r.start_time, r.start_time + r.latency) for r in result.results)
    for i, (start, _) in enumerate(spans):
        assert sum(1 for s, e in spans[:i] if e > start + 1e-4) <= 1


def test_failures_are_counted_with_reasons(fake):
    url, _ = fake
    spec = LoadSpec(base_url=url, model="fake-model", requests=reqs(3, 4), extra_body={"fake_status": 503})
    result = run_load(spec)
    metrics = compute_metrics(result.results, result.duration_s)
    assert metrics["failed"] == 3 and metrics["failure_reasons"] == {"http_503": 3}
    spec = LoadSpec(base_url=url, model="fake-model", requests=reqs(2, 4), extra_body={"fake_fail_after": 0})
    metrics = compute_metrics(run_load(spec).results, 1.0)
    assert metrics["failed"] == 2 and metrics["completed"] == 0
    dead = LoadSpec(base_url=f"http://127.0.0.1:{free_port()}", model="m", requests=reqs(1))
    metrics = compute_metrics(run_load(dead).results, 1.0)
    assert metrics["failure_reasons"] == {"connection": 1}
    # a server that stops sending: the read timeout (the client's watchdog) fails the request, the next
    # request on the same client still works
    slow = LoadSpec(
        base_url=url, model="fake-model", requests=reqs(2, 2), extra_body={"fake_itl_ms": 5000},
        request_timeout_s=0.8, max_concurrency=1,
    )  # fmt: skip
    t = time.perf_counter()
    results = run_load(slow).results
    elapsed = time.perf_counter() - t
    assert [r.error_kind for r in results] == ["timeout", "timeout"] and all(r.ttft > 0 for r in results)
    assert 2 * 0.8 <= elapsed < 2 * (0.8 + 0.2) + 1.5  # each waits the timeout, plus one watchdog period


def test_request_rate_is_kept(fake):
    url, _ = fake
    result = run_load(LoadSpec(base_url=url, model="fake-model", requests=reqs(20, 2), request_rate=50.0, seed=3))
    # timing itself is checked in benchmarks/, not here: only that the checks are filled in
    assert result.target_rate == 50.0 and result.achieved_rate is not None and result.achieved_rate > 0
    assert len(result.schedule_lag_s) == 20 and min(result.schedule_lag_s) >= 0


def test_arrival_offsets_gamma_and_inf():
    assert arrival_offsets(4, math.inf, 1.0, 0) == [0.0] * 4
    offs = arrival_offsets(1000, 10.0, 1.0, seed=1)
    assert offs[-1] == pytest.approx(100.0)  # rescaled: the n-th arrival at n / rate
    gaps = np.diff([0.0, *offs])
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.1)  # exponential: CV 1
    bursty = np.diff([0.0, *arrival_offsets(1000, 10.0, 0.25, seed=1)])
    assert np.std(bursty) / np.mean(bursty) == pytest.approx(2.0, abs=0.3)  # gamma shape k: CV 1/sqrt(k)
    assert np.allclose(np.diff(arrival_offsets(5, 2.0, math.inf, 0)), 0.5)


def test_sse_parser_handles_split_and_crlf():
    p = SseParser()
    assert p.feed(b'data: {"a"') == []
    assert p.feed(b": 1}\r\n\r\ndata: [DO") == [b'{"a": 1}']
    assert p.feed(b"NE]\r") == []
    assert p.feed(b"\n\r\n: ping\n\ndata:x\ndata: y\n\nevent: e\n\n") == [b"[DONE]", b"x\ny"]
    assert p.feed(b"data: tail") == [] and p.flush() == [b"tail"]


def test_payloads():
    req = SampleRequest(prompt="hi", prompt_len=1, expected_output_len=7)
    p = build_payload("completions", "m", req, ignore_eos=True)
    assert p["prompt"] == "hi" and p["max_tokens"] == 7 and p["stream_options"] == {"include_usage": True}
    assert p["ignore_eos"] is True
    c = build_payload("chat", "m", req, ignore_eos=False, extra_body={"top_k": 1})
    assert c["messages"] == [{"role": "user", "content": "hi"}] and c["top_k"] == 1 and "ignore_eos" not in c


def test_health_endpoint(fake):
    url, _ = fake
    assert httpx.get(url + "/health").status_code == 200


class _Pieces:
    """Stands in for a socket connection: hands out the given byte pieces with increasing stamps."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = [(float(i), p) for i, p in enumerate(pieces)]

    async def next_piece(self, timeout: float | None) -> tuple[float, bytes] | None:
        return self.pieces.pop(0) if self.pieces else None


def _read_split(raw: bytes, cut: int) -> tuple[int, dict[str, str], list[tuple[float, bytes]], bool]:
    from magpie_benchmark.loadgen.http import _LeanResponse

    async def go() -> tuple[int, dict[str, str], list[tuple[float, bytes]], bool]:
        resp = _LeanResponse(_Pieces([raw[:cut], raw[cut:]] if cut else [raw]), None)  # type: ignore[arg-type]
        await resp.read_head()
        got = [item async for item in resp.chunks()]
        return resp.status, resp.headers, got, resp.complete

    return asyncio.run(go())


def test_lean_http_response_chunked_split_anywhere():
    body = b"data: one\n\n" * 3 + b"data: [DONE]\n\n"
    chunks = [body[:11], body[11:33], body[33:]]
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n"
        + b"".join(f"{len(c):x};ext=1\r\n".encode() + c + b"\r\n" for c in chunks)
        + b"0\r\n\r\n"
    )
    for cut in range(len(raw)):
        status, headers, got, complete = _read_split(raw, cut)
        assert status == 200 and headers["content-type"] == "text/event-stream"
        assert b"".join(d for _, d in got) == body and complete
        stamps = [stamp for stamp, _ in got]
        assert stamps == sorted(stamps)
    # data is dated by the read that completed it: a chunk cut in two arrives with the second read
    last = raw.index(b"data: [DONE]")
    _, _, got, _ = _read_split(raw, last + 3)
    assert got == [(0.0, body[:33]), (1.0, b"data: [DONE]\n\n")]


def test_lean_http_response_content_length_and_errors():
    from magpie_benchmark.loadgen.http import ClientError

    status, _, got, complete = _read_split(b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!", 20)
    assert status == 404 and b"".join(d for _, d in got) == b"nope!" and complete
    with pytest.raises(ClientError, match="short of its Content-Length"):
        _read_split(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0)
    with pytest.raises(ClientError, match="malformed status line"):
        _read_split(b"SSH-2.0-OpenSSH\r\n\r\n", 0)
    with pytest.raises(ClientError, match="middle of a chunked body"):
        _read_split(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 0)
