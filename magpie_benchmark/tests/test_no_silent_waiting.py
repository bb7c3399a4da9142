"""Issue 32, no silent waiting: a server that hangs ends the benchmark quickly and says why.

Each case runs a real local TCP server (the fake streaming server on a thread of this process, told to
misbehave) with small timeouts; bounds on elapsed time are generous (a loaded 2-core machine).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.load_flags import load_patch
from magpie_benchmark.loadgen.fake_server import FakeSettings, in_thread
from magpie_benchmark.loadgen.point import Progress
from magpie_benchmark.pipeline import run_benchmark


@pytest.fixture
def hanging() -> Iterator[Any]:
    """``hanging(misbehave, after)``: the fake server misbehaving that way, as a context manager."""

    def start(misbehave: str, after: int = 0) -> Any:
        return in_thread(FakeSettings(ttft_ms=5, itl_ms=20, misbehave=misbehave, misbehave_after=after))  # type: ignore[arg-type]

    yield start


def external(url: str, **load: Any) -> BenchmarkConfig:
    """An external-mode measurement of 4 short requests, one at a time, with small timeouts."""
    settings = {"num_prompts": 4, "max_concurrency": 1, "progress": False, "probe_timeout_s": 1.0, **load}
    return BenchmarkConfig(
        model="fake-model",
        run_mode="external",
        run_kind="measurement",
        base_url=url,
        dataset={"input_len": 8, "output_len": 4},
        load=settings,
    )


def test_a_server_that_never_answers_fails_the_probe_naming_the_url(tmp_path: Path, hanging: Any) -> None:
    with hanging("mute") as url:
        start = time.monotonic()
        report = run_benchmark(external(url), tmp_path)
        took = time.monotonic() - start
    assert took < 10, f"the probe took {took:.1f} s (its timeout is 1 s)"
    assert not report.success and not report.points
    assert any(f"{url}/v1/models did not answer within 1 s" in e for e in report.errors), report.errors


def test_the_cli_exits_within_the_probe_timeout_and_says_so(tmp_path: Path, hanging: Any) -> None:
    """The command of the issue (it printed nothing for 140 s), with ``--probe-timeout 1``."""
    argv = [sys.executable, "-m", "magpie_core", "benchmark", "vllm", "--run-mode", "external", "-m", "M"]
    argv += ["--num-prompts", "4", "--probe-timeout", "1", "-o", str(tmp_path)]
    with hanging("mute") as url:
        start = time.monotonic()
        out = subprocess.run([*argv, "--base-url", url], capture_output=True, text=True, timeout=60, env=os.environ)
        took = time.monotonic() - start
    assert out.returncode == 1, out.stderr[-2000:]
    assert f"{url}/v1/models did not answer within 1 s" in out.stdout + out.stderr
    assert took < 30, f"the command took {took:.1f} s"  # mostly the interpreter's start on a loaded machine


def test_the_users_timeout_bounds_the_probe_too(tmp_path: Path, hanging: Any) -> None:
    """Issue 46: ``--timeout 5`` against a silent server ran 35 s (the probe's own 30 s); and a point with
    ``timeout_seconds: 6`` against a server that streams forever ran 30 s. The timeout given is the bound."""
    with hanging("mute") as url:
        start = time.monotonic()
        config = external(url, probe_timeout_s=30.0).model_copy(update={"timeout_seconds": 2.0})
        report = run_benchmark(config, tmp_path)
        took = time.monotonic() - start
    assert took < 12, f"the probe took {took:.1f} s (the run's timeout is 2 s)"
    assert any(f"{url}/v1/models did not answer within 2 s" in e for e in report.errors), report.errors


def test_a_server_that_lists_models_but_never_answers_a_request_fails_the_probe(tmp_path: Path, hanging: Any) -> None:
    with hanging("stall") as url:  # every stream stops after its first chunk, the probe's included
        report = run_benchmark(external(url), tmp_path)
    assert not report.points
    assert any(f"{url}/v1/completions did not answer a 1-token request within 1 s" in e for e in report.errors)


def test_a_stall_mid_run_stops_the_point_and_keeps_what_finished(tmp_path: Path, hanging: Any) -> None:
    # streamed requests 0 (the probe), 1 and 2 answer; the 3rd measured one stalls after one chunk
    with hanging("stall", after=3) as url:
        start = time.monotonic()
        report = run_benchmark(external(url, stall_timeout_s=1.0, save_requests=True), tmp_path)
        took = time.monotonic() - start
    assert took < 12, f"the stalled run took {took:.1f} s (stall timeout 1 s)"
    (point,) = report.points
    metrics = point["metrics"]
    assert metrics["completed"] == 2 and metrics["failure_reasons"] == {"stalled": 2}, metrics
    assert point["client_checks"]["stalled"] is True
    assert [r["error_kind"] for r in point["requests"]] == [None, None, "stalled", "stalled"]
    assert any("no byte arrived from any of the 1 in-flight request(s) for 1 s" in e for e in report.errors)
    assert report.throughput["completed_requests"] == 2  # the finished requests are the report's numbers


def test_a_stream_that_never_ends_is_cut_at_the_request_deadline(tmp_path: Path, hanging: Any) -> None:
    with hanging("endless", after=1) as url:  # the probe's request ends; every measured one streams forever
        start = time.monotonic()
        cfg = external(url, num_prompts=2, max_concurrency=2, request_deadline_s=1.0, stall_timeout_s=30.0)
        report = run_benchmark(cfg, tmp_path)
        took = time.monotonic() - start
    assert took < 12, f"the endless streams held the run {took:.1f} s (deadline 1 s)"
    metrics = report.points[0]["metrics"]
    assert metrics["completed"] == 0 and metrics["failure_reasons"] == {"deadline": 2}, metrics
    assert any("every request failed" in e for e in report.errors), report.errors


def test_progress_without_a_terminal_is_a_log_line_also_while_nothing_finishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def point() -> None:
        progress = Progress(True, 4, "pt", log_every_s=0.05)  # pytest's stderr is no terminal
        await asyncio.sleep(0.3)
        progress.advance(ok=True)
        progress.advance(ok=False)
        await asyncio.sleep(0.3)
        progress.close()

    with caplog.at_level(logging.INFO, logger="magpie.benchmark.load"):
        asyncio.run(point())
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("pt: 0/4 done after") and "waiting for the first answer" in line for line in lines)
    assert any(line.startswith("pt: 2/4 done (1 failed), ") and "req/s, about" in line for line in lines), lines


def test_every_wait_has_a_flag() -> None:
    patch = load_patch(request_timeout=5, request_deadline=50, probe_timeout=2, stall_timeout=9)
    assert patch["load"] == {
        "request_timeout_s": 5,
        "request_deadline_s": 50,
        "probe_timeout_s": 2,
        "stall_timeout_s": 9,
    }
