"""Benchmark configs: AMD Magpie's benchmark files load unchanged; bad files get file, line and key path;
the blocks other plugins own (``gap_analysis:``, ``profiler.targeted_trace:``) are validated by their models."""

from __future__ import annotations

import pytest
from magpie_benchmark.config import BenchmarkConfigFile

from magpie_core.config import ConfigError, load_config
from tests.conftest import DATA

AMD = DATA / "amd_magpie"


def test_amd_benchmark_yamls_load():
    dsr1 = load_config(BenchmarkConfigFile, AMD / "benchmark_vllm_dsr1.yaml").benchmark
    assert dsr1.framework == "vllm" and dsr1.envs["TP"] == 8 and dsr1.envs["RANDOM_RANGE_RATIO"] == 0.8
    gap = dsr1.plugin_block("gap_analysis")
    assert type(gap).__name__ == "GapAnalysisConfig"  # the gap analysis plugin's block
    assert gap.top_k == 100 and dsr1.profiler.torch_profiler.enabled is False
    tl = load_config(BenchmarkConfigFile, AMD / "benchmark_vllm_tracelens.yaml").benchmark
    assert tl.profiler.tracelens.enabled and tl.profiler.tracelens.analysis_stages == "all"
    assert tl.plugin_block("gap_analysis").trace_start_pct == 10


def test_benchmark_envs_default_like_amd_magpie(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("benchmark:\n  framework: sglang\n  model: m\n")
    envs = load_config(BenchmarkConfigFile, path).benchmark.envs
    assert envs == {"TP": 1, "CONC": 32, "ISL": 1024, "OSL": 512, "RANDOM_RANGE_RATIO": 0.5}


def test_wrong_type_is_located(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("benchmark:\n  framework: vllm\n  gap_analysis:\n    top_k: lots\n")
    with pytest.raises(ConfigError) as info:
        load_config(BenchmarkConfigFile, path)
    assert info.value.line == 4 and info.value.path == ("benchmark", "gap_analysis", "top_k")
    assert "valid integer" in info.value.problem


def test_env_expansion_and_missing_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGPIE_TEST_MODEL", "/models/llama")
    path = tmp_path / "b.yaml"
    path.write_text(
        "benchmark:\n  framework: vllm\n  model: ${MAGPIE_TEST_MODEL}\n  docker_image: ${NO_SUCH_VAR_X:-rocm/vllm}\n"
    )
    cfg = load_config(BenchmarkConfigFile, path).benchmark
    assert cfg.model == "/models/llama" and cfg.docker_image == "rocm/vllm"
    path.write_text("benchmark:\n  framework: vllm\n\n  model: ${NO_SUCH_VAR_X}\n")
    with pytest.raises(ConfigError, match=r"b.yaml:4: benchmark.model: environment variable NO_SUCH_VAR_X is not set"):
        load_config(BenchmarkConfigFile, path)


def test_amd_magpie_keys_magpie_does_not_implement_are_named(caplog):
    with caplog.at_level("WARNING", logger="magpie.compat"):
        load_config(BenchmarkConfigFile, AMD / "benchmark_vllm_tracelens.yaml")
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "benchmark_vllm_tracelens.yaml:" in m
        and "benchmark.profiler.tracelens.perf_report_enabled: AMD Magpie key not implemented by magpie" in m
        for m in messages
    ), messages


def test_targeted_trace_is_the_plugins_block_and_refused_by_a_measurement_run(tmp_path):
    path = tmp_path / "b.yaml"
    target = "[{target_id: t, name_patterns: '*gemm*'}]"
    block = f"  profiler:\n    targeted_trace:\n      enabled: true\n      targets: {target}\n"
    path.write_text("benchmark:\n  framework: vllm\n" + block)
    traced = load_config(BenchmarkConfigFile, path).benchmark.profiler.plugin_block("targeted_trace")
    assert type(traced).__module__ == "magpie_targeted_trace.config" and traced.targets[0].name_patterns == ["*gemm*"]
    path.write_text("benchmark:\n  framework: vllm\n  run_kind: measurement\n" + block)
    with pytest.raises(ConfigError, match="targeted_trace is diagnostic"):
        load_config(BenchmarkConfigFile, path)
    path.write_text("benchmark:\n  framework: vllm\n  profiler:\n    targeted_trace:\n      enabled: true\n")
    with pytest.raises(ConfigError) as info:
        load_config(BenchmarkConfigFile, path)
    assert info.value.path[:3] == ("benchmark", "profiler", "targeted_trace")
    assert info.value.problem == "enabled targeted_trace needs at least one entry in targets"


def test_a_block_without_its_plugin_is_an_unknown_key(tmp_path, monkeypatch):
    from magpie_core.plugins import PluginManager, use_plugin_manager

    monkeypatch.setenv("MAGPIE_PLUGINS", "benchmark")
    path = tmp_path / "b.yaml"
    path.write_text("benchmark:\n  framework: vllm\n  gap_analysis:\n    top_k: 3\n")
    with (
        use_plugin_manager(PluginManager()),
        pytest.raises(ConfigError, match=r"b.yaml:3: benchmark.gap_analysis: unk"),
    ):
        load_config(BenchmarkConfigFile, path)
