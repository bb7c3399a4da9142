"""Kernel configs for ``magpie analyze`` and ``magpie compare``.

AMD Magpie kernel YAML loads unchanged: ``kernel:``/``kernels:`` entries with ``id, type, source_files, working_dir,
env, testcase_command, compile_command`` and the ``performance:``, ``correctness:``, ``scheduler:``, ``latency:``
blocks. magpie adds the built-in harness (``entry``, ``reference``, ``get_inputs``), per-kernel tolerances and timing
settings, and an explicit ``baseline``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from magpie_core.config.amd_magpie import DEFAULT_KERNEL_TYPE
from magpie_core.config.common import (
    MAX_COUNT,
    UNKNOWN_KEY,
    CommandSpec,
    NonNegativeFloat,
    NonNegativeInt,
    PluginBlocksModel,
    PositiveFloat,
    PositiveInt,
    Seconds,
    StrictModel,
    as_argv_list,
)

#: the longest warm-up a config may ask for (a minute; 1e12 ms would hold a GPU for 30 years)
MAX_WARMUP_MS = 60_000.0
#: file suffixes of kernel sources: an ``entry`` ending in one names a file, not the function to call in it
_SOURCE_SUFFIXES = (".py", ".cu", ".hip", ".cpp", ".cc", ".c", ".cuh", ".h", ".hpp")


class BenchTarget(StrictModel):
    """AMD Magpie's ``bench_target``: a Python callable to time."""

    module: str
    callable: str
    get_inputs: str = "get_inputs"


class AccordoConfig(StrictModel):
    """AMD Magpie's accordo tolerances (used by the harness)."""

    atol: NonNegativeFloat = Field(1e-6, description="absolute tolerance")
    rtol: NonNegativeFloat = Field(1e-5, description="relative tolerance")
    equal_nan: bool = Field(False, description="NaN in the same places counts as equal")
    timeout_seconds: Seconds = Field(30, description="time limit of the check")


class CorrectnessConfig(StrictModel):
    """How a kernel proves it is correct."""

    backend: str = Field(
        "auto",
        description="auto | testcase | harness | accordo (accordo is accepted for AMD Magpie files; "
        "its tolerances are used by the harness)",
    )
    atol: NonNegativeFloat | None = Field(None, description="absolute tolerance; default per output dtype")
    rtol: NonNegativeFloat | None = Field(None, description="relative tolerance; default per output dtype")
    equal_nan: bool = Field(False, description="NaN in the same places counts as equal")
    trials: PositiveInt = Field(3, description="freshly seeded input sets to check")
    seed: int = Field(0, description="random seed of the first input set (the next trials add 1, 2, ...)")
    poison_outputs: bool = Field(True, description="NaN-fill outputs before each run so unwritten elements fail")
    timeout_seconds: Seconds = Field(300, description="time limit of the correctness check")
    accordo: AccordoConfig | None = Field(None, description="AMD Magpie's accordo block (its tolerances)")


