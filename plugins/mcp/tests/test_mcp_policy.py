"""The trust policy's field rules (issue 31): every field of the kernel config models that can hold text
has a rule, and each bypass found in the second review is refused (allowlists, not denylists)."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from magpie_mcp.fields import RULES
from magpie_mcp.trust import TrustError, TrustPolicy
from pydantic import BaseModel

from magpie_core.config.common import config_blocks
from magpie_core.config.kernel import KernelConfig, KernelConfigFile

#: leaf types that cannot name code or files
SAFE_LEAVES = (int, float, bool, type(None))


def _leaves(annotation: Any) -> typing.Iterator[Any]:
    """The leaf types of ``annotation`` (through Annotated, unions, lists, dicts), models included."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _leaves(typing.get_args(annotation)[0])
    elif origin is typing.Literal:
        yield from (type(arg) for arg in typing.get_args(annotation) if not isinstance(arg, str))
    elif origin in (typing.Union, types.UnionType, list, dict, tuple):
        for arg in typing.get_args(annotation):
            yield from _leaves(arg)
    else:
        yield annotation


def _uncovered(model: type[BaseModel], seen: set[type]) -> typing.Iterator[str]:
    if model in seen:
        return
    seen.add(model)
    for name, info in model.model_fields.items():
        leaves = list(_leaves(info.annotation))
        for leaf in leaves:
            if isinstance(leaf, type) and issubclass(leaf, BaseModel):
                yield from _uncovered(leaf, seen)
        text_like = [
            leaf for leaf in leaves if not (isinstance(leaf, type) and issubclass(leaf, (*SAFE_LEAVES, BaseModel)))
        ]
        if text_like and (model.__name__, name) not in RULES:
            yield f"{model.__name__}.{name}"
    # plugin blocks (PluginBlocksModel) are models, walked above; other extra keys need a rule
    open_ended = model.model_config.get("extra") == "allow" and not hasattr(model, "plugin_block")
    if open_ended and (model.__name__, "*") not in RULES:
        yield f"{model.__name__}.*"


def _missing_rules(models: list[type[BaseModel]], seen: set[type]) -> list[str]:
    return [where for model in models for where in _uncovered(model, seen)]


def test_every_text_field_of_the_kernel_config_models_has_a_policy_rule():
    """A new path- or command-like field (in magpie or in a plugin's kernel-file block) fails here
    until magpie_mcp.fields.RULES says how the policy checks it."""
    seen: set[type] = set()
    models = [KernelConfigFile, KernelConfig, *(block.model for block in config_blocks("kernel_file").values())]
    missing = _missing_rules(models, seen)
    assert not missing, f"fields without a rule in magpie_mcp.fields.RULES: {missing}"
    assert "RayConfig" in {m.__name__ for m in seen}  # plugin blocks are walked too


def test_every_text_field_of_the_benchmark_config_models_has_a_policy_rule():
    """The same for serving-benchmark configs (the benchmark tool takes a benchmark YAML): BenchmarkConfig,
    its nested models, and the blocks plugins add to benchmark: and benchmark.profiler:."""
    from magpie_benchmark.config import BenchmarkConfig

    seen: set[type] = set()
    blocks = [*config_blocks("benchmark").values(), *config_blocks("benchmark.profiler").values()]
    missing = _missing_rules([BenchmarkConfig, *(block.model for block in blocks)], seen)
    assert not missing, f"fields without a rule in magpie_mcp.fields.RULES: {missing}"
    names = {m.__name__ for m in seen}
    assert {"BenchmarkRayConfig", "GapAnalysisConfig", "QualityGateConfig", "TargetedTraceConfig"} <= names


def _check_benchmark(policy: TrustPolicy, data: dict[str, Any]) -> None:
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_mcp.trust import check_benchmark_config

    check_benchmark_config(policy, BenchmarkConfig.model_validate({"framework": "vllm", "run_mode": "local", **data}))


