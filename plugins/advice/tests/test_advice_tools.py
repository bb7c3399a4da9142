"""The advice plugin's MCP tools through a real MCP client session over stdio: kernel discovery,
advice from real analyze/compare runs and from benchmark reports, benchmark-report comparison."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from magpie_mcp.testing import call, call_error, run_session, write_benchmark_report, write_workspace
from mcp import ClientSession

from tests.conftest import DATA

KERNELS = DATA / "kernels"
TINY = {"budget_seconds": 0.5, "min_samples": 5, "warmup_ms": 5, "timeout_seconds": 120, "rounds": 1}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD; allowed roots: this folder and tests/data/kernels."""
    return write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])


def test_discover_kernels(workspace):
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name in ("discover_kernels", "suggest_optimizations", "compare_benchmark_reports"):
            assert tools[name].output_schema and tools[name].description

        found = await call(s, "discover_kernels", {"path": str(KERNELS)})
        by_file = {Path(x["path"]).name: x for x in found["sources"]}
        assert "triton" in by_file["triton_relu.py"]["kernel_types"]
        assert {"relu_kernel", "relu_kernel_skips_tail"} <= set(by_file["triton_relu.py"]["kernels"])
        assert "pytorch" in by_file["costs.py"]["kernel_types"]
        assert [Path(c["path"]).name for c in found["configs"]] == ["numpy_kernel.yaml"]
        assert found["configs"][0]["kernel_ids"] == ["numpy_saxpy"]

        # a path outside the allowed roots
        assert "outside the allowed workspace roots" in await call_error(s, "discover_kernels", {"path": "/"})

    run_session(workspace, scenario)


def test_discovery_finds_gpu_sources_no_backend_claims(tmp_path):
    from magpie_advice.discovery import discover_kernels

    (tmp_path / "axpy.cu").write_text("__global__ __launch_bounds__(256) void axpy(float a, float* x) {}\n")
    (tmp_path / "host.cpp").write_text("int main() { return 0; }\n")
    found = discover_kernels(tmp_path)
    assert [(Path(s.path).name, s.kernels) for s in found.sources] == [("axpy.cu", ["axpy"])]


def test_suggestions_from_analyze_and_compare_runs(workspace):
    async def scenario(s: ClientSession) -> None:
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
        advice = await call(s, "suggest_optimizations", {"job_id": analyzed["job"]["job_id"]})
        first = advice["suggestions"][0]
        assert (first["kernel_id"], first["category"], first["severity"]) == ("wrong", "correctness", "blocker")
        assert "mismatch" in first["finding"]

        compared = await call(
            s,
            "compare",
            {
                "kernels": [
                    {"id": "single", "entry": "costs.py:single_work"},
                    {"id": "double", "entry": "costs.py:double_work"},
                ],
                "config_dir": str(KERNELS),
                "performance": {"budget_seconds": 1, "min_samples": 10, "warmup_ms": 5, "rounds": 1},
                "min_effect": 0.25,
            },
        )
        double = next(e for e in compared["report"]["ranking"] if e["kernel_id"] == "double")
        advice = await call(s, "suggest_optimizations", {"report_path": compared["report_path"]})
        about = [a for a in advice["suggestions"] if a["kernel_id"] == "double" and a["category"] == "comparison"]
        assert about and about[0]["evidence"]["speedup"] == double["speedup"]  # advice quotes the measurement
        assert "give report_path or job_id" in await call_error(s, "suggest_optimizations", {})

    run_session(workspace, scenario)


def test_benchmark_report_comparison_and_advice(workspace):
    results = workspace / "results"
    a = write_benchmark_report(results / "benchmark_vllm_20250101_000000", "vllm", 2.0, 100.0, [("gemm_a", 60.0)])
    b = write_benchmark_report(results / "benchmark_vllm_20250102_000000", "vllm", 3.0, 80.0, [("gemm_a", 40.0)])
    os.utime(a, (1, 1))

    async def scenario(s: ClientSession) -> None:
        cmp = await call(s, "compare_benchmark_reports", {"paths": [str(a), str(b)]})
        metrics = {m["metric"]: m for m in cmp["metrics"]}
        assert metrics["request_throughput"]["change_vs_first_pct"] == [0.0, 50.0]
        assert metrics["request_throughput"]["best_index"] == 1 and metrics["mean_ttft_ms"]["best_index"] == 1
        assert cmp["top_kernels"][0] == {"name": "gemm_a", "pct_total": [60.0, 40.0]}
        (verdict,) = cmp["verdicts"]  # these reports have no workload fingerprint: never a verdict
        assert verdict["verdict"] == "NOT COMPARABLE" and "no workload fingerprint" in verdict["reasons"][0]
        assert "at least 2" in await call_error(s, "compare_benchmark_reports", {"paths": [str(a)]})

        advice = await call(s, "suggest_optimizations", {"report_path": str(b)})
        cats = {x["category"] for x in advice["suggestions"]}
        assert {"gaps", "hotspot"} <= cats

    run_session(workspace, scenario)
