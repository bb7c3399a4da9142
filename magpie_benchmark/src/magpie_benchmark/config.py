"""Benchmark configs for ``magpie benchmark`` (a ``benchmark:`` block).

AMD Magpie's benchmark YAML loads unchanged: ``framework, model, precision,
run_mode, envs {TP, CONC, ISL, OSL, RANDOM_RANGE_RATIO, ...}, profiler
{torch_profiler, tracelens, ...}, gap_analysis {...}`` and the rest. magpie
adds a typed load description (dataset, rate, concurrency, SLOs, sweeps).
Blocks of other plugins' features are theirs (``magpie_register_config_blocks``): ``gap_analysis:``
(the gap analysis plugin), ``profiler.targeted_trace:`` (the targeted-trace plugin), ``quality_gate:``...
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, AliasChoices, Field, field_validator, model_validator

from magpie_benchmark.amd_magpie import UNIMPLEMENTED

if TYPE_CHECKING:
    from magpie_benchmark.loadgen.multimodal import MultiModalSpec
from magpie_core.config.common import (
    MAX_TIMEOUT_S,
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PluginBlocksModel,
    PositiveFloat,
    PositiveInt,
    Seconds,
    StrictModel,
)

#: a pause in seconds: zero or more, finite, at most :data:`MAX_TIMEOUT_S`
PauseSeconds = Annotated[float, Field(ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]
#: a request rate (requests/s): positive; ``inf`` means "all at once"
Rate = Annotated[float, Field(gt=0)]
Port = Annotated[int, Field(ge=1, le=65535)]


def check_http_url(value: str) -> str:
    """``value`` if it is an ``http://`` or ``https://`` URL with a host and a valid port, else ValueError."""
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https"):
        raise ValueError(f"{value!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:8000)")
    if not url.hostname:
        raise ValueError(f"{value!r} has no host (e.g. http://127.0.0.1:8000)")
    if port == 0:
        raise ValueError(f"{value!r}: port 0 is not a port a server listens on")
    return value


HttpUrl = Annotated[str, AfterValidator(check_http_url)]

DEFAULT_ENVS: dict[str, Any] = {"TP": 1, "CONC": 32, "ISL": 1024, "OSL": 512, "RANDOM_RANGE_RATIO": 0.5}


class TorchProfilerConfig(StrictModel):
    """``profiler.torch_profiler``: the profiled diagnostic run and AMD Magpie's capture keys."""

    enabled: bool | None = Field(
        None,
        description="None: on for a benchmark YAML that does not say (AMD Magpie's default), off for a "
        "command-line run (--torch-profiler turns it on) and for an external server",
    )
    num_steps: int | None = Field(None, ge=1, description="engine steps captured per profile (server-side limit)")
    num_profiles: int = Field(1, ge=1, description="captures on the same server, one after another")
    interval_seconds: float = Field(0.0, ge=0, description="pause after one capture's traces are written")
    capture_timeout_seconds: float | None = Field(None, gt=0, description="longest a capture's load may run")
    flush_timeout_seconds: float | None = Field(None, gt=0, description="longest wait for a capture's traces")


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
    cli_timeout_seconds: Seconds = 1800


class GpuMonitorConfig(StrictModel):
    enabled: bool = True
    interval_sec: PositiveFloat = 2.0
    device_id: NonNegativeInt | None = None


class ProfilerConfig(PluginBlocksModel):
    """``profiler:``; plugins may own further keys of it (``targeted_trace:``, from magpie-targeted-trace)."""

    block_scope: ClassVar[str] = "benchmark.profiler"

    torch_profiler: TorchProfilerConfig = Field(default_factory=TorchProfilerConfig)
    system_profiler: SystemProfilerConfig = Field(default_factory=SystemProfilerConfig)
    tracelens: TraceLensConfig = Field(default_factory=TraceLensConfig)
    gpu_monitor: GpuMonitorConfig = Field(default_factory=GpuMonitorConfig)


class GpuSelectionConfig(StrictModel):
    auto: bool = True
    min_free_memory_gb: NonNegativeFloat = 8.0
    count: PositiveInt | None = None
    candidates: list[NonNegativeInt] | None = None
    devices: list[NonNegativeInt] | None = Field(None, description="pin these GPU indices (disables auto)")


