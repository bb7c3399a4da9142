"""Test helpers: drive a real ``magpie mcp`` through the MCP SDK's stdio client.

For the tests of the built-in tools and of any plugin's tools::

    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", DATA])

    async def scenario(s):
        out = await call(s, "my_tool", {"x": 1})          # must succeed: its structured content
        msg = await call_error(s, "my_tool", {"x": -1})   # must be a tool error: its text

    run_session(ws, scenario)

The server is started as users start it (``python -m magpie_core -c config.yaml mcp``) with the
workspace as its working directory.

It ships in the package rather than next to the tests (issue 47): docs/mcp.md offers it to plugins for their
own tool tests, other distributions' tests import it (the advice, gpu_nvidia and loop plugins'), so does
``benchmarks/mcp_warm_compare.py``, and the test plugin a server loads in its own process imports
:func:`slow_job` from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic import Field

from magpie_mcp.context import ToolContext

Scenario = Callable[[ClientSession], Awaitable[Any]]


def write_workspace(folder: Path, roots: Sequence[Path]) -> Path:
    """``folder`` with a ``config.yaml``: results under ``folder/results``, allowed roots ``roots``."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(str(r) for r in roots)
    (folder / "config.yaml").write_text(
        f"output:\n  directory: {folder / 'results'}\nmcp:\n  allowed_roots: [{listed}]\n"
    )
    return folder


def add_roots(workspace: Path, *roots: Path) -> None:
    """Allow more roots in ``workspace``'s config."""
    config = workspace / "config.yaml"
    text = config.read_text()
    head, _, listed = text.rpartition("allowed_roots: [")
    config.write_text(f"{head}allowed_roots: [{', '.join(str(r) for r in roots)}, {listed}")


def run_session(
    workspace: Path,
    scenario: Scenario,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    **session_options: Any,
) -> Any:
    """Start ``magpie -c <workspace>/config.yaml mcp [args]`` over stdio, initialize, run ``scenario``; its result.

    ``session_options`` go to the SDK's ``ClientSession`` (``logging_callback=...``). The server's
    stderr goes to ``<workspace>/server.stderr``.
    """
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "magpie_core", "-c", str(workspace / "config.yaml"), "mcp", *args],
        cwd=str(workspace),
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )

    async def main() -> Any:
        with (workspace / "server.stderr").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, **session_options) as session,
            ):
                await session.initialize()
                return await scenario(session)

    return anyio.run(main)


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await session.call_tool(name, args or {}, **kw)
    if result.is_error:
        raise AssertionError(f"{name} failed: {_text(result)}")
    if result.structured_content is None:
        raise AssertionError(f"{name}: no structured content")
    return result.structured_content


async def call_error(session: ClientSession, name: str, args: dict[str, Any]) -> str:
    """Call a tool that must fail as a tool error; return its message."""
    result = await session.call_tool(name, args)
    if not result.is_error:
        raise AssertionError(f"{name} should have failed, got {result.structured_content}")
    return _text(result)


def write_benchmark_report(
    folder: Path, framework: str, req_s: float, ttft: float, top: list[tuple[str, float]]
) -> Path:
    """A small ``benchmark_report.json`` as ``magpie benchmark`` writes it (with a gap analysis)."""
    folder.mkdir(parents=True)
    report = {
        "schema_version": "1.0",
        "mode": "benchmark",
        "success": True,
        "framework": framework,
        "model": "m",
        "timestamp": "2025-01-01T00:00:00+00:00",
        "run_kind": "measurement",
        "workspace_dir": str(folder),
        "throughput": {"request_throughput": req_s, "output_throughput": req_s * 100},
        "latency": {"ttft": {"mean_ms": ttft, "p99_ms": ttft * 2}, "tpot": {"mean_ms": 5.0}},
        "gap_analysis": {
            "gpu_idle_pct": 30.0,
            "launch_bound": True,
            "top_kernels": [{"name": n, "pct_total": p, "calls": 10, "avg_time_us": 3.0} for n, p in top],
        },
        "errors": [],
    }
    path = folder / "benchmark_report.json"
    path.write_text(json.dumps(report))
    return path


def echo_runner(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """A job runner for tests: reports its steps, sleeps ``args["sleep_s"]`` (default 0), echoes ``args``."""
    import time

    steps = int(args.get("steps", 1))
    for i in range(steps):
        emit(f"[{i + 1}/{steps}] step")
    time.sleep(float(args.get("sleep_s", 0)))
    return {"echo": args}, ""


def process_runner(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """A job runner for tests: which process ran it, and whether a fork server was already started there."""
    import os
    import sys

    from magpie_core.measurement.worker_client import fork_server_modules

    print("process_runner on stderr", file=sys.stderr, flush=True)
    return {"pid": os.getpid(), "fork_server": bool(fork_server_modules())}, ""


async def slow_job(
    tool: ToolContext,
    seconds: Annotated[float, Field(ge=0, le=600, description="how long the job sleeps")] = 1.0,
    steps: Annotated[int, Field(ge=0, le=100, description="progress steps it reports first")] = 0,
    wait: Annotated[bool, Field(description="false: return the job (and its token) at once")] = True,
) -> dict[str, Any]:
    """A test tool (installed by :func:`install_test_plugin`): a job that reports ``steps`` steps, then sleeps."""
    job = tool.start_job("slow", {"sleep_s": seconds, "steps": steps}, echo_runner)
    job = await tool.follow(job, wait)
    return {"job": job.info().model_dump(), "report": job.result}


#: the test plugin's module: it registers :func:`slow_job` through the hook, as any plugin does
TEST_PLUGIN = """
from magpie_core import hookimpl
from magpie_mcp.testing import slow_job


@hookimpl
def magpie_register_mcp_tools(register):
    register(slow_job)
"""


def install_test_plugin(site: Path, name: str = "magpie_mcp_test_plugin", source: str = TEST_PLUGIN) -> dict[str, str]:
    """Install a plugin module as a distribution in ``site`` (dist-info with a ``magpie`` entry point); the
    environment a server needs to load it (``PYTHONPATH``)."""
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[magpie]\n{name} = {name}\n")
    (site / f"{name}.py").write_text(source)
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(
    workspace: Path, args: Sequence[str] = (), env: dict[str, str] | None = None, scheme: str = "http"
) -> Iterator[str]:
    """``magpie -c <workspace>/config.yaml mcp --transport streamable-http [args]`` on a free loopback port;
    yields its ``/mcp`` URL once it accepts connections, and stops it afterwards. Its stderr goes to
    ``<workspace>/http.stderr``."""
    port = free_port()
    argv = ["-m", "magpie_core", "-c", str(workspace / "config.yaml"), "mcp", "--transport", "streamable-http"]
    with (workspace / "http.stderr").open("w") as errlog:
        server = subprocess.Popen(
            [sys.executable, *argv, "--port", str(port), *args],
            cwd=workspace,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.poll() is None:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield f"{scheme}://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


def processes_mentioning(text: str) -> list[int]:
    """Ids of live processes whose command line contains ``text`` (to prove nothing was left behind)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def environment_runner(args: dict[str, Any], emit: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """A job runner for tests: the names of the environment variables the job (and its kernels) see."""
    return {"env": sorted(os.environ)}, ""
