"""Which rule of the trust policy covers each field of a kernel config and of a serving-benchmark config, and
the typed backend options a client may pass.

Every field of the kernel config models (and of the plugin blocks a kernel file may hold, such as
``ray_config:``) and of the benchmark config models (``BenchmarkConfig``, its nested models and the blocks of
``benchmark:`` and ``benchmark.profiler:``: ``gap_analysis``, ``quality_gate``, ``ray_config``,
``targeted_trace``) that can hold text has a rule here; :meth:`TrustPolicy.check_field
<magpie_mcp.trust.TrustPolicy.check_field>` is the one function that applies them. A field without a
rule is refused at run time when it holds text (fail closed), and ``test_mcp_policy.py`` walks the
models and fails when one is missing, so a new path- or command-like field cannot slip through.
"""

from __future__ import annotations

import fnmatch
import types
import typing
from collections.abc import Collection, Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: how the policy treats a field's value
Rule = Literal[
    "text",  # free text (a description, a plugin name): only its size is limited
    "name",  # a kernel id: it becomes part of file names, so no path separators
    "path",  # a file or folder, relative to the kernel's working folder: must be under a root
    "config_path",  # the same, relative to the kernel config's folder
    "callable",  # 'module:attr' or 'file.py:attr' (or a bare attribute name): the module is checked
    "module",  # a module name or file (bench_target.module)
    "command",  # argv list(s): the program must be one the operator allowed
    "env",  # environment variables for the kernel: names on the allowlist only
    "options",  # backend options: the typed ClientOptions below
    "ray_address",  # a Ray cluster to connect to: local, or one the operator listed
    "operator",  # a setting only the operator makes (container image, GPU clocks, profiler options)
    "model",  # a model to serve: a hub id (org/name), or a local folder that must be under a root
    "url",  # a server to send load to: loopback or a host the operator lists (mcp.benchmark_hosts)
    "loopback_host",  # the address a server magpie starts binds: loopback only
    "benchmark_envs",  # AMD Magpie's envs: each key by BENCHMARK_ENV_RULES; the rest reach the server's env
]

