"""No process outlives an MCP job or the MCP server (issue 16, item 6), through a real MCP client session.

The server gets a marker in its environment; every process it starts (job processes, kernel workers in
their own sessions) inherits it, so ``/proc`` shows whether anything survived.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import anyio
import pytest
from magpie_mcp.testing import call, call_error, run_session, write_workspace
from mcp import ClientSession

from tests.conftest import DATA
from tests.helpers.leftovers import assert_none_left, marked_processes

KERNELS = DATA / "kernels"
HANGS = {"id": "hangs", "entry": "faulty.py:hangs", "reference": "faulty.py:reference"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])


def test_absurd_timeouts_and_a_hanging_kernel_leave_no_process(workspace: Path) -> None:
    marker = f"mcp-orphans-{uuid.uuid4().hex}"

    async def scenario(s: ClientSession) -> None:
        for absurd in (1e9, 1e12):  # once an OverflowError that left the worker running with parent PID 1
            msg = await call_error(
                s,
                "analyze",
                {"kernels": [HANGS], "config_dir": str(KERNELS), "correctness": {"timeout_seconds": absurd}},
            )
            assert "timeout_seconds" in msg
        started = await call(
            s,
            "analyze",
            {
                "kernels": [HANGS],
                "config_dir": str(KERNELS),
                "correctness": {"timeout_seconds": 3600},  # the server's maximum: the kernel hangs far longer
                "measure_performance": False,
                "wait": False,
            },
        )
        assert started["job"]["state"] == "running"
        deadline = time.monotonic() + 90
        while len(marked_processes(marker)) < 3 and time.monotonic() < deadline:  # server, job process, kernel worker
            await anyio.sleep(0.2)
        assert len(marked_processes(marker)) >= 3, "the kernel worker never started"
        # the session ends here with the job still running: the server must stop it, and itself

    run_session(workspace, scenario, env={"MAGPIE_TEST_MARKER": marker})
    assert_none_left(marker, wait_s=20)  # the server, its job process and the kernel worker
