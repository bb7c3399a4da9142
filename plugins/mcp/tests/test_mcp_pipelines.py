"""Tools backed by other plugins' components (the ``gap`` trace analyzer, the ``kernel-sources``
source finder) and by the benchmark pipeline, through a real MCP client session over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from magpie_mcp.testing import add_roots, call, call_error, run_session, write_workspace
from mcp import ClientSession

from magpie_core.plugins import get_plugin_manager
from magpie_core.report_pages import renderer_installed
from tests.conftest import DATA

KERNELS = DATA / "kernels"
TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _installed(kind: str, name: str) -> bool:
    return name in get_plugin_manager().components(kind)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])


@pytest.mark.skipif(not _installed("trace_analyzer", "gap"), reason="the gap analyzer (magpie-gap-analysis) absent")
def test_gap_analysis_tool(workspace):
    async def scenario(s: ClientSession) -> None:
        out = await call(
            s, "gap_analysis", {"trace_path": str(TRACE), "top_k": 5, "output_dir": str(workspace / "gap")}
        )
        assert out["job"]["state"] == "succeeded"
        assert 0 < len(out["top_kernels"]) <= 5 and out["total_duration_us"] > 0
        assert out["gpu_idle_pct"] is not None and isinstance(out["launch_bound"], bool)
        # the workspace gets its report page as from `magpie gap` (same core call point), when a renderer is in
        assert len(list((workspace / "gap").rglob("report.html"))) == (1 if renderer_installed() else 0)
        assert "trace path not found" in await call_error(s, "gap_analysis", {"trace_path": str(workspace / "no")})

    add_roots(workspace, DATA / "traces")
    run_session(workspace, scenario)


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
        assert (Path(out["report_path"]).parent / "report.html").is_file() == renderer_installed()
        assert "give framework or benchmark_config" in await call_error(s, "benchmark", {})

    run_session(workspace, scenario)


@pytest.mark.skipif(
    not _installed("source_finder", "kernel-sources"), reason="the source finder (magpie-source-finder) absent"
)
def test_find_kernel_sources_tool(workspace):
    repos = DATA / "kernel_sources"
    add_roots(workspace, repos)

    async def scenario(s: ClientSession) -> None:
        names = ["void vllm::rms_norm_kernel<c10::BFloat16, 8, 1>(c10::BFloat16*, c10::BFloat16 const*)"]
        out = await call(s, "find_kernel_sources", {"kernel_names": names, "repos": [str(repos / "vllm")]})
        assert set(out["sources"]) == set(names)
        assert "outside the allowed" in await call_error(
            s, "find_kernel_sources", {"kernel_names": names, "repos": ["/"]}
        )

    run_session(workspace, scenario)


def test_missing_plugins_are_tool_errors(workspace):
    """Without the plugins that provide them, the tools say what to install."""

    async def scenario(s: ClientSession) -> None:
        msg = await call_error(s, "gap_analysis", {"trace_path": str(workspace)})
        assert "not available" in msg and "magpie-gap-analysis" in msg
        msg = await call_error(s, "find_kernel_sources", {"kernel_names": ["k"], "repos": [str(workspace)]})
        assert "not available" in msg and "magpie-source-finder" in msg

    run_session(workspace, scenario, env={"MAGPIE_PLUGINS": "mcp,local"})