def test_benchmark_configs_go_through_the_same_rules(setup):
    policy, root, outside = setup
    cases = {
        "envs (exported to the server): LD_PRELOAD is not a variable": {"envs": {"LD_PRELOAD": "/x.so"}},
        "envs.EXTRA_VLLM_ARGS: this setting": {"envs": {"EXTRA_VLLM_ARGS": "--middleware evil"}},
        "envs.MAGPIE_EVAL_PYTHON: this server runs only": {"envs": {"MAGPIE_EVAL_PYTHON": "/x/python"}},
        "envs.BENCHMARK_BASE_URL": {"envs": {"BENCHMARK_BASE_URL": "http://10.1.2.3:8000"}},
        "benchmark server_args: this setting": {"server_args": ["--worker-extension-cls", "evil.Ext"]},
        "benchmark server_env: CXX": {"server_env": {"CXX": "/x/cc"}},
        "benchmark server_python": {"server_python": "/x/python"},
        "benchmark model": {"model": str(outside)},
        "benchmark tokenizer": {"tokenizer": "../../outside/tok"},
        "benchmark docker_image": {"run_mode": "docker", "docker_image": "evil:latest"},
        "benchmark dataset.url": {"dataset": {"name": "trace", "url": "http://10.0.0.1/t.jsonl"}},
        "benchmark dataset.path": {"dataset": {"name": "jsonl", "path": str(outside / "d.jsonl")}},
        "benchmark server_lifecycle.pid_dir": {"server_lifecycle": {"enabled": True, "pid_dir": str(root)}},
        "benchmark host": {"host": "0.0.0.0"},
        "benchmark quality_gate.python": {"quality_gate": {"tasks": ["gsm8k"], "python": "/x/python"}},
        "benchmark quality_gate.extra_args": {"quality_gate": {"tasks": ["gsm8k"], "extra_args": ["--x"]}},
        "benchmark ray_config.cluster_address": {"ray_config": {"cluster_address": "10.0.0.1:6379"}},
        "benchmark ray_config.pip_packages": {
            "ray_config": {"cluster_address": "local", "shared_storage_path": str(root), "pip_packages": ["evil"]}
        },
        "benchmark gap_analysis.repos_base_dir": {"gap_analysis": {"repos_base_dir": str(outside)}},
        "benchmark profiler.system_profiler.profile_args": {"profiler": {"system_profiler": {"profile_args": ["-x"]}}},
    }
    for expected, data in cases.items():
        with pytest.raises(TrustError, match=re.escape(expected)):
            _check_benchmark(policy, data)
    # what a client may choose: a hub model, the load, allowlisted server variables, files under a root
    (root / "model").mkdir()
    fine = {"model": "Qwen/Qwen2.5-0.5B", "envs": {"TP": 1, "CONC": 4, "OMP_NUM_THREADS": "4"}, "tokenizer": "model"}
    _check_benchmark(policy, {**fine, "dataset": {"name": "jsonl", "path": str(root / "d.jsonl")}})
    wide = TrustPolicy.from_roots([root], root, allow_env=frozenset({"VLLM_*"}), benchmark_hosts=("gpu-box",))
    _check_benchmark(wide, {"envs": {"VLLM_USE_V1": "1"}, "base_url": "http://gpu-box:8000", "run_mode": "external"})


def _check(policy: TrustPolicy, data: dict[str, Any], folder: Path) -> KernelConfigFile:
    return policy.check_kernel_file(KernelConfigFile.model_validate(data), folder)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[TrustPolicy, Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "evil.py").write_text("def get_inputs():\n    return []\n")
    return TrustPolicy.from_roots([root], root), root, outside


def test_the_second_reviews_bypasses_are_refused(setup):
    policy, root, outside = setup
    kernel = {"id": "k", "entry": "torch:add"}
    cases = {
        # 1. torch.compile options reach the C++ compiler; env is an allowlist now
        "options.torch_compile.TorchCompileOptions.options": {
            "kernel": {**kernel, "options": {"torch_compile": {"options": {"cpp.cxx": [None, str(outside)]}}}}
        },
        "env: CXX is not a variable a client may set": {"kernel": {**kernel, "env": {"CXX": "/x/cc"}}},
        "env: TORCHINDUCTOR_CACHE_DIR": {"kernel": {**kernel, "env": {"TORCHINDUCTOR_CACHE_DIR": str(outside)}}},
        "env: NVCC_PREPEND_FLAGS": {"kernel": {**kernel, "env": {"NVCC_PREPEND_FLAGS": "-ccbin /x"}}},
        # 2. every callable field, bench_target's included
        "bench_target.get_inputs": {
            "kernel": {
                **kernel,
                "bench_target": {"module": "torch", "callable": "add", "get_inputs": f"{outside}/evil.py:get_inputs"},
            }
        },
        "get_init_inputs file": {"kernel": {**kernel, "get_init_inputs": f"{outside}/evil.py:f"}},
        "latency.bench_target.module": {
            "kernel": kernel,
            "latency": {"bench_target": {"module": str(outside / "evil.py"), "callable": "f"}},
        },
        # 3. a top-level ray_config: the cluster and shared storage
        "ray_config.cluster_address": {"kernel": kernel, "ray_config": {"cluster_address": "ray://203.0.113.9:10001"}},
        "ray_config.shared_storage_path": {"kernel": kernel, "ray_config": {"shared_storage_path": str(outside)}},
        "scheduler.ray_config.cluster_address": {
            "kernel": kernel,
            "scheduler": {"ray_config": {"cluster_address": "10.0.0.1:6379"}},
        },
        # 6. sizes: the field is named
        "kernel id: 8388608 characters": {"kernel": {**kernel, "id": "x" * 8 * 2**20}},
        "env.OMP_NUM_THREADS: 8388608 characters": {"kernel": {**kernel, "env": {"OMP_NUM_THREADS": "1" * 8 * 2**20}}},
        "must be a plain name": {"kernel": {**kernel, "id": "../../escape"}},
        # profiler option blocks carry profiler command-line arguments
        "performance.ncu": {"kernel": kernel, "performance": {"ncu": {"extra_args": ["--injection-path", "/x"]}}},
    }
    for expected, data in cases.items():
        with pytest.raises(TrustError, match=expected.replace(".", r"\.")):
            _check(policy, data, root)


