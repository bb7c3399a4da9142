"""Long calls through standard clients (issue 31): heartbeat progress for the whole duration of a call, and
jobs that outlive their session, reached from a new session with their job token only.

Real MCP client sessions (the SDK's stdio and streamable-HTTP clients) against ``magpie mcp`` with a test
plugin's ``slow_job`` tool (``magpie_mcp.testing``: a job that sleeps a few seconds).
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from magpie_mcp.context import HEARTBEAT_S
from magpie_mcp.testing import (
    call,
    call_error,
    http_server,
    install_test_plugin,
    processes_mentioning,
    run_session,
    write_workspace,
)
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

MODERN = "2026-07-28"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws"])


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    return install_test_plugin(tmp_path / "site")


class Progress:
    """Progress notifications of one call, with the time each arrived."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.seen: list[tuple[float, float, float | None, str | None]] = []

    async def __call__(self, value: float, total: float | None, message: str | None) -> None:
        self.seen.append((time.monotonic() - self.start, value, total, message))

    def check(self, lasted_s: float) -> None:
        """At least every 5 s from the start to the end, always with a total, always increasing, ending at it."""
        times = [0.0, *(t for t, *_ in self.seen), lasted_s]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert max(gaps) < 5.0, f"a silence of {max(gaps):.1f} s: {self.seen}"
        values = [v for _, v, _, _ in self.seen]
        assert all(b > a for a, b in itertools.pairwise(values)), values
        assert all(total is not None for *_, total, _ in self.seen), self.seen
        assert values[-1] == self.seen[-1][2], "the last notification completes the total"


def test_a_long_call_sends_progress_at_least_every_few_seconds(workspace, plugin_env):
    quiet, stepped = Progress(), Progress()

    async def scenario(s: ClientSession) -> None:
        quiet.start = time.monotonic()
        out = await call(s, "slow_job", {"seconds": 5.5}, progress_callback=quiet)
        quiet.check(time.monotonic() - quiet.start)
        assert out["job"]["state"] == "succeeded"
        # no step messages for 5.5 s: heartbeats say what the job is doing and its time limit
        heartbeats = [m for *_, m in quiet.seen if m and "time limit" in m]
        assert len(heartbeats) >= 5.5 // HEARTBEAT_S - 1, quiet.seen
        stepped.start = time.monotonic()
        await call(s, "slow_job", {"seconds": 3, "steps": 4}, progress_callback=stepped)
        stepped.check(time.monotonic() - stepped.start)
        # steps known: the total is the steps plus writing the report, kept on every later heartbeat
        assert any(m == "[4/4] step" for *_, m in stepped.seen)
        assert {total for *_, total, _ in stepped.seen if total != 1.0} == {5.0}, stepped.seen

    run_session(workspace, scenario, env=plugin_env)


def test_a_job_outlives_its_session_and_only_its_token_reaches_it(workspace, plugin_env):
    with http_server(workspace, env=plugin_env) as url:

        async def session(work: Any) -> Any:
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return await work(s)

        async def start(s: ClientSession) -> dict[str, Any]:
            quick = await call(s, "slow_job", {"seconds": 3, "steps": 2, "wait": False})
            hanging = await call(s, "slow_job", {"seconds": 600, "wait": False})
            return {"quick": quick["job"], "hanging": hanging["job"]}

        async def main() -> dict[str, Any]:
            jobs = await session(start)  # the session ends here (DELETE): detached jobs run on
            quick, hanging = jobs["quick"], jobs["hanging"]
            assert quick["job_token"].startswith("mjt_") and len(quick["job_token"]) > 40

            async def follow_up(s: ClientSession) -> None:
                # a new session: the ids mean nothing here, the tokens do
                assert (await call(s, "job_list"))["jobs"] == []
                assert "in this session" in await call_error(s, "job_status", {"job_id": quick["job_id"]})
                wrong = await call_error(s, "job_status", {"job_id": "mjt_" + "x" * 43})
                assert "no job with this job token" in wrong and quick["job_id"] not in wrong
                status = await call(s, "job_status", {"job_id": quick["job_token"]})
                assert status["job_id"] == quick["job_id"] and status["state"] in ("running", "succeeded")
                progress = Progress()
                done = await call(
                    s, "job_result", {"job_id": quick["job_token"], "wait_s": 60}, progress_callback=progress
                )
                progress.check(time.monotonic() - progress.start)  # heartbeats while job_result waits
                assert done["job"]["state"] == "succeeded" and done["report"]["echo"]["sleep_s"] == 3
                # its resources answer to the token as well (the URIs it returns carry it)
                log = await s.read_resource(done["job"]["log_uri"])
                assert "[progress] [2/2] step" in log.contents[0].text
                cancelled = await call(s, "ray_task_cancel", {"task_id": hanging["job_token"]})
                assert cancelled["state"] == "cancelled"

            await session(follow_up)
            # a sessionless (2026-07-28) client can start a job and come back with its token
            async with Client(streamable_http_client(url), mode=MODERN) as m:
                started = await m.call_tool("slow_job", {"seconds": 60, "wait": False})
                token = started.structured_content["job"]["job_token"]
            async with Client(streamable_http_client(url), mode=MODERN) as m:
                status = await m.call_tool("job_status", {"job_id": token})
                assert status.structured_content["state"] == "running"
                stopped = await m.call_tool("job_cancel", {"job_id": token})
                assert stopped.structured_content["state"] == "cancelled"
            return jobs

        jobs = anyio.run(main)
    assert not processes_mentioning(jobs["hanging"]["job_id"])