#: (model class name, field name) -> rule; "*" stands for the keys a model accepts beyond its fields
RULES: dict[tuple[str, str], Rule] = {
    ("KernelConfigFile", "baseline"): "text",
    ("KernelConfigFile", "gpu"): "operator",
    ("KernelConfig", "id"): "name",
    ("KernelConfig", "type"): "text",
    ("KernelConfig", "description"): "text",
    ("KernelConfig", "source_files"): "path",
    ("KernelConfig", "working_dir"): "config_path",
    ("KernelConfig", "env"): "env",
    ("KernelConfig", "compile_command"): "command",
    ("KernelConfig", "testcase_command"): "command",
    ("KernelConfig", "prof_command"): "command",
    ("KernelConfig", "entry"): "callable",
    ("KernelConfig", "reference"): "callable",
    ("KernelConfig", "get_inputs"): "callable",
    ("KernelConfig", "get_init_inputs"): "callable",
    ("KernelConfig", "get_inputs_func"): "callable",
    ("KernelConfig", "get_init_inputs_func"): "callable",
    ("KernelConfig", "device"): "text",
    ("KernelConfig", "options"): "options",
    ("BenchTarget", "module"): "module",
    ("BenchTarget", "callable"): "callable",
    ("BenchTarget", "get_inputs"): "callable",
    ("CorrectnessConfig", "backend"): "text",
    ("PerformanceConfig", "backend"): "text",
    # profiler option blocks (ncu:, metrix:, ...) carry extra arguments for the profiler's command line
    ("PerformanceConfig", "*"): "operator",
    ("LatencyConfig", "method"): "text",
    ("LatencyConfig", "primary_metric"): "text",
    ("LatencyConfig", "kernel_filter"): "text",
    ("LatencyConfig", "pythonpath"): "config_path",
    ("LatencyConfig", "output_dir"): "config_path",
    ("SchedulerConfig", "docker_image"): "operator",
    ("SchedulerConfig", "environment"): "text",
    ("RayConfig", "cluster_address"): "ray_address",
    ("RayConfig", "shared_storage_path"): "config_path",
    # the pytorch plugin's kernelbench: block: Python files that are imported and run, so under a root
    ("KernelBenchBlock", "reference"): "config_path",
    ("KernelBenchBlock", "solutions"): "config_path",
    # --- serving benchmarks (magpie_benchmark.config and the blocks plugins add to it) ---
    ("BenchmarkConfig", "framework"): "text",  # a plugin name, looked up in the registry
    ("BenchmarkConfig", "model"): "model",
    ("BenchmarkConfig", "tokenizer"): "model",
    ("BenchmarkConfig", "precision"): "text",
    ("BenchmarkConfig", "run_mode"): "text",  # a core mode or an installed environment, validated by the model
    ("BenchmarkConfig", "envs"): "benchmark_envs",
    ("BenchmarkConfig", "docker_image"): "operator",
    ("BenchmarkConfig", "gpu_arch"): "text",
    ("BenchmarkConfig", "inferencex_path"): "path",
    ("BenchmarkConfig", "hf_cache_path"): "path",
    ("BenchmarkConfig", "runner_type"): "text",
    ("BenchmarkConfig", "benchmark_script"): "operator",
    ("BenchmarkConfig", "lm_eval_runtime"): "operator",  # AMD Magpie's runtime for lm-eval (images, pythons)
    ("BenchmarkConfig", "agentx"): "text",  # on/off and a concurrency; the trace itself is dataset.path/url
    ("BenchmarkConfig", "run_cmd"): "command",
    ("BenchmarkConfig", "base_url"): "url",
    ("BenchmarkConfig", "host"): "loopback_host",
    # free server arguments can load code (vLLM --middleware, --worker-extension-cls, --trust-remote-code)
    ("BenchmarkConfig", "server_args"): "operator",
    ("BenchmarkConfig", "server_env"): "env",
    ("BenchmarkConfig", "server_python"): "command",
    ("BenchmarkConfig", "framework_options"): "operator",  # free options of the framework plugin
    ("BenchmarkConfig", "served_model_name"): "text",
    ("BenchmarkConfig", "dtype"): "text",
    ("SystemProfilerConfig", "profile_args"): "operator",
    ("TraceLensConfig", "analysis_mode"): "text",
    ("TraceLensConfig", "analysis_stages"): "text",
    ("TraceLensConfig", "export_format"): "text",
    ("TraceLensConfig", "gpu_arch_config"): "path",
    ("TraceLensConfig", "tracelens_repo_path"): "path",
    ("TraceLensConfig", "extension_wheel_path"): "path",
    ("DatasetConfig", "path"): "path",
    ("DatasetConfig", "url"): "operator",  # the server would download from a host the client chose
    ("DatasetConfig", "sha256"): "text",
    ("ServerLifecycleConfig", "pid_dir"): "operator",  # its records name process groups magpie stops
    ("LoadConfig", "extra_body"): "text",  # JSON sent to the benchmarked (loopback or allowed) server
    ("GapAnalysisConfig", "categories"): "text",
    ("GapAnalysisConfig", "ignore_categories"): "text",
    ("GapAnalysisConfig", "kernel_source_repos"): "path",
    ("GapAnalysisConfig", "repos_base_dir"): "path",
    ("GapAnalysisConfig", "window_annotation"): "text",
    ("QualityGateConfig", "tasks"): "text",
    ("QualityGateConfig", "include_path"): "path",  # task YAMLs may name Python functions: under a root
    ("QualityGateConfig", "thresholds"): "text",
    ("QualityGateConfig", "primary_metric"): "text",
    ("QualityGateConfig", "policy_id"): "text",
    ("QualityGateConfig", "tokenizer"): "model",
    ("QualityGateConfig", "gen_kwargs"): "text",
    ("QualityGateConfig", "python"): "command",
    ("QualityGateConfig", "extra_args"): "operator",
    ("BenchmarkRayConfig", "cluster_address"): "ray_address",
    ("BenchmarkRayConfig", "shared_storage_path"): "config_path",
    ("BenchmarkRayConfig", "pip_packages"): "operator",  # installed into the job's runtime
    ("BenchmarkRayConfig", "env_vars"): "env",
    ("BenchmarkRayConfig", "metadata"): "text",
    ("BenchmarkRayConfig", "magpie_install_path"): "path",
    ("TargetSpec", "target_id"): "text",
    ("TargetSpec", "name_patterns"): "text",
    ("TargetSpec", "variant_id"): "text",
    ("TargetSpec", "package"): "text",
    ("TargetSpec", "source_hashes"): "text",
    ("TargetSpec", "provenance_hashes"): "text",
    ("TargetSource", "path"): "path",
    ("TargetSource", "function"): "text",
    ("TargetSource", "sha256"): "text",
    ("TargetedTraceConfig", "backend"): "text",
    ("TargetedTraceConfig", "run_seed"): "text",
    # plain choices, already closed by the block's model (train | eval, kernelbench | kernelbench-v0)
    ("KernelBenchBlock", "mode"): "text",
    ("KernelBenchBlock", "tolerance"): "text",
}

#: benchmark ``envs`` keys magpie reads that name code, files or servers; the other keys magpie reads
#: (``magpie_benchmark.amd_magpie.CONSUMED``: TP, CONC, ISL, ...) are numbers and names ("text"), and every key it
#: does not read is exported to the server's environment, so it must pass the client env allowlist ("env")
BENCHMARK_ENV_RULES: dict[str, Rule] = {
    "MAGPIE_EVAL_PYTHON": "command",
    "EVAL_TASKS_DIR": "path",
    "BENCHMARK_BASE_URL": "url",
}
#: ``envs`` keys holding extra server command-line arguments (EXTRA_SERVER_ARGS, EXTRA_VLLM_ARGS, ...)
SERVER_ARGS_ENV = "EXTRA_*ARGS"

