"""Benchmark configs for ``magpie benchmark`` (a ``benchmark:`` block).

AMD Magpie's benchmark YAML loads unchanged: ``framework, model, precision,
run_mode, envs {TP, CONC, ISL, OSL, RANDOM_RANGE_RATIO, ...}, profiler
{torch_profiler, tracelens, ...}, gap_analysis {...}`` and the rest. magpie
adds a typed load description (dataset, rate, concurrency, SLOs, sweeps).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from magpie_core.config.common import PluginBlocksModel, StrictModel

DEFAULT_ENVS: dict[str, Any] = {"TP": 1, "CONC": 32, "ISL": 1024, "OSL": 512, "RANDOM_RANGE_RATIO": 0.5}


class TorchProfilerConfig(StrictModel):
    enabled: bool = True


class SystemProfilerConfig(StrictModel):
    enabled: bool = False
    profile_args: list[str] = Field(default_factory=list)


class TraceLensConfig(StrictModel):
    enabled: bool = False
    analysis_mode: Literal["inference", "pytorch"] = "inference"
    analysis_stages: Literal["all", "prefilldecode", "decode", "prefill"] = "all"
    export_format: Literal["csv", "excel"] = "csv"
    perf_report_enabled: bool = True
    multi_rank_report_enabled: bool = True
    gpu_arch_config: str | None = None
    auto_patch_runtime: bool = True
    tracelens_repo_path: str | None = None
    extension_wheel_path: str | None = None
    cli_timeout_seconds: float = 1800


class GpuMonitorConfig(StrictModel):
    enabled: bool = True
    interval_sec: float = 2.0
    device_id: int | None = None


class ProfilerConfig(StrictModel):
    torch_profiler: TorchProfilerConfig = Field(default_factory=TorchProfilerConfig)
    system_profiler: SystemProfilerConfig = Field(default_factory=SystemProfilerConfig)
    tracelens: TraceLensConfig = Field(default_factory=TraceLensConfig)
    gpu_monitor: GpuMonitorConfig = Field(default_factory=GpuMonitorConfig)
    targeted_trace: dict[str, Any] | None = None


class GapAnalysisConfig(StrictModel):
    enabled: bool = False
    trace_start_pct: float = Field(0.0, ge=0, le=100)
    trace_end_pct: float = Field(100.0, ge=0, le=100)
    top_k: int = Field(20, ge=1)
    min_duration_us: float = Field(0.0, ge=0)
    categories: list[str] = Field(default_factory=lambda: ["kernel", "gpu"])
    ignore_categories: list[str] = Field(default_factory=lambda: ["gpu_user_annotation", "user_annotation"])
    find_kernel_sources: bool = False
    kernel_source_repos: list[str] | None = None
    auto_clone_repos: bool = Field(True, description="accepted for AMD Magpie files; magpie clones only with --clone")
    repos_base_dir: str | None = None
    no_rank_csv: bool = False
    # magpie's own
    window_annotation: str | None = Field(
        None, description="analyze only inside record_function / user annotation ranges of this name (glob with *)"
    )
    window_start_us: float | None = Field(None, ge=0, description="window start, microseconds from trace start")
    window_end_us: float | None = Field(None, gt=0, description="window end, microseconds from trace start")
    clone_repos: bool = Field(False, description="let the source finder clone known upstreams (network)")
    workers: int | None = Field(
        None, ge=1, description="processes for ranks; idle ones split a big JSON trace (default: CPU count)"
    )
    top_gaps: int = Field(10, ge=0, description="largest GPU idle gaps reported per device")

    @model_validator(mode="after")
    def _window(self) -> GapAnalysisConfig:
        if self.trace_start_pct >= self.trace_end_pct:
            raise ValueError("trace_start_pct must be below trace_end_pct")
        if (
            self.window_start_us is not None
            and self.window_end_us is not None
            and self.window_start_us >= self.window_end_us
        ):
            raise ValueError("window_start_us must be below window_end_us")
        return self


class GpuSelectionConfig(StrictModel):
    auto: bool = True
    min_free_memory_gb: float = 8.0
    count: int | None = None
    candidates: list[int] | None = None
    devices: list[int] | None = Field(None, description="pin these GPU indices (disables auto)")


class SweepCase(StrictModel):
    CONC: int | None = None
    ISL: int | None = None
    OSL: int | None = None
    NUM_PROMPTS: int | None = None
    RANDOM_RANGE_RATIO: float | None = None
    request_rate: float | None = None


class SweepMatrixConfig(StrictModel):
    cases: list[SweepCase] = Field(default_factory=list)
    on_failure: Literal["continue", "abort"] = "continue"
    inter_client_sleep_s: float = 5
    per_client_timeout_s: float = 1800
    server_ready_timeout_s: float = 2700


class DatasetConfig(StrictModel):
    name: Literal["random", "sharegpt", "jsonl"] = "random"
    path: str | None = None
    input_len: int | None = Field(None, description="default: envs.ISL")
    output_len: int | None = Field(None, description="default: envs.OSL")
    range_ratio: float | None = Field(None, description="default: envs.RANDOM_RANGE_RATIO")
    prefix_len: int = 0
    seed: int = 0


class LoadConfig(StrictModel):
    endpoint: Literal["completions", "chat"] = "completions"
    num_prompts: int | None = Field(None, description="default: envs.NUM_PROMPTS or 10 x concurrency")
    request_rate: float | None = Field(None, description="requests/s; None: unlimited")
    burstiness: float = Field(1.0, gt=0, description="gamma shape; 1.0 is Poisson")
    max_concurrency: int | None = Field(None, description="default: envs.CONC")
    warmup_requests: int = 0
    concurrencies: list[int] | None = Field(None, description="sweep: one point per concurrency")
    request_rates: list[float] | None = Field(None, description="sweep: one point per rate")
    ignore_eos: bool = True
    save_requests: bool = Field(False, description="keep per-request details in the report")
    request_timeout_s: float = Field(
        600.0, gt=0, description="longest wait for any byte of an answer (also bounds the /v1/models query)"
    )
    request_deadline_s: float = Field(
        3600.0, gt=0, description="longest one request may take in all; a stream still running then is an error"
    )
    inter_point_sleep_s: float = Field(0.0, ge=0, description="pause between sweep points")
    diagnostic_num_prompts: int | None = Field(
        None, ge=1, description="requests of the profiled diagnostic run (default: one wave of max_concurrency)"
    )
    extra_body: dict[str, Any] = Field(default_factory=dict, description="extra JSON fields of every request")
    progress: bool = True


class SloConfig(StrictModel):
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None


#: where the core itself can run a server; any other ``run_mode`` names an installed execution environment
CORE_RUN_MODES = ("docker", "local", "external")


class BenchmarkConfig(PluginBlocksModel):
    """The ``benchmark:`` block; environment plugins may own further keys of it (``ray_config:``)."""

    block_scope: ClassVar[str] = "benchmark"

    framework: str | None = Field(None, description="serving framework plugin name")
    model: str = ""
    precision: str = "fp8"
    run_mode: str = Field(
        "docker", description="docker | local | external | the name of an installed execution environment"
    )
    run_kind: Literal["measurement", "diagnostic", "auto"] = "auto"
    envs: dict[str, Any] = Field(default_factory=dict)
    profiler: ProfilerConfig = Field(default_factory=ProfilerConfig)
    gap_analysis: GapAnalysisConfig = Field(default_factory=GapAnalysisConfig)
    docker_image: str | None = None
    gpu_arch: str | None = None
    timeout_seconds: float = 3600.0
    inferencex_path: str | None = Field(None, validation_alias=AliasChoices("inferencex_path", "inferencemax_path"))
    hf_cache_path: str | None = None
    runner_type: str | None = None
    benchmark_script: str | None = None
    gpu_selection: GpuSelectionConfig = Field(default_factory=GpuSelectionConfig)
    sweep_matrix: SweepMatrixConfig | None = None
    lm_eval_runtime: dict[str, Any] | None = None
    # magpie's own
    base_url: str | None = Field(None, description="external server: client only")
    host: str = "127.0.0.1"
    port: int | None = None
    server_args: list[str] = Field(default_factory=list, description="extra server arguments")
    server_env: dict[str, str] = Field(default_factory=dict)
    server_python: str | None = Field(None, description="python that runs a local server (default: the plugin's)")
    server_ready_timeout_s: float = Field(1800.0, gt=0)
    stop_grace_s: float = Field(30.0, ge=0)
    framework_options: dict[str, Any] = Field(default_factory=dict, description="options for the framework plugin")
    tokenizer: str | None = None
    served_model_name: str | None = None
    dtype: str | None = None
    max_model_len: int | None = None
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    load: LoadConfig = Field(default_factory=LoadConfig)
    slo: SloConfig = Field(default_factory=SloConfig)
    repeats: int = Field(1, ge=1, le=100, description="run the measurement this many times (docs/optimization-loop.md)")
    restart_between_repeats: bool = Field(False, description="a fresh server for every repeat (restarts are noise)")

    @field_validator("run_mode")
    @classmethod
    def _known_run_mode(cls, value: str) -> str:
        from magpie_core.plugins import get_plugin_manager

        environments = sorted(set(get_plugin_manager().components("environment")) - set(CORE_RUN_MODES))
        if value not in CORE_RUN_MODES and value not in environments:
            choices = ", ".join([*CORE_RUN_MODES, *environments])
            raise ValueError(f"run_mode {value!r} is not one of {choices} (an environment plugin may add more)")
        return value

    @field_validator("envs", mode="after")
    @classmethod
    def _default_envs(cls, value: dict[str, Any]) -> dict[str, Any]:
        return {**DEFAULT_ENVS, **{str(k).upper(): v for k, v in value.items()}} if value else dict(DEFAULT_ENVS)

    def env_int(self, key: str) -> int | None:
        value = self.envs.get(key)
        return None if value is None else int(value)

    def env_float(self, key: str) -> float | None:
        value = self.envs.get(key)
        return None if value is None else float(value)


class BenchmarkConfigFile(StrictModel):
    benchmark: BenchmarkConfig