class SweepCase(StrictModel):
    CONC: PositiveInt | None = None
    ISL: PositiveInt | None = None
    OSL: PositiveInt | None = None
    NUM_PROMPTS: PositiveInt | None = None
    RANDOM_RANGE_RATIO: Fraction | None = None
    request_rate: Rate | None = None


class SweepMatrixConfig(StrictModel):
    cases: list[SweepCase] = Field(default_factory=list)
    on_failure: Literal["continue", "abort"] = "continue"
    inter_client_sleep_s: PauseSeconds = 5
    per_client_timeout_s: Seconds = 1800
    server_ready_timeout_s: Seconds = 2700


class ImageBucket(StrictModel):
    """One image shape of ``dataset.multimodal.buckets`` (vLLM's bucket_config key (height, width, 1))."""

    height: PositiveInt
    width: PositiveInt
    num_frames: Literal[1] = Field(1, description="1: an image (video buckets are not generated)")
    probability: NonNegativeFloat = 1.0


class MultiModalConfig(StrictModel):
    """``dataset.multimodal``: random images with each prompt, as ``vllm bench serve --dataset-name random-mm``
    (AMD Magpie's ``MM_*`` envs; docs/benchmark.md, Multimodal load)."""

    base_items_per_request: NonNegativeInt = Field(1, description="images per request (MM_BASE_ITEMS_PER_REQUEST)")
    items_range_ratio: Fraction = Field(0.0, description="spread of the image count (MM_ITEMS_RANGE_RATIO)")
    limit_images: NonNegativeInt = Field(255, description="most images per request (MM_LIMIT_IMAGES)")
    buckets: list[ImageBucket] = Field(
        default_factory=lambda: [
            ImageBucket(height=256, width=256, probability=0.5),
            ImageBucket(height=720, width=1280, probability=0.5),
        ],
        min_length=1,
        description="image shapes and their probabilities (MM_IMAGE_HEIGHT / MM_IMAGE_WIDTH: one bucket)",
    )

    def spec(self) -> MultiModalSpec:
        """The load generator's view of this block."""
        from magpie_benchmark.loadgen.multimodal import MultiModalSpec

        buckets = {(b.height, b.width, b.num_frames): b.probability for b in self.buckets}
        return MultiModalSpec(self.base_items_per_request, self.items_range_ratio, self.limit_images, buckets)

    @model_validator(mode="after")
    def _samplable(self) -> MultiModalConfig:
        """Checked when the file loads rather than mid-load (the same conditions vLLM raises on)."""
        spec = self.spec()
        spec.item_range()
        spec.image_buckets()
        return self


class DatasetConfig(StrictModel):
    name: Literal["random", "sharegpt", "jsonl", "trace"] = Field(
        "random", description="trace: replay a trace file's sessions with their timing (load.trace)"
    )
    path: str | None = None
    url: str | None = Field(
        None,
        description="trace: downloaded on first use into $MAGPIE_TRACE_CACHE (default ~/.cache/magpie/traces); "
        "with agentx on, InferenceX's AgentX corpus when neither path nor url is given",
    )
    sha256: str | None = Field(
        None, pattern=r"^[0-9a-fA-F]{64}$", description="trace: the file's expected SHA-256 (checked; recorded always)"
    )
    input_len: PositiveInt | None = Field(None, description="default: envs.ISL")
    output_len: PositiveInt | None = Field(None, description="default: envs.OSL")
    range_ratio: Fraction | None = Field(None, description="default: envs.RANDOM_RANGE_RATIO")
    prefix_len: NonNegativeInt = 0
    seed: int = 0
    multimodal: MultiModalConfig | None = Field(
        None, description="random images with each request (dataset random, chat endpoint)"
    )