class PerformanceConfig(StrictModel):
    """How a kernel is timed, and which profiler (if any) collects counters.

    Keys whose values are mappings and that are not fields below are option blocks for profiler plugins (AMD Magpie's
    per-profiler blocks such as ``metrix:``); they are checked by the profiler that is selected."""

    model_config = StrictModel.model_config | {"extra": "allow"}

    backend: str = Field("events", description="events | none | the name of a profiler plugin")
    timeout_seconds: Seconds = Field(300, description="time limit of timing one kernel")
    warmup_ms: NonNegativeFloat = Field(25, le=MAX_WARMUP_MS, description="warm-up time before sampling")
    min_samples: int = Field(10, ge=3, le=MAX_COUNT, description="timing samples taken at least")
    max_samples: int = Field(1000, ge=3, le=MAX_COUNT, description="timing samples taken at most")
    target_rse: PositiveFloat = Field(
        0.01, description="stop when the relative standard error of the median is below this"
    )
    budget_seconds: Seconds = Field(10, description="time budget for sampling one kernel")
    min_batch_us: PositiveFloat = Field(
        1000, description="launches are batched between two timestamps until a batch lasts this long"
    )
    flush_cache: bool = Field(True, description="flush the last-level cache between samples")
    graph_replay: bool = Field(False, description="capture the launches in a device graph and time replays")
    copy_memory_mib: PositiveInt | None = Field(
        None,
        description="memory one worker process's rotating input copies may take (default, in a compare: "
        "half the machine's free memory, shared by its processes)",
    )
    rounds: PositiveInt = Field(
        3,
        description="compare: timing is split into rounds run in turn over all candidates (A B C, B C A, ...), "
        "so drift and background load hit every candidate alike; each round gets budget_seconds / rounds",
    )
    processes: PositiveInt | None = Field(
        None,
        description="compare: independent worker processes per kernel, each with its own random memory layout; "
        "the spread between them is part of every speedup's interval (default: 2, or 3 while kernels x 3 <= CPUs)",
        le=16,
    )
    enabled: bool = Field(True, description="false: check correctness only, no timing")
    call_trials: NonNegativeInt = Field(0, le=10_000, description="compare: also this many single synchronized calls")

    @model_validator(mode="after")
    def _samples_in_order(self) -> PerformanceConfig:
        if self.min_samples > self.max_samples:
            raise ValueError(f"min_samples ({self.min_samples}) must not exceed max_samples ({self.max_samples})")
        return self

    @model_validator(mode="after")
    def _profiler_blocks_are_mappings(self) -> PerformanceConfig:
        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, dict):  # a mistyped field: reported at its own line, with "did you mean"
                known = list(type(self).model_fields)
                raise PydanticCustomError(UNKNOWN_KEY, "unknown key {key!r}", {"key": key, "known": known})
        return self

    def profiler_options(self, name: str) -> dict[str, Any]:
        """Options for profiler ``name``; a dashed name also finds its underscored block."""
        extra = self.model_extra or {}
        return dict(extra.get(name) or extra.get(name.replace("-", "_")) or {})


class LatencyConfig(StrictModel):
    """AMD Magpie's ``latency:`` block; mapped onto the performance settings."""

    enabled: bool = True
    method: str = "auto"
    primary_metric: str = "wall_median_ms"
    rep_ms: NonNegativeFloat = 20
    n_retries: NonNegativeInt = 5
    estimate_reps: PositiveInt = 5
    warmup_iters: NonNegativeInt = 5
    seed: int = 42
    kernel_filter: str | None = None
    bench_target: BenchTarget | None = None
    pythonpath: list[str] = Field(default_factory=list)
    timeout_seconds: Seconds = 120
    output_dir: str | None = None


class CompilingConfig(StrictModel):
    """AMD Magpie's ``compiling:``. false: a kernel without ``compile_command`` is not compiled by its
    backend (its testcase builds it), as in AMD Magpie; magpie's default is true (AMD Magpie's is false)."""

    enable_default_compile: bool = True


class SchedulerConfig(PluginBlocksModel):
    """Where a kernel file's work runs; environment plugins may own extra blocks here (``ray_config:``)."""

    block_scope: ClassVar[str] = "kernel_file"

    max_workers: PositiveInt | None = None
    gpu_devices: list[NonNegativeInt] | None = None
    docker_image: str | None = None
    environment: str | None = None