#: the longest text a field of each rule may hold (an 8 MiB kernel id must not reach a file name)
MAX_CHARS: dict[str, int] = {"name": 128, "path": 4096, "config_path": 4096, "env": 4096, "module": 1024}
MAX_TEXT_CHARS = 16_384


def rule_for(owner: type[BaseModel] | str, name: str) -> Rule | None:
    """The rule of ``owner.name``; a field that can hold only numbers, booleans or one of a fixed set of
    strings (``Literal``, checked by the model) is plain text to the policy, wherever it is."""
    if isinstance(owner, str):
        return RULES.get((owner, name))
    rule = RULES.get((owner.__name__, name))
    field = owner.model_fields.get(name)
    if rule is None and field is not None and closed(field.annotation):
        return "text"
    return rule


def closed(annotation: Any) -> bool:
    """``annotation`` admits only numbers, booleans, None and ``Literal`` values (lists and unions of them)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return closed(typing.get_args(annotation)[0])
    if origin is Literal:
        return True
    if origin in (typing.Union, types.UnionType, list, tuple):
        return all(closed(arg) for arg in typing.get_args(annotation))
    return annotation in (int, float, bool, type(None))


def benchmark_env_rule(key: str, consumed: Collection[str]) -> Rule:
    """The rule of one benchmark ``envs`` key (``consumed``: the keys magpie reads itself)."""
    if key in BENCHMARK_ENV_RULES:
        return BENCHMARK_ENV_RULES[key]
    if fnmatch.fnmatchcase(key, SERVER_ARGS_ENV):
        return "operator"
    return "text" if key in consumed else "env"


def walk(
    model: BaseModel, prefix: str = "", skip: frozenset[str] = frozenset()
) -> Iterator[tuple[type[BaseModel], str, Any, str]]:
    """``(model class, field, value, dotted path)`` of every field of ``model`` that holds a value.

    Nested models are walked into (their fields are the leaves); the keys a model holds beyond its
    fields (plugin blocks, profiler blocks) are walked when they are models and yielded as ``"*"`` else.
    """
    owner = type(model)
    fields = [(name, getattr(model, name), name) for name in type(model).model_fields if name not in skip]
    extras = [(key, value, "*") for key, value in (model.model_extra or {}).items()]
    for key, value, name in [*fields, *extras]:
        where = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, BaseModel):
            yield from walk(value, f"{where}.")
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            for i, item in enumerate(value):
                yield from walk(item, f"{where}.{i}.")
        else:
            yield owner, name, value, where


def strings(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every string in ``value``: mapping keys and values, list items, model fields."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key, f"{where} (a key)")
            yield from strings(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from strings(item, f"{where}.{i}")
    elif isinstance(value, BaseModel):
        yield from strings(value.model_dump(), where)


# --- backend options -----------------------------------------------------------------------

TorchCompileMode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
TorchCompileBackend = Literal["inductor", "eager", "aot_eager", "cudagraphs"]
#: a native launcher argument type (i32, f32, ptr, ...); the backend checks the name itself
NativeType = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,16}$")]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TorchCompileOptions(_Closed):
    """The ``torch.compile`` arguments a client may choose; no ``options`` dict (it reaches the C++ compiler)."""

    mode: TorchCompileMode | None = Field(None, description="torch.compile mode")
    fullgraph: bool = Field(False, description="fail on graph breaks instead of falling back")
    dynamic: bool | None = Field(None, description="compile for dynamic shapes (None: decide automatically)")
    backend: TorchCompileBackend = Field("inductor", description="torch.compile backend")


class ClientOptions(_Closed):
    """Backend options from an MCP client: each one typed and bounded. Compiler flags and free-form
    ``torch.compile`` options are refused unless the operator allows backend options (mcp.allow_backend_options).
    """

    torch_compile: bool | TorchCompileOptions | None = Field(None, description="eager (false) or torch.compile")
    arch: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{1,32}$")] | None = Field(
        None, description="target GPU architecture (sm_90, gfx942, ...)"
    )
    binary: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")] | None = Field(
        None, description="output file name of the build (a plain name)"
    )
    argtypes: list[NativeType] | None = Field(None, max_length=64, description="native launcher's argument types")
    returns_status: bool | None = Field(None, description="the native launcher returns a status code")
    output_args: list[Annotated[int, Field(ge=0, le=1024)]] | None = Field(
        None, max_length=64, description="indices of the arguments the kernel writes"
    )
    compile_timeout_seconds: float | None = Field(None, gt=0, description="compile time limit (capped by the server)")
    harness_launches: int | None = Field(None, ge=1, le=10_000, description="launches profiled by the harness")
    # what a KernelBench check runs under (the pytorch plugin writes them for KernelBench files): plain choices
    module_mode: Literal["train", "eval"] | None = Field(None, description="nn.Module mode of entry and reference")
    tolerance: Literal["kernelbench", "kernelbench-v0"] | None = Field(None, description="tolerance preset")