class TraceReplayConfig(StrictModel):
    """``load.trace``: how ``dataset.name: trace`` replays ``dataset.path`` (docs/benchmark.md, Trace replay)."""

    format: Literal["auto", "mooncake", "multi_turn", "weka"] = Field(
        "auto",
        description="mooncake: Mooncake / AIPerf mooncake_trace JSONL; multi_turn: AIPerf sessions; "
        "weka: agentic-coding traces (InferenceX's AgentX corpus)",
    )
    time_scale: PositiveFloat = Field(1.0, description="multiplies timestamps and delays (0.5: twice as fast)")
    timing: Literal["trace", "asap"] = Field(
        "trace", description="trace: timestamps and delays kept; asap: sessions start at once, no pauses"
    )
    block_size: PositiveInt = Field(
        512, description="input tokens per hash id (512 in the Mooncake traces; a Weka trace names its own)"
    )
    max_sessions: PositiveInt | None = Field(None, description="replay only the first N sessions (by start time)")


class LoadConfig(StrictModel):
    endpoint: Literal["completions", "chat"] = "completions"
    num_prompts: PositiveInt | None = Field(None, description="default: envs.NUM_PROMPTS or 10 x concurrency")
    request_rate: Rate | None = Field(None, description="requests/s (> 0; .inf: all at once); None: unlimited")
    burstiness: PositiveFloat = Field(1.0, description="gamma shape; 1.0 is Poisson")
    max_concurrency: PositiveInt | None = Field(None, description="default: envs.CONC")
    warmup_requests: NonNegativeInt = 0
    concurrencies: list[PositiveInt] | None = Field(None, min_length=1, description="sweep: one point per concurrency")
    request_rates: list[Rate] | None = Field(None, min_length=1, description="sweep: one point per rate")
    ignore_eos: bool = True
    save_requests: bool = Field(False, description="keep per-request details in the report")
    request_timeout_s: Seconds = Field(600.0, description="longest wait for any byte of an answer")
    request_deadline_s: Seconds = Field(
        3600.0, description="longest one request may take in all; a stream still running then is an error"
    )
    probe_timeout_s: Seconds = Field(
        30.0, description="before the load: longest wait for /v1/models and for one 1-token request, each"
    )
    stall_timeout_s: Seconds | None = Field(
        120.0,
        description="stop a point when no in-flight request got a byte for this long (null: never); "
        "finished requests are kept, the others fail as stalled",
    )
    inter_point_sleep_s: PauseSeconds = Field(0.0, description="pause between sweep points")
    diagnostic_num_prompts: PositiveInt | None = Field(
        None, description="requests of the profiled diagnostic run (default: one wave of max_concurrency)"
    )
    extra_body: dict[str, Any] = Field(default_factory=dict, description="extra JSON fields of every request")
    progress: bool = True
    percentile_metrics: list[Literal["ttft", "tpot", "itl", "e2el"]] = Field(
        default_factory=lambda: ["ttft", "tpot", "itl"], description="metrics whose percentiles are printed"
    )
    metric_percentiles: list[float] = Field(
        default_factory=lambda: [99.0], description="percentiles reported besides p90/p95/p99"
    )
    trace: TraceReplayConfig = Field(default_factory=TraceReplayConfig, description="trace replay settings")


class ServerLifecycleConfig(StrictModel):
    """AMD Magpie's ``server_lifecycle``: keep one server alive across magpie runs (same host and port).

    A run finds the recorded server healthy and matching (model, TP, extra args, max length, framework,
    port) and only drives load; otherwise it starts one and leaves it running. ``cleanup: true`` stops
    the recorded server (its process group, or its container) after the run and removes the record.
    """

    enabled: bool = False
    cleanup: bool = False
    force_reuse: bool = Field(False, description="reuse despite a settings mismatch with the record")
    pid_dir: str | None = Field(None, description="where records live (default ~/.cache/magpie/server/)")
    server_ready_timeout_s: float = Field(2700, gt=0)


class SloConfig(StrictModel):
    ttft_ms: NonNegativeFloat | None = None
    tpot_ms: NonNegativeFloat | None = None
    e2el_ms: NonNegativeFloat | None = None


#: where the core itself can run a server; any other ``run_mode`` names an installed execution environment
CORE_RUN_MODES = ("docker", "local", "external")
#: run modes in which magpie starts the server (a ``base_url`` contradicts them)
SERVER_STARTING_MODES = ("docker", "local")
#: ``envs`` keys read as counts (each a positive integer) and as a fraction
_ENV_COUNTS = ("TP", "CONC", "ISL", "OSL", "NUM_PROMPTS")
_ENV_FRACTIONS = ("RANDOM_RANGE_RATIO",)


