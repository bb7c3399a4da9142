"""``magpie mcp`` through a real MCP client session over stdio (the official SDK's client).

One server process per session, started as users start it (``python -m
magpie_core -c config.yaml mcp``) with allowed roots = a temp workspace and
the kernels in tests/data. Kernels are small CPU PyTorch functions with tiny
timing budgets.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'magpie-core[mcp]')")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from .conftest import DATA, ROOT  # noqa: E402

KERNELS = DATA / "kernels"
TINY = {"budget_seconds": 0.5, "min_samples": 5, "warmup_ms": 5, "timeout_seconds": 120, "rounds": 1}

Scenario = Callable[[ClientSession], Awaitable[Any]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD; allowed roots: this folder and tests/data/kernels."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.yaml").write_text(
        f"output:\n  directory: {ws / 'results'}\nmcp:\n  allowed_roots: [{ws}, {KERNELS}]\n"
    )
    return ws


def run_session(workspace: Path, scenario: Scenario, env: dict[str, str] | None = None) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "magpie_core", "-c", str(workspace / "config.yaml"), "mcp"],
        cwd=str(workspace),
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )

    async def main() -> Any:
        with (workspace / "server.stderr").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await scenario(session)

    return anyio.run(main)


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await session.call_tool(name, args or {}, **kw)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{name} failed: {text}"
    assert result.structured_content is not None, f"{name}: no structured content"
    return result.structured_content


async def call_error(session: ClientSession, name: str, args: dict[str, Any]) -> str:
    """Call a tool that must fail as a tool error; return its message."""
    result = await session.call_tool(name, args)
    assert result.is_error, f"{name} should have failed, got {result.structured_content}"
    return " ".join(getattr(c, "text", "") for c in result.content)


BUILT_IN_TOOLS = {
    "hardware_spec",
    "list_plugins",
    "analyze",
    "compare",
    "create_kernel_config",
    "discover_kernels",
    "suggest_optimizations",
    "benchmark",
    "gap_analysis",
    "find_kernel_sources",
    "list_benchmark_results",
    "get_benchmark_result",
    "compare_benchmark_reports",
    "job_status",
    "job_result",
    "job_cancel",
    "job_list",
}


def test_tools_listed_and_machine_tools(workspace):
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) >= BUILT_IN_TOOLS
        for name in BUILT_IN_TOOLS:
            assert tools[name].output_schema, f"{name} has no output schema"
            assert tools[name].description
        # typed inputs: commands are argv lists in the schema, never free strings
        assert "compile_command" in json.dumps(tools["analyze"].input_schema)

        hw = await call(s, "hardware_spec")
        assert hw["gpu_count"] == len(hw["gpus"]) and hw["host"]["cpu_count"] >= 1
        assert any(t["name"] == "triton" for t in hw["tools"])
        assert "no GPU with index 99" in await call_error(s, "hardware_spec", {"device_id": 99})

        plugins = await call(s, "list_plugins")
        assert "pytorch" in plugins["components"]["kernel_backend"]
        assert {"local", "ray"} <= set(plugins["components"]["environment"])
        assert {p["name"]: p["status"] for p in plugins["plugins"]}["pytorch"] == "loaded"

        found = await call(s, "discover_kernels", {"path": str(KERNELS)})
        by_file = {Path(x["path"]).name: x for x in found["sources"]}
        assert "triton" in by_file["triton_relu.py"]["kernel_types"]
        assert {"relu_kernel", "relu_kernel_skips_tail"} <= set(by_file["triton_relu.py"]["kernels"])
        assert "pytorch" in by_file["costs.py"]["kernel_types"]
        assert [Path(c["path"]).name for c in found["configs"]] == ["numpy_kernel.yaml"]
        assert found["configs"][0]["kernel_ids"] == ["numpy_saxpy"]

        # bad input: a schema violation and a path outside the allowed roots
        assert "device_id" in await call_error(s, "hardware_spec", {"device_id": "zero"})
        assert "outside the allowed workspace roots" in await call_error(s, "discover_kernels", {"path": "/"})

    run_session(workspace, scenario)


def test_create_config_analyze_compare_and_suggest(workspace):
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def scenario(s: ClientSession) -> None:
        created = await call(
            s,
            "create_kernel_config",
            {
                "kernels": [
                    {"id": "single", "entry": "costs.py:single_work", "working_dir": str(KERNELS)},
                    {"id": "double", "entry": "costs.py:double_work", "working_dir": str(KERNELS)},
                ],
                "performance": {"budget_seconds": 1, "min_samples": 10, "warmup_ms": 5, "rounds": 1},
                "output_path": str(workspace / "pair.yaml"),
            },
        )
        assert created["kernel_ids"] == ["single", "double"] and Path(created["path"]).is_file()
        assert "exists" in await call_error(
            s, "create_kernel_config", {"kernels": [{"id": "x"}], "output_path": str(workspace / "pair.yaml")}
        )
        typo = {"kernels": [{"id": "x", "entyr": "a"}]}
        assert "kernels.0.entyr" in await call_error(s, "create_kernel_config", typo)

        analyzed = await call(
            s,
            "analyze",
            {
                "kernels": [
                    {"id": "good", "entry": "faulty.py:good", "reference": "faulty.py:reference"},
                    {"id": "wrong", "entry": "faulty.py:wrong_values", "reference": "faulty.py:reference"},
                ],
                "config_dir": str(KERNELS),
                "performance": TINY,
            },
        )
        assert analyzed["job"]["state"] == "succeeded" and analyzed["passed"] is False
        states = {r["kernel_id"]: r["correctness"]["status"] for r in analyzed["report"]["results"]}
        assert states == {"good": "passed", "wrong": "failed"}
        assert Path(analyzed["report_path"]).is_file()

        compared = await call(
            s, "compare", {"kernel_config": created["path"], "min_effect": 0.25}, progress_callback=on_progress
        )
        ranking = [e["kernel_id"] for e in compared["report"]["ranking"]]
        assert ranking == ["single", "double"]
        double = compared["report"]["ranking"][1]
        assert double["speedup"] < 1 and compared["winner_id"] in ("single", None)

        advice = await call(s, "suggest_optimizations", {"report_path": compared["report_path"]})
        about = [a for a in advice["suggestions"] if a["kernel_id"] == "double" and a["category"] == "comparison"]
        assert about and about[0]["evidence"]["speedup"] == double["speedup"]  # advice quotes the measurement
        advice = await call(s, "suggest_optimizations", {"job_id": analyzed["job"]["job_id"]})
        first = advice["suggestions"][0]
        assert (first["kernel_id"], first["category"], first["severity"]) == ("wrong", "correctness", "blocker")
        assert "mismatch" in first["finding"]

    run_session(workspace, scenario)
    assert progress, "no MCP progress notifications were received"
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)
    assert any("baseline" in (m or "") for _, m in progress)


def test_trust_model_rejects_commands_and_paths_outside_the_roots(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.yaml").write_text("kernel:\n  id: k\n  type: pytorch\n  testcase_command: ./run.sh\n")
    (outside / "run.sh").write_text("#!/bin/sh\ntouch ran\n")

    async def scenario(s: ClientSession) -> None:
        msg = await call_error(s, "analyze", {"kernel_config": str(outside / "k.yaml")})
        assert "outside the allowed workspace roots" in msg and "kernel_config" in msg
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "testcase_command": [str(outside / "run.sh")]}]})
        assert "testcase_command: program" in msg and "outside the allowed workspace roots" in msg
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "working_dir": str(outside)}]})
        assert "working_dir" in msg
        # a command is an argv list: a shell string is rejected by the input schema
        msg = await call_error(s, "analyze", {"kernels": [{"id": "k", "testcase_command": "sh -c 'touch ran'"}]})
        assert "testcase_command" in msg
        assert "not both" in await call_error(s, "analyze", {})
        assert "no kernel backend named 'nosuch'" in await call_error(
            s, "analyze", {"kernels": [{"id": "k", "type": "nosuch", "entry": "x.py:f"}], "config_dir": str(KERNELS)}
        )

    run_session(workspace, scenario)
    assert not (outside / "ran").exists()


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def test_jobs_status_result_and_cancel(workspace):
    async def scenario(s: ClientSession) -> None:
        started = await call(
            s,
            "analyze",
            {
                "kernels": [{"id": "quick", "entry": "faulty.py:good", "reference": "faulty.py:reference"}],
                "config_dir": str(KERNELS),
                "measure_performance": False,
                "wait": False,
            },
        )
        job_id = started["job"]["job_id"]
        assert started["job"]["state"] == "running" and started["report"] is None
        status = await call(s, "job_status", {"job_id": job_id})
        assert status["job_id"] == job_id
        done = await call(s, "job_result", {"job_id": job_id, "wait_s": 120})
        assert done["job"]["state"] == "succeeded"
        assert done["report"]["results"][0]["correctness"]["status"] == "passed"

        hanging = await call(
            s,
            "analyze",
            {
                "kernels": [{"id": "hangs", "entry": "faulty.py:hangs", "reference": "faulty.py:reference"}],
                "config_dir": str(KERNELS),
                "output_dir": str(workspace / "hang_runs"),
                "wait": False,
            },
        )
        hang_id = hanging["job"]["job_id"]
        deadline = time.monotonic() + 60
        while not _processes_mentioning(str(workspace / "hang_runs")) and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        assert _processes_mentioning(str(workspace / "hang_runs")), "the kernel worker never started"
        cancelled = await call(s, "job_cancel", {"job_id": hang_id})
        assert cancelled["state"] == "cancelled"
        assert "cancelled" in await call_error(s, "job_result", {"job_id": hang_id})
        listed = await call(s, "job_list")
        assert {j["job_id"]: j["state"] for j in listed["jobs"]} == {job_id: "succeeded", hang_id: "cancelled"}
        assert "no job 'nope'" in await call_error(s, "job_status", {"job_id": "nope"})

    run_session(workspace, scenario)
    # the cancelled job's worker (started in its own session) was stopped too
    assert _processes_mentioning(str(workspace / "hang_runs")) == []


def _benchmark_report(folder: Path, framework: str, req_s: float, ttft: float, top: list[tuple[str, float]]) -> Path:
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


def test_benchmark_result_tools(workspace):
    results = workspace / "results"
    a = _benchmark_report(results / "benchmark_vllm_20250101_000000", "vllm", 2.0, 100.0, [("gemm_a", 60.0)])
    b = _benchmark_report(results / "benchmark_vllm_20250102_000000", "vllm", 3.0, 80.0, [("gemm_a", 40.0)])
    os.utime(a, (1, 1))

    async def scenario(s: ClientSession) -> None:
        listed = await call(s, "list_benchmark_results")
        assert [Path(r["path"]) for r in listed["runs"]] == [b, a]  # newest first
        assert listed["runs"][0]["request_throughput"] == 3.0 and listed["runs"][0]["mean_ttft_ms"] == 80.0

        detail = await call(s, "get_benchmark_result", {"path": str(b.parent), "sections": ["latency"]})
        assert list(detail["report"]) == ["latency"] and detail["summary"]["framework"] == "vllm"
        missing = {"path": str(b), "sections": ["nope"]}
        assert "no section(s) nope" in await call_error(s, "get_benchmark_result", missing)

        cmp = await call(s, "compare_benchmark_reports", {"paths": [str(a), str(b)]})
        metrics = {m["metric"]: m for m in cmp["metrics"]}
        assert metrics["request_throughput"]["change_vs_first_pct"] == [0.0, 50.0]
        assert metrics["request_throughput"]["best_index"] == 1 and metrics["mean_ttft_ms"]["best_index"] == 1
        assert cmp["top_kernels"][0] == {"name": "gemm_a", "pct_total": [60.0, 40.0]}
        assert "at least 2" in await call_error(s, "compare_benchmark_reports", {"paths": [str(a)]})

        advice = await call(s, "suggest_optimizations", {"report_path": str(b)})
        cats = {x["category"] for x in advice["suggestions"]}
        assert {"gaps", "hotspot"} <= cats

    run_session(workspace, scenario)


def test_plugin_contributed_tool(workspace, tmp_path):
    """A plugin installed as a distribution (dist-info with an entry point) adds a tool through the hook."""
    site = tmp_path / "site"
    dist = site / "magpie_mcp_demo-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: magpie-mcp-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[magpie]\nmcp_demo = magpie_mcp_demo\n")
    (site / "magpie_mcp_demo.py").write_text(
        "from magpie_core import hookimpl\n\n\n"
        "def kernel_flops(m: int, n: int, k: int) -> dict[str, int]:\n"
        '    """FLOPs of an m x k by k x n matrix product."""\n'
        "    if min(m, n, k) <= 0:\n"
        "        raise ValueError('dimensions must be positive')\n"
        "    return {'flops': 2 * m * n * k}\n\n\n"
        "@hookimpl\n"
        "def magpie_register_mcp_tools(register):\n"
        "    register(kernel_flops)\n"
    )

    async def scenario(s: ClientSession) -> None:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert "kernel_flops" in tools
        out = await call(s, "kernel_flops", {"m": 2, "n": 3, "k": 4})
        assert out == {"flops": 48}
        assert "dimensions must be positive" in await call_error(s, "kernel_flops", {"m": 0, "n": 3, "k": 4})

    run_session(workspace, scenario, env={"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])})


# --- tools backed by pipelines that ship separately ----------------------------------


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


@pytest.mark.skipif(not _has("magpie_core.pipelines.gap"), reason="gap analysis (magpie_core.pipelines.gap) absent")
def test_gap_analysis_tool(workspace):
    async def scenario(s: ClientSession) -> None:
        out = await call(
            s, "gap_analysis", {"trace_path": str(TRACE), "top_k": 5, "output_dir": str(workspace / "gap")}
        )
        assert out["job"]["state"] == "succeeded"
        assert 0 < len(out["top_kernels"]) <= 5 and out["total_duration_us"] > 0
        assert out["gpu_idle_pct"] is not None and isinstance(out["launch_bound"], bool)
        assert "trace path not found" in await call_error(s, "gap_analysis", {"trace_path": str(workspace / "no")})

    (workspace / "config.yaml").write_text(
        (workspace / "config.yaml").read_text().replace(f"{KERNELS}]", f"{KERNELS}, {DATA / 'traces'}]")
    )
    run_session(workspace, scenario)


@pytest.mark.skipif(
    not _has("magpie_core.pipelines.benchmark"), reason="benchmark mode (magpie_core.pipelines.benchmark) absent"
)
def test_benchmark_tool_against_an_unreachable_server(workspace):
    async def scenario(s: ClientSession) -> None:
        out = await call(
            s,
            "benchmark",
            {
                "framework": "vllm",
                "model": "m",
                "run_mode": "external",
                "run_kind": "measurement",
                "base_url": "http://127.0.0.1:9",
                "concurrency": 1,
                "input_len": 8,
                "output_len": 4,
            },
        )
        assert out["job"]["state"] == "succeeded" and out["success"] is False
        assert out["summary"]["errors"] and Path(out["report_path"]).name == "benchmark_report.json"
        assert "give framework or benchmark_config" in await call_error(s, "benchmark", {})

    run_session(workspace, scenario)


@pytest.mark.skipif(
    not _has("magpie_core.trace.kernel_names"), reason="kernel-name parsing (magpie_core.trace.kernel_names) absent"
)
def test_find_kernel_sources_tool(workspace):
    repos = DATA / "kernel_sources"
    (workspace / "config.yaml").write_text(
        (workspace / "config.yaml").read_text().replace(f"{KERNELS}]", f"{KERNELS}, {repos}]")
    )

    async def scenario(s: ClientSession) -> None:
        names = ["void vllm::rms_norm_kernel<c10::BFloat16, 8, 1>(c10::BFloat16*, c10::BFloat16 const*)"]
        out = await call(s, "find_kernel_sources", {"kernel_names": names, "repos": [str(repos / "vllm")]})
        assert set(out["sources"]) == set(names)
        assert "outside the allowed" in await call_error(
            s, "find_kernel_sources", {"kernel_names": names, "repos": ["/"]}
        )

    run_session(workspace, scenario)


@pytest.mark.skipif(_has("magpie_core.pipelines.gap"), reason="gap analysis is present (tested above)")
def test_missing_pipelines_are_tool_errors(workspace):
    async def scenario(s: ClientSession) -> None:
        assert "not available" in await call_error(s, "gap_analysis", {"trace_path": str(workspace)})

    run_session(workspace, scenario)


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
    import socket
    import subprocess

    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "magpie_core",
            "-c",
            str(workspace / "config.yaml"),
            "mcp",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
        ],
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