def test_allowed_choices_pass_and_the_operator_widens_them(setup):
    policy, root, _ = setup
    typed = {"torch_compile": {"mode": "max-autotune", "fullgraph": True, "dynamic": False}, "arch": "sm_90"}
    data = {
        "kernel": {"id": "k", "entry": "torch:add", "env": {"CUDA_LAUNCH_BLOCKING": "1"}, "options": typed},
        "ray_config": {"cluster_address": "local", "shared_storage_path": str(root)},
    }
    checked = _check(policy, data, root)
    assert checked.kernel is not None and checked.kernel.options["torch_compile"]["mode"] == "max-autotune"
    wide = TrustPolicy.from_roots(
        [root], root, allow_env=frozenset({"VLLM_*"}), backend_options=True, ray_addresses=("10.0.0.1:6379",)
    )
    free = {"torch_compile": {"options": {"max_autotune": True}}}
    data = {
        "kernel": {"id": "k", "entry": "torch:add", "env": {"VLLM_USE_V1": "1"}, "options": free},
        "ray_config": {"cluster_address": "10.0.0.1:6379"},
    }
    assert _check(wide, data, root).kernel.options == free  # type: ignore[union-attr]


def test_bypasses_through_a_real_client_session(tmp_path: Path):
    from magpie_mcp.testing import call_error, run_session, write_workspace

    from tests.conftest import DATA

    kernels = DATA / "kernels"
    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", kernels])
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "get_inputs.yaml").write_text(
        "kernel:\n  id: k\n  entry: torch:add\n  bench_target:\n    module: torch\n    callable: add\n"
        f"    get_inputs: {outside}/evil.py:get_inputs\n"
    )
    (ws / "ray.yaml").write_text(
        "kernel:\n  id: k\n  entry: torch:add\nray_config:\n  cluster_address: 10.9.9.9:6379\n"
    )
    (ws / "broken.json").write_text("{ not a trace")
    # AMD Magpie's benchmark YAML: envs it does not read reach the server's environment; EXTRA_VLLM_ARGS its argv
    (ws / "preload.yaml").write_text(
        "benchmark:\n  framework: vllm\n  model: Qwen/Qwen2.5-0.5B\n  run_mode: local\n"
        f"  envs:\n    TP: 1\n    LD_PRELOAD: {outside}/evil.so\n"
    )
    (ws / "args.yaml").write_text(
        "benchmark:\n  framework: vllm\n  model: Qwen/Qwen2.5-0.5B\n  run_mode: local\n"
        "  envs:\n    EXTRA_VLLM_ARGS: --middleware evil.mw\n"
    )
    inline = {"config_dir": str(kernels)}

    async def scenario(s: Any) -> None:
        evil = {"torch_compile": {"options": {"cpp.cxx": [None, str(outside / "evilcxx")]}}}
        msg = await call_error(
            s, "analyze", {**inline, "kernels": [{"id": "k", "entry": "faulty.py:good", "options": evil}]}
        )
        assert "options.torch_compile" in msg
        msg = await call_error(
            s, "analyze", {**inline, "kernels": [{"id": "k", "entry": "faulty.py:good", "env": {"CXX": "x"}}]}
        )
        assert "env: CXX is not a variable a client may set" in msg
        msg = await call_error(s, "analyze", {"kernel_config": str(ws / "get_inputs.yaml")})
        assert "bench_target.get_inputs" in msg and "outside the allowed workspace roots" in msg
        msg = await call_error(s, "analyze", {"kernel_config": str(ws / "ray.yaml")})
        assert "ray_config.cluster_address" in msg
        msg = await call_error(s, "analyze", {**inline, "kernels": [{"id": "x" * 2**20, "entry": "faulty.py:good"}]})
        assert "kernels.0.id: 1048576 characters, more than this server accepts" in msg
        msg = await call_error(s, "benchmark", {"benchmark_config": str(ws / "preload.yaml")})
        assert "envs (exported to the server): LD_PRELOAD is not a variable a client may set" in msg
        msg = await call_error(s, "benchmark", {"benchmark_config": str(ws / "args.yaml")})
        assert "benchmark envs.EXTRA_VLLM_ARGS: this setting" in msg
        msg = await call_error(s, "benchmark", {"framework": "vllm", "model": str(outside), "run_mode": "local"})
        assert "benchmark model" in msg and "outside the allowed workspace roots" in msg
        msg = await call_error(s, "gap_analysis", {"trace_path": str(ws / "broken.json")})
        assert "the trace could not be analyzed" in msg and "broken JSON" in msg

    run_session(ws, scenario)
