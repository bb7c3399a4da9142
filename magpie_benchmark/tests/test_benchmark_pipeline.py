"""The benchmark pipeline end to end against a real local fake server (started and stopped by magpie)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from magpie_benchmark.pipeline import run_benchmark
from magpie_benchmark.run_config import RunOverrides, apply_overrides, load_benchmark_config
from magpie_benchmark.workload import plan_points

from tests.helpers.fake_framework import FakeFramework, config


def test_measurement_and_diagnostic_in_one_report(tmp_path):
    asked = {"torch_profiler": {"enabled": True}}  # profiling only when asked (AMD Magpie: --torch-profiler)
    report = run_benchmark(config(profiler=asked), tmp_path, framework_component=FakeFramework())
    ws = Path(report.workspace_dir)
    assert ws.name.startswith("benchmark_fake_") and (ws / "config.yaml").exists() and (ws / "server.log").exists()
    data = json.loads((ws / "benchmark_report.json").read_text())
    for key in (
        "success",
        "framework",
        "model",
        "config",
        "throughput",
        "latency",
        "errors",
        "execution_time",
        "workspace_dir",
        "profiling_enabled",
        "run_kind",
        "gap_analysis",
    ):
        assert key in data
    assert [p["concurrency"] for p in data["points"]] == [1, 4]
    assert data["summary_point"] == 1
    t = data["throughput"]
    assert t["completed_requests"] == 12 and t["total_output_tokens"] == 96 and t["duration_seconds"] > 0
    for k in ("ttft", "tpot", "itl", "e2el"):
        assert {"mean_ms", "median_ms", "p99_ms", "std_ms", "p90_ms", "p95_ms"} <= set(data["latency"][k])
    assert data["latency"]["ttft"]["mean_ms"] >= 20
    assert len(data["points"][0]["requests"]) == 12
    assert data["client_checks"]["token_count_methods"] == {"usage": 24}
    diag = data["diagnostic"]
    assert diag["start_profile"] == 200 and diag["stop_profile"] == 200
    assert diag["traces"] and all("torch_trace" in p for p in diag["traces"])
    assert data["profiling_enabled"] is True
    assert data["server"]["stopped"] is True
    gap = data["gap_analysis"]
    try:
        import magpie_gap_analysis  # noqa: F401  (the plugin that provides the gap trace analyzer)
    except ImportError:
        assert gap["errors"] and data["success"] is False
        assert all("gap analysis" in e for e in data["errors"])
    else:
        assert data["success"] is True, data["errors"]


def test_measurement_only_has_no_profiler(tmp_path):
    report = run_benchmark(
        config(run_kind="measurement", load={"progress": False}), tmp_path, framework_component=FakeFramework()
    )
    assert report.success, report.errors
    assert report.diagnostic is None and report.profiling_enabled is False
    assert "--profile-dir" not in report.server["argv"]


def test_crashing_server_fails_clearly_and_keeps_measurements(tmp_path):
    cfg = config(
        run_kind="measurement",
        envs={"CONC": 2, "ISL": 8, "OSL": 200, "NUM_PROMPTS": 6},
        load={"concurrencies": [2, 2, 2], "progress": False},
    )
    report = run_benchmark(cfg, tmp_path, framework_component=FakeFramework(exit_after_s=2.5))
    assert report.success is False
    assert any("exited" in e or "failed" in e for e in report.errors), report.errors
    assert report.points  # what was measured before the crash is kept
    assert report.server["stopped"] is True


def test_external_mode(tmp_path, fake_stream_server):
    cfg = config(run_mode="external", base_url=fake_stream_server, run_kind="measurement", load={"progress": False})
    report = run_benchmark(cfg, tmp_path)
    assert report.success, report.errors
    assert report.throughput["completed_requests"] == 12 and report.server["external"] is True
    assert set(report.server["probe"]) == {"models_s", "request_s", "notes"}  # it answered before the load


def test_amd_yaml_overrides_and_sweep_matrix(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(
        "benchmark:\n  framework: sglang\n  model: m\n  envs: {TP: 2, CONC: 8, ISL: 128}\n"
        "  sweep_matrix:\n    cases:\n      - {CONC: 4, OSL: 32}\n      - {CONC: 16, NUM_PROMPTS: 5}\n"
    )
    cfg = load_benchmark_config(path)
    points = plan_points(cfg)
    assert [(p.concurrency, p.input_len, p.output_len, p.num_prompts) for p in points] == [
        (4, 128, 32, 40),
        (16, 128, 512, 5),
    ]
    cfg = apply_overrides(cfg, "vllm", RunOverrides(tp=4, concurrency=2, base_url="http://h:1", torch_profiler=False))
    assert cfg.framework == "vllm" and cfg.envs["TP"] == 4 and cfg.envs["CONC"] == 2
    assert cfg.run_mode == "external" and cfg.profiler.torch_profiler.enabled is False
    bad = tmp_path / "bad.yaml"
    bad.write_text("benchmark:\n  framework: vllm\n  laod: {}\n")
    from magpie_core.config import ConfigError

    with pytest.raises(ConfigError, match=r"bad.yaml:3.*laod.*did you mean 'load'"):
        load_benchmark_config(bad)


def test_cli_usage_errors(tmp_path):
    magpie = [sys.executable, "-m", "magpie_core"]
    out = subprocess.run(
        [*magpie, "benchmark", "nosuch", "-m", "x", "-o", str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "nosuch" in out.stderr
    out = subprocess.run([*magpie, "benchmark", "-o", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "give a framework" in out.stderr


def _check_plugin() -> Any:
    """An in-process plugin with two benchmark checks: one that passes, one whose code raises."""
    import types

    from magpie_benchmark.interfaces import BenchmarkCheck

    from magpie_core import hookimpl

    class Passing(BenchmarkCheck):
        name: ClassVar[str] = "always_ok"

        def wanted(self, config: Any) -> bool:
            return True

        def run(self, target: Any) -> dict[str, Any]:
            return {"passed": True, "summary": f"saw {target.model} at {target.base_url}"}

    class Broken(Passing):
        name: ClassVar[str] = "broken"

        def run(self, target: Any) -> dict[str, Any]:
            raise RuntimeError("boom")

    module = types.ModuleType("magpie_check_plugin")

    @hookimpl
    def magpie_register_benchmark_checks(register: Any) -> None:
        register(Passing())
        register(Broken())

    module.magpie_register_benchmark_checks = magpie_register_benchmark_checks
    return module


def test_checks_run_after_the_load_and_a_failed_one_fails_the_run(tmp_path, fake_stream_server):
    from magpie_core.plugins import PluginManager, use_plugin_manager

    cfg = config(run_mode="external", base_url=fake_stream_server, run_kind="measurement", load={"progress": False})
    with use_plugin_manager(PluginManager(plugins=[("checks", _check_plugin())])):
        report = run_benchmark(cfg, tmp_path)
    ok = report.checks["always_ok"]
    assert ok["passed"] is True and ok["summary"].startswith("saw ") and ok["summary"].endswith(fake_stream_server)
    assert report.checks["broken"] == {"passed": False, "summary": "RuntimeError: boom"}
    assert report.errors == ["check broken failed: RuntimeError: boom"] and report.success is False
    assert report.throughput["completed_requests"] == 12  # the measurement is kept