class KernelConfig(StrictModel):
    """One kernel (or one variant in a comparison)."""

    id: str = "kernel"
    type: str = Field(DEFAULT_KERNEL_TYPE, description="the kernel backend plugin's type (AMD Magpie's default: hip)")
    description: str | None = None
    source_files: list[str] = Field(default_factory=list)
    working_dir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    compile_command: CommandSpec | None = None
    testcase_command: CommandSpec | None = None
    prof_command: CommandSpec | None = None
    # Built-in harness (KernelBench style)
    entry: str | None = Field(None, description="'module:function' or 'file.py:function' (or a class)")
    reference: str | None = Field(None, description="reference implementation, same forms as entry")
    get_inputs: str | None = Field(None, description="function returning the inputs (default get_inputs)")
    get_init_inputs: str | None = Field(None, description="function returning constructor args")
    get_inputs_func: str | None = None  # AMD Magpie spelling
    get_init_inputs_func: str | None = None  # AMD Magpie spelling
    bench_target: BenchTarget | None = None
    device: str | None = Field(None, description="cpu, cuda, cuda:1, ... (default: the backend's)")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific options")
    correctness: CorrectnessConfig | None = None
    performance: PerformanceConfig | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _env_values_as_text(cls, value: Any) -> Any:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else value

    @field_validator("entry", "reference")
    @classmethod
    def _file_names_a_function(cls, value: str | None) -> str | None:
        if value and ":" not in value and value.endswith(_SOURCE_SUFFIXES):
            stem = value.rsplit("/", 1)[-1].split(".", 1)[0]
            raise ValueError(
                f"{value!r} names a file but no function: write '{value}:NAME' with the function (or class) "
                f"to call, e.g. '{value}:{stem}'"
            )
        return value

    @field_validator("type")
    @classmethod
    def _normalize_type(cls, value: str) -> str:
        return value.strip().lower()

    def compile_commands(self) -> list[list[str]]:
        return as_argv_list(self.compile_command)

    def testcase_commands(self) -> list[list[str]]:
        return as_argv_list(self.testcase_command)

    @property
    def inputs_function(self) -> str:
        return self.get_inputs or self.get_inputs_func or "get_inputs"

    @property
    def init_inputs_function(self) -> str:
        return self.get_init_inputs or self.get_init_inputs_func or "get_init_inputs"

    @property
    def uses_harness(self) -> bool:
        return bool(self.entry or self.bench_target)

    def resolved_working_dir(self, config_dir: Path) -> Path:
        """``working_dir`` relative to the config file's folder (AMD Magpie used the CWD;
        we try the config folder first, then the CWD)."""
        if not self.working_dir:
            return config_dir
        path = Path(self.working_dir)
        if path.is_absolute():
            return path
        for base in (config_dir, Path.cwd()):
            if (base / path).is_dir():
                return (base / path).resolve()
        return (config_dir / path).resolve()


class KernelConfigFile(PluginBlocksModel):
    """A kernel YAML file: one ``kernel:`` or a list of ``kernels:``, plus shared blocks (plugins may own some)."""

    block_scope: ClassVar[str] = "kernel_file"

    kernel: KernelConfig | None = None
    kernels: list[KernelConfig] = Field(default_factory=list)
    baseline: str | int | None = Field(None, description="compare: id or index of the baseline (default 0)")
    performance: PerformanceConfig | None = None
    correctness: CorrectnessConfig | None = None
    scheduler: SchedulerConfig | None = None
    latency: LatencyConfig | None = None
    gpu: dict[str, Any] | None = None
    compiling: CompilingConfig | None = Field(None, description="default: the framework config's compiling block")

    @model_validator(mode="after")
    def _has_kernels(self) -> KernelConfigFile:
        if self.kernel is None and not self.kernels and not self.plugin_blocks():  # a plugin's block may write them
            raise ValueError("no kernels: give 'kernel:' or 'kernels:'")
        ids = [k.id for k in self.all_kernels()]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"kernel ids must be unique; repeated: {', '.join(dupes)}")
        return self

    def all_kernels(self) -> list[KernelConfig]:
        return ([self.kernel] if self.kernel else []) + list(self.kernels)

    def effective_correctness(self, kernel: KernelConfig) -> CorrectnessConfig:
        """The file-level block overlaid by the kernel's own (kernel wins)."""
        return _overlay(CorrectnessConfig, self.correctness, kernel.correctness)

    def effective_performance(self, kernel: KernelConfig) -> PerformanceConfig:
        merged = _overlay(PerformanceConfig, self.performance, kernel.performance)
        if self.latency is not None and kernel.performance is None and self.performance is None:
            merged = merged.model_copy(update={"warmup_ms": self.latency.rep_ms})
        return merged

    def baseline_index(self) -> int:
        kernels = self.all_kernels()
        if self.baseline is None:
            return 0
        if isinstance(self.baseline, int):
            if not 0 <= self.baseline < len(kernels):
                raise ValueError(f"baseline index {self.baseline} is out of range (0..{len(kernels) - 1})")
            return self.baseline
        for i, k in enumerate(kernels):
            if k.id == self.baseline:
                return i
        raise ValueError(f"baseline {self.baseline!r} is not a kernel id ({', '.join(k.id for k in kernels)})")


def _overlay(model: type[StrictModel], *layers: StrictModel | None) -> Any:
    data: dict[str, Any] = {}
    for layer in layers:
        if layer is not None:
            data.update(layer.model_dump(exclude_unset=True))
    return model.model_validate(data)
