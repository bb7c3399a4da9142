"""Configs: AMD Magpie files load unchanged; bad files get file, line, key path and a hint.

Benchmark files: ``magpie_benchmark/tests/test_benchmark_config.py``."""

from __future__ import annotations

import pytest

from magpie_core.config import (
    ConfigError,
    ConfigErrors,
    FrameworkConfig,
    KernelConfigFile,
    load_config,
)

from .conftest import DATA

AMD = DATA / "amd_magpie"


def test_amd_analyze_yaml_loads():
    cfg = load_config(KernelConfigFile, AMD / "analyze_latency.yaml")
    (kernel,) = cfg.all_kernels()
    assert (kernel.id, kernel.type, kernel.testcase_commands()) == ("vector_add", "hip", [["./vector_add"]])
    assert cfg.latency is not None and cfg.latency.method == "kernel_trace"


def test_amd_compare_yaml_with_bench_target_loads():
    cfg = load_config(KernelConfigFile, AMD / "compare_triton_blocksize.yaml")
    kernels = cfg.all_kernels()
    assert [k.id for k in kernels] == ["triton_vector_add_block256", "triton_vector_add_block1024"]
    assert kernels[1].bench_target.callable == "triton_vector_add_block1024"
    assert kernels[0].uses_harness
    assert kernels[0].testcase_commands() == [["python", "-m", "triton_vector_add", "--check"]]


def test_amd_kernel_config_example_commands_and_blocks():
    cfg = load_config(KernelConfigFile, AMD / "kernel_config_example.yaml")
    base, v1 = cfg.all_kernels()
    assert base.compile_commands() == [["hipcc", "-O3", "--offload-arch=gfx942", "gemm.hip", "-o", "gemm_baseline"]]
    assert v1.compile_commands()[1] == ["strip", "gemm_v1"]
    assert base.env == {"HIP_VISIBLE_DEVICES": "0"}
    perf = cfg.effective_performance(base)
    assert perf.backend == "rocprof_compute"
    assert perf.profiler_options("rocprof-compute")["metric_blocks"] == ["1", "2", "5"]
    assert perf.profiler_options("ncu")["args"] == ["--target-processes", "all"]
    assert cfg.effective_correctness(base).accordo.atol == 1e-6
    assert cfg.scheduler.environment == "ray"


def test_amd_framework_config_loads():
    cfg = load_config(FrameworkConfig, AMD / "config.yaml")
    assert cfg.scheduler.max_workers == 8
    assert cfg.performance.profiler_options("ncu")["args"] == ["--target-processes", "all"]


def test_unknown_key_names_file_line_path_and_suggestion(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text("kernels:\n  - id: a\n    type: pytorch\n  - id: b\n    type: pytorch\n    testcase_comand: ./x\n")
    with pytest.raises(ConfigError) as info:
        load_config(KernelConfigFile, path)
    err = info.value
    assert (err.file, err.line, err.path) == (str(path), 6, ("kernels", 1, "testcase_comand"))
    assert (
        str(err)
        == f"{path}:6: kernels[1].testcase_comand: unknown key 'testcase_comand' (did you mean 'testcase_command'?)"
    )


def test_several_errors_are_all_reported(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text("kernel:\n  id: a\n  typo_one: 1\ncorrectness:\n  trials: 0\n")
    with pytest.raises(ConfigErrors) as info:
        load_config(KernelConfigFile, path)
    text = str(info.value)
    assert f"{path}:3: kernel.typo_one: unknown key" in text
    assert f"{path}:5: correctness.trials: Input should be greater than or equal to 1" in text


def test_broken_yaml_and_duplicates_are_located(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text("kernel:\n  id: a\n  env: [unclosed\n")
    with pytest.raises(ConfigError, match=r"k.yaml:4: invalid YAML"):
        load_config(KernelConfigFile, path)
    path.write_text("kernel:\n  id: a\n  id: b\n")
    with pytest.raises(ConfigError, match=r"k.yaml:3: kernel: duplicate key 'id'"):
        load_config(KernelConfigFile, path)


def test_semantic_checks(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text("kernels:\n  - id: a\n  - id: a\n")
    with pytest.raises(ConfigError, match="kernel ids must be unique; repeated: a"):
        load_config(KernelConfigFile, path)
    path.write_text("performance:\n  backend: events\n")
    with pytest.raises(ConfigError, match="no kernels"):
        load_config(KernelConfigFile, path)


def test_a_mistyped_performance_key_is_located_at_its_line_with_a_suggestion(tmp_path):
    """Issue 46: `min_sampels` on line 3 was reported at line 1 (its block) with the field list, no suggestion."""
    path = tmp_path / "k.yaml"
    path.write_text("kernel:\n  id: a\nperformance:\n  budget_seconds: 2\n  min_sampels: 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(KernelConfigFile, path)
    expected = f"{path}:5: performance.min_sampels: unknown key 'min_sampels' (did you mean 'min_samples'?)"
    assert str(info.value) == expected


def test_plugin_blocks_are_validated_by_their_plugin_with_located_errors(tmp_path):
    cfg = load_config(KernelConfigFile, AMD / "kernel_config_example.yaml")
    block = cfg.scheduler.plugin_block("ray_config")
    assert type(block).__module__ == "magpie_env_ray.config"  # the Ray plugin's own model, not the core's
    bad = tmp_path / "k.yaml"
    bad.write_text("kernel:\n  id: a\n  type: pytorch\nray_config:\n  cluster_adress: auto\n")
    with pytest.raises(ConfigError) as err:
        load_config(KernelConfigFile, bad)
    hint = "(did you mean 'cluster_address'?)"  # the plugin model's keys, as for the core's own
    assert str(err.value) == f"{bad}:5: ray_config.cluster_adress: unknown key 'cluster_adress' {hint}"
    typo = tmp_path / "k2.yaml"
    typo.write_text("kernel:\n  id: a\nray_confg:\n  cluster_address: auto\n")
    with pytest.raises(ConfigError) as err:
        load_config(KernelConfigFile, typo)
    assert str(err.value) == f"{typo}:3: ray_confg: unknown key 'ray_confg' (did you mean 'ray_config'?)"


def test_a_plugin_block_without_its_plugin_is_an_unknown_key(tmp_path, monkeypatch):
    from magpie_core.plugins import PluginManager, use_plugin_manager

    monkeypatch.setenv("MAGPIE_PLUGINS", "pytorch")
    path = tmp_path / "k.yaml"
    path.write_text("kernel:\n  id: a\nray_config:\n  cluster_address: auto\n")
    with use_plugin_manager(PluginManager()), pytest.raises(ConfigError, match=r"k.yaml:3: ray_config: unknown key"):
        load_config(KernelConfigFile, path)


def test_amd_magpie_keys_magpie_does_not_implement_are_named(caplog):
    with caplog.at_level("WARNING", logger="magpie.compat"):
        load_config(FrameworkConfig, AMD / "config.yaml")
    messages = [r.getMessage() for r in caplog.records]
    assert any("config.yaml:61: compare.perf_weights_ncu: AMD Magpie key not implemented" in m for m in messages)
    assert all("measured time only" in m for m in messages if "perf_weights" in m)
