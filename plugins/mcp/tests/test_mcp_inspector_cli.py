"""The official MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``, pinned in scripts/setup_inspector.sh,
installed by ``make inspector`` into ./.npm-inspector) against a real ``magpie mcp``: the standard client issue 31
was checked with, over stdio (the Inspector starts the server) and streamable HTTP with a bearer token.

Every Inspector CLI call is a new MCP session, so a ``wait: false`` job is reached from a second call only
through its job token: the scenario of issue 31 that these tests replay. Skipped only when node or the installed
Inspector is missing (``make inspector`` says why it did not install it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from magpie_mcp.server import tool_annotations
from magpie_mcp.testing import http_server, install_test_plugin, processes_mentioning, write_workspace

from magpie_core.plugins import get_plugin_manager

REPO = Path(__file__).resolve().parents[3]
INSPECTOR = REPO / ".npm-inspector" / "node_modules" / ".bin" / "mcp-inspector"
# a throwaway token: only this test's server (on a free loopback port, for the test's duration) accepts it
TOKEN = "throwaway-inspector-token-0123456789"
# the Inspector CLI's exit codes (its EXIT_CODES): a tool answering isError, a server refusing the credentials
TOOL_ERROR, AUTH_REQUIRED = 5, 3
HINTS = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}


@dataclass
class Answer:
    """One Inspector CLI call: its exit code, the result (stdout, ``--format json``), its error envelope (stderr),
    and the end of its stderr (so that a failed assertion on an answer shows what the Inspector said)."""

    rc: int
    result: dict[str, Any]
    error: dict[str, Any]
    stderr: str

    @property
    def text(self) -> str:
        return " ".join(c.get("text", "") for c in self.result.get("content", []))


def _last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (stderr mixes the Inspector's notices with its envelope)."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


class Inspector:
    """Runs ``mcp-inspector --cli --format json ...`` with a home of its own: the Inspector keeps a catalog and
    secrets under ``~/.mcp-inspector``, which must not be the user's (and the memory store writes no secrets)."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory", "NO_COLOR": "1"}

    def __call__(self, *args: str) -> Answer:
        proc = subprocess.run(
            [str(INSPECTOR), "--cli", "--format", "json", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        try:
            out = json.loads(proc.stdout) if proc.stdout.strip() else {}
        except json.JSONDecodeError:  # not the CLI's JSON (a crash, a changed interface): show what it said
            raise AssertionError(
                f"Inspector exit {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            ) from None
        error = _last_json(proc.stderr).get("error", {})
        return Answer(proc.returncode, out.get("result", {}), error, proc.stderr[-2000:])


@pytest.fixture
def inspector(tmp_path: Path) -> Inspector:
    if shutil.which("node") is None:
        pytest.skip("no node on PATH: the MCP Inspector CLI (npm) cannot run; install Node.js and run make inspector")
    if not INSPECTOR.exists():
        pytest.skip(f"the MCP Inspector is not installed in {INSPECTOR.parents[2]}: run make inspector (needs npm)")
    return Inspector(tmp_path / "home")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws"])


def _ok(answer: Answer) -> dict[str, Any]:
    """The result of a call that must succeed."""
    assert answer.rc == 0 and not answer.result.get("isError"), answer
    return answer.result


def _tools(answer: Answer) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in _ok(answer)["tools"]}


def test_stdio_tools_metadata_a_call_and_a_refusal(inspector: Inspector, workspace: Path, tmp_path: Path) -> None:
    # the Inspector starts the server as a client configuration would (with only its default environment:
    # PATH, HOME, ...; hence the venv's interpreter); `--` keeps magpie's options from the Inspector's parser
    config = str(workspace / "config.yaml")
    magpie = [sys.executable, "-m", "magpie_core", "-c", config, "mcp"]

    def stdio(*args: str) -> Answer:
        return inspector(*args, "--cwd", str(workspace), "--", *magpie)

    # --strict: the Inspector's own check that the tool schemas are portable (exit 6 on an error-severity problem)
    listed = _tools(stdio("--method", "tools/list", "--strict"))
    registered = get_plugin_manager().components("mcp_tool")
    assert set(listed) == set(registered) and {"analyze", "compare", "gap_analysis", "job_result"} <= set(listed)
    for name, fn in registered.items():
        # what a client shows: each tool's title and the four behaviour hints magpie declares, plus output schema
        title, hints = tool_annotations(fn, name)
        assert listed[name]["title"] == title, name
        assert listed[name]["annotations"] == hints.model_dump(by_alias=True, exclude_none=True), name
        assert set(listed[name]["annotations"]) >= HINTS, name
        assert listed[name]["outputSchema"]["type"] == "object", name
    assert listed["analyze"]["title"] == "Analyze kernels"

    call = ["--method", "tools/call", "--tool-name"]
    plugins = _ok(stdio(*call, "list_plugins"))["structuredContent"]["plugins"]
    assert "magpie-mcp" in {p["distribution"] for p in plugins}

    outside = tmp_path / "outside" / "kernels.yaml"
    outside.parent.mkdir()
    outside.write_text("kernels:\n  - id: k\n    entry: k.py:run\n")
    refused = stdio(*call, "analyze", "--tool-arg", f"kernel_config={outside}")
    # a policy refusal is a tool result with isError (the Inspector exits 5), saying what and how to allow it
    assert refused.rc == TOOL_ERROR and refused.result["isError"] is True, refused
    assert f"{outside} is outside the allowed workspace roots" in refused.text and "--root" in refused.text, refused
    assert refused.error["code"] == "tool_is_error", refused
    assert not (workspace / "results" / "mcp_jobs").exists(), "a refused call started a job"
    # each Inspector call stopped the server it started (the server's command line names its config)
    deadline = time.monotonic() + 10
    while (left := processes_mentioning(config)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"servers outlived their Inspector calls: {left}"


def test_http_bearer_token_and_a_job_reached_from_a_second_call(inspector: Inspector, workspace: Path) -> None:
    token_file = workspace / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)  # the server refuses a token file others can read
    plugin_env = install_test_plugin(workspace.parent / "site")  # slow_job: a job that sleeps, no GPU, no kernel
    with http_server(workspace, args=["--auth-token-file", str(token_file)], env=plugin_env) as url:
        # the token travels in an Inspector config file (mode 600), never on its command line
        configs = {}
        for name, headers in (("with_token", {"Authorization": f"Bearer {TOKEN}"}), ("without_token", {})):
            config = workspace / f"{name}.json"
            config.touch(mode=0o600)
            entry = {"type": "streamable-http", "url": url, "headers": headers}
            config.write_text(json.dumps({"mcpServers": {"magpie": entry}}))
            configs[name] = ["--config", str(config), "--server", "magpie"]

        # --stored-auth-only: a 401 ends the call instead of starting the Inspector's interactive OAuth login
        denied = inspector(*configs["without_token"], "--stored-auth-only", "--method", "tools/list")
        assert denied.rc == AUTH_REQUIRED and denied.error["code"] == "auth_required", denied
        assert "slow_job" in _tools(inspector(*configs["with_token"], "--method", "tools/list"))

        call = [*configs["with_token"], "--method", "tools/call", "--tool-name"]
        job = _ok(inspector(*call, "slow_job", "--tool-arg", "seconds=1", "wait=false"))["structuredContent"]["job"]
        assert job["state"] in ("queued", "running") and job["job_token"].startswith("mjt_"), job
        # a second Inspector call is a new session: the job's id means nothing there, its token does (a test
        # job's token on the Inspector's command line, the only way its CLI takes tool arguments)
        by_id = inspector(*call, "job_status", "--tool-arg", f"job_id={job['job_id']}")
        assert by_id.rc == TOOL_ERROR and "in this session" in by_id.text, by_id
        done = _ok(inspector(*call, "job_result", "--tool-arg", f"job_id={job['job_token']}", "wait_s=60"))
        result = done["structuredContent"]
        assert result["job"]["job_id"] == job["job_id"] and result["job"]["state"] == "succeeded", result
        assert result["report"]["echo"]["sleep_s"] == 1, result