def check_envs(envs: dict[str, Any]) -> None:
    """ValueError naming the ``envs`` key whose value magpie would read as a count or fraction and cannot."""
    for key in _ENV_COUNTS:
        value = envs.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not _is_int(value) or not 1 <= int(value) <= 100_000_000:
            raise ValueError(f"envs.{key}: {value!r} is not a positive whole number")
    for key in _ENV_FRACTIONS:
        value = envs.get(key)
        if value is not None and (isinstance(value, bool) or not _in_unit_range(value)):
            raise ValueError(f"envs.{key}: {value!r} is not a number from 0 to 1")


def _is_int(value: Any) -> bool:
    try:
        return float(value) == int(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _in_unit_range(value: Any) -> bool:
    try:
        return 0.0 <= float(value) <= 1.0
    except (TypeError, ValueError):
        return False


class BenchmarkConfig(PluginBlocksModel):
    """The ``benchmark:`` block; plugins may own further keys of it (``gap_analysis:`` from the gap analysis,
    ``ray_config:`` from an environment, ``quality_gate:``)."""

    block_scope: ClassVar[str] = "benchmark"
    #: AMD Magpie keys accepted but not acted on (warned about by name when a file is loaded)
    compat_unimplemented: ClassVar[dict[str, str]] = UNIMPLEMENTED

    framework: str | None = Field(None, description="serving framework plugin name")
    model: str = ""
    precision: str = "fp8"
    run_mode: str = Field(
        "docker", description="docker | local | external | the name of an installed execution environment"
    )
    run_kind: Literal["measurement", "diagnostic", "auto"] = "auto"
    envs: dict[str, Any] = Field(default_factory=dict)
    profiler: ProfilerConfig = Field(default_factory=ProfilerConfig)
    docker_image: str | None = None
    gpu_arch: str | None = None
    timeout_seconds: Seconds = 3600.0
    inferencex_path: str | None = Field(None, validation_alias=AliasChoices("inferencex_path", "inferencemax_path"))
    hf_cache_path: str | None = None
    runner_type: str | None = None
    benchmark_script: str | None = None
    gpu_selection: GpuSelectionConfig = Field(default_factory=GpuSelectionConfig)
    sweep_matrix: SweepMatrixConfig | None = None
    lm_eval_runtime: dict[str, Any] | None = None
    server_lifecycle: ServerLifecycleConfig | None = None
    agentx: bool | str | dict[str, Any] | None = Field(
        None, description="AMD Magpie AgentX: replays InferenceX's agentic-coding trace (or dataset.path) as a trace"
    )
    run_cmd: str | None = Field(
        None, description="AMD Magpie's offline command (framework xdit): run as argv, never through a shell"
    )
    # magpie's own
    base_url: HttpUrl | None = Field(None, description="external server: client only")
    host: str = "127.0.0.1"
    port: Port | None = None
    server_args: list[str] = Field(default_factory=list, description="extra server arguments")
    server_env: dict[str, str] = Field(default_factory=dict)
    server_python: str | None = Field(None, description="python that runs a local server (default: the plugin's)")
    server_ready_timeout_s: Seconds = 1800.0
    stop_grace_s: PauseSeconds = 30.0
    framework_options: dict[str, Any] = Field(default_factory=dict, description="options for the framework plugin")
    tokenizer: str | None = None
    served_model_name: str | None = None
    dtype: str | None = None
    max_model_len: PositiveInt | None = None
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    load: LoadConfig = Field(default_factory=LoadConfig)
    slo: SloConfig = Field(default_factory=SloConfig)
    repeats: int = Field(1, ge=1, le=100, description="run the measurement this many times (docs/optimization-loop.md)")
    restart_between_repeats: bool = Field(False, description="a fresh server for every repeat (restarts are noise)")

    @field_validator("run_cmd")
    @classmethod
    def _splittable(cls, value: str | None) -> str | None:
        """AMD Magpie splits run_cmd like a shell (and runs it without one): an unclosed quote is bad input."""
        if value is None:
            return value
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"{exc}: {value!r}") from None
        if not words:
            raise ValueError("is empty: give the command to benchmark, or leave run_cmd out")
        return value

    @field_validator("run_mode")
    @classmethod
    def _known_run_mode(cls, value: str) -> str:
        from magpie_core.plugins import get_plugin_manager

        environments = sorted(set(get_plugin_manager().components("environment")) - set(CORE_RUN_MODES))
        if value not in CORE_RUN_MODES and value not in environments:
            choices = ", ".join([*CORE_RUN_MODES, *environments])
            raise ValueError(f"run_mode {value!r} is not one of {choices} (an environment plugin may add more)")
        return value

    @model_validator(mode="after")
    def _multimodal_needs_chat(self) -> BenchmarkConfig:
        """Images travel as chat content parts: /v1/completions has no place for them (vLLM's random-mm
        dataset needs the openai-chat backend too)."""
        if self.dataset.multimodal is None:
            return self
        if self.dataset.name != "random" or self.load.endpoint != "chat":
            raise ValueError(
                "dataset.multimodal needs dataset.name random and load.endpoint chat "
                f"(got {self.dataset.name} and {self.load.endpoint})"
            )
        return self

    @model_validator(mode="after")
    def _targeted_trace_is_diagnostic(self) -> BenchmarkConfig:
        """AMD Magpie: targeted traces are diagnostic evidence; a measurement run refuses them."""
        traced = self.profiler.plugin_block("targeted_trace")
        if getattr(traced, "enabled", False) and self.run_kind == "measurement":
            raise ValueError(
                "profiler.targeted_trace is diagnostic: run_kind measurement cannot trace "
                "(set run_kind diagnostic, or auto with the torch profiler on)"
            )
        return self

    @model_validator(mode="after")
    def _lifecycle_rules(self) -> BenchmarkConfig:
        """AMD Magpie's rules for a persistent server (profiled workers do not survive; no sweeps)."""
        lc = self.server_lifecycle
        if lc is None or not lc.enabled:
            return self
        if self.run_mode not in ("local", "docker"):
            raise ValueError("server_lifecycle.enabled needs run_mode local or docker")
        if self.profiler.torch_profiler.enabled and not lc.cleanup:
            raise ValueError(
                "server_lifecycle with cleanup: false cannot profile (set profiler.torch_profiler.enabled: false, "
                "or cleanup: true so the profiled server stops with the run)"
            )
        if self.sweep_matrix and self.sweep_matrix.cases:
            raise ValueError("server_lifecycle cannot be combined with sweep_matrix.cases")
        return self

    @field_validator("envs", mode="after")
    @classmethod
    def _default_envs(cls, value: dict[str, Any]) -> dict[str, Any]:
        envs = {**DEFAULT_ENVS, **{str(k).upper(): v for k, v in value.items()}} if value else dict(DEFAULT_ENVS)
        check_envs(envs)
        return envs

    @model_validator(mode="before")
    @classmethod
    def _base_url_means_external(cls, data: Any) -> Any:
        """A ``base_url`` names a server that is already running: no ``run_mode`` means external, and a mode in
        which magpie starts the server itself contradicts it."""
        if isinstance(data, dict) and data.get("base_url"):
            mode = data.get("run_mode")
            if mode is None:
                return {**data, "run_mode": "external"}
            if mode in SERVER_STARTING_MODES:
                raise ValueError(
                    f"base_url is a server that is already running, but run_mode {mode!r} starts one: "
                    "drop base_url, or use run_mode external"
                )
        return data

    def env_int(self, key: str) -> int | None:
        value = self.envs.get(key)
        return None if value is None else int(value)

    def env_float(self, key: str) -> float | None:
        value = self.envs.get(key)
        return None if value is None else float(value)


class BenchmarkConfigFile(StrictModel):
    compat_unimplemented: ClassVar[dict[str, str]] = {f"benchmark.{key}": why for key, why in UNIMPLEMENTED.items()}

    benchmark: BenchmarkConfig
