"""``magpie mcp`` itself: the command, the tool list, the transports, and tools from plugins.

Real MCP client sessions (the official SDK's clients) against the server as users start it,
and in-process sessions against :func:`magpie_mcp.server.build_server` where a test registers
its own plugin.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
import typer
from magpie_mcp import ToolContext, plugin
from magpie_mcp.server import build_server
from magpie_mcp.testing import call, call_error, install_test_plugin, run_session, write_workspace
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from magpie_core.config.defaults import FrameworkConfig
from magpie_core.config.loader import ConfigError, ConfigErrors, load_config
from magpie_core.plugins import PluginManager
from tests.conftest import DATA, ROOT

KERNELS = DATA / "kernels"

#: the tools of this distribution (magpie-advice adds discover_kernels, suggest_optimizations,
#: compare_benchmark_reports)
BUILT_IN_TOOLS = {
    "hardware_spec",
    "list_plugins",
    "analyze",
    "compare",
    "create_kernel_config",
    "benchmark",
    "gap_analysis",
    "find_kernel_sources",
    "list_benchmark_results",
    "get_benchmark_result",
    "job_status",
    "job_result",
    "job_cancel",
    "job_list",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD; allowed roots: this folder and tests/data/kernels."""
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])


def test_tools_listed_and_machine_tools(workspace):
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) >= BUILT_IN_TOOLS
        for name in BUILT_IN_TOOLS:
            assert tools[name].output_schema, f"{name} has no output schema"
            assert tools[name].description
            assert "tool" not in tools[name].input_schema.get("properties", {}), "the ToolContext is not an input"
        # typed inputs: commands are argv lists in the schema, never free strings
        assert "compile_command" in str(tools["analyze"].input_schema)

        hw = await call(s, "hardware_spec")
        assert hw["gpu_count"] == len(hw["gpus"]) and hw["host"]["cpu_count"] >= 1
        assert any(t["name"] == "triton" for t in hw["tools"])
        assert "no GPU with index 99" in await call_error(s, "hardware_spec", {"device_id": 99})

        plugins = await call(s, "list_plugins")
        assert "pytorch" in plugins["components"]["kernel_backend"]
        assert {"local", "ray"} <= set(plugins["components"]["environment"])
        assert set(plugins["components"]["mcp_tool"]) >= BUILT_IN_TOOLS
        assert {p["name"]: p["status"] for p in plugins["plugins"]}["pytorch"] == "loaded"

        # bad input: a schema violation
        assert "device_id" in await call_error(s, "hardware_spec", {"device_id": "zero"})

    run_session(workspace, scenario)


def test_mcp_command_and_config_block_come_from_the_plugin(run_magpie, tmp_path):
    cli = typer.Typer()
    plugin.magpie_register_commands(cli=cli)
    assert [c.name for c in cli.registered_commands] == ["mcp"]

    bad = run_magpie(["mcp", "--transport", "carrier-pigeon"])
    assert bad.returncode == 2 and "unknown transport 'carrier-pigeon'" in bad.stderr

    config = tmp_path / "config.yaml"
    config.write_text("mcp:\n  allowed_rootz: [/tmp]\n")
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        load_config(FrameworkConfig, config)
    assert "allowed_rootz" in str(err.value) and f"{config}:2" in str(err.value)
    config.write_text(f"mcp:\n  allowed_roots: [{tmp_path}]\n")
    assert ToolContext(load_config(FrameworkConfig, config), tmp_path).policy.roots == (tmp_path.resolve(),)


DEMO_PLUGIN = """
from magpie_core import hookimpl


def kernel_flops(m: int, n: int, k: int) -> dict[str, int]:
    \"\"\"FLOPs of an m x k by k x n matrix product.\"\"\"
    if min(m, n, k) <= 0:
        raise ValueError('dimensions must be positive')
    return {'flops': 2 * m * n * k}


@hookimpl
def magpie_register_mcp_tools(register):
    register(kernel_flops)
"""


def test_plugin_contributed_tool(workspace, tmp_path):
    """A plugin installed as a distribution (dist-info with an entry point) adds a tool through the hook."""
    env = install_test_plugin(tmp_path / "site", "magpie_mcp_demo", DEMO_PLUGIN)

    async def scenario(s: ClientSession) -> None:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert "kernel_flops" in tools
        out = await call(s, "kernel_flops", {"m": 2, "n": 3, "k": 4})
        assert out == {"flops": 48}
        assert "dimensions must be positive" in await call_error(s, "kernel_flops", {"m": 0, "n": 3, "k": 4})

    run_session(workspace, scenario, env={"PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], str(ROOT)])})


PROBE_PLUGIN = '''
"""A test plugin whose tool asks for the server's ToolContext, as a built-in does."""

from magpie_core import hookimpl
from magpie_mcp import ToolContext

SEEN = []


def run_probe(args, emit):
    emit("probing")
    return {"echo": args["value"]}, ""


async def context_probe(tool: ToolContext, value: int = 1) -> dict[str, object]:
    """Record the context; start a job of its own; say where runs go."""
    SEEN.append(tool)
    job = await tool.follow(tool.start_job("probe", {"value": value}, run_probe), wait=False)
    return {"job_id": job.id, "output_dir": str(tool.output_dir)}


@hookimpl
def magpie_register_mcp_tools(register):
    register(context_probe)
'''


def test_a_plugin_tool_gets_the_same_context_as_the_built_ins(tmp_path, monkeypatch):
    (tmp_path / "magpie_probe_plugin.py").write_text(PROBE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))  # jobs
    probe = importlib.import_module("magpie_probe_plugin")
    manager = PluginManager(plugins=[("probe", probe)])
    framework = FrameworkConfig.model_validate(
        {"output": {"directory": str(tmp_path / "runs")}, "mcp": {"allowed_roots": [str(tmp_path)]}}
    )
    server, context = build_server(framework, tmp_path, manager=manager)

    async def scenario() -> tuple[dict, dict, dict, dict]:
        async with Client(server) as client:
            probed = (await client.call_tool("context_probe", {"value": 7})).structured_content
            # the built-ins see the job the plugin's tool started: they hold the same context
            status = (await client.call_tool("job_status", {"job_id": probed["job_id"]})).structured_content
            done = (await client.call_tool("job_result", {"job_id": probed["job_id"], "wait_s": 60})).structured_content
            listed = (await client.call_tool("list_benchmark_results", {})).structured_content
            return probed, status, done, listed

    try:
        probed, status, done, listed = anyio.run(scenario)
    finally:
        context.job_manager.shutdown()
    assert len(probe.SEEN) == 1 and probe.SEEN[0] is context
    assert status["kind"] == "probe" and done["report"] == {"echo": 7}, done
    assert probed["output_dir"] == listed["root"] == str(tmp_path / "runs")


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp writes them) of sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                found.append(local.rsplit(":", 1)[0])
    return found


def test_streamable_http_binds_loopback_by_default(workspace):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = ["-m", "magpie_core", "-c", str(workspace / "config.yaml"), "mcp", "--transport", "streamable-http"]
    server = subprocess.Popen(
        [sys.executable, *argv, "--port", str(port)],
        cwd=workspace,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _listening(port) and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.2)
        assert _listening(port) == ["0100007F"], "streamable-http must listen on 127.0.0.1 only"

        async def main() -> set[str]:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

        assert anyio.run(main) >= BUILT_IN_TOOLS
    finally:
        server.terminate()
        server.wait(timeout=30)
