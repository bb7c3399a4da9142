"""The framework config (``config.yaml``, ``--config/-c``; AMD Magpie's name): this machine's defaults.

AMD Magpie's ``config.yaml`` loads unchanged. Its ``compare.perf_weights_*`` are accepted but do not weight magpie's
ranking: magpie ranks correct kernels by measured time only (counters explain, they never outvote the clock)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from magpie_core.config.common import FiniteFloat, NonNegativeInt, PluginBlocksModel, Seconds, StrictModel
from magpie_core.config.kernel import CompilingConfig, CorrectnessConfig, LatencyConfig, PerformanceConfig
from magpie_core.runtime.workspace import DEFAULT_OUTPUT_ROOT


class GpuConfig(StrictModel):
    device_ids: list[NonNegativeInt] | None = None
    parallel: bool = True
    hardware: dict[str, Any] = Field(default_factory=dict)


class SchedulerDefaults(StrictModel):
    max_workers: int = Field(1, ge=1)
    environment: str = "local"
    docker_image: str | None = None
    gpu_devices: list[NonNegativeInt] | None = None


class OutputConfig(StrictModel):
    directory: str = f"./{DEFAULT_OUTPUT_ROOT}"
    format: Literal["json"] = "json"


class LoggingConfig(StrictModel):
    level: str = "INFO"
    file: str | None = None


class CompareConfig(StrictModel):
    """Accepted for AMD Magpie files. Ranking never uses these weights."""

    perf_weights_rocprof: dict[str, FiniteFloat] = Field(default_factory=dict)
    perf_weights_ncu: dict[str, FiniteFloat] = Field(default_factory=dict)
    perf_weights_metrix: dict[str, FiniteFloat] = Field(default_factory=dict)
    winner_strategy: str = "time"
    perf_lower_is_better: list[str] = Field(default_factory=list)
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of speedup intervals")


class BenchmarkDefaults(StrictModel):
    image_config: str | None = None
    inferencex_path: str | None = None
    timeout_seconds: Seconds = 3600
    profiler: dict[str, Any] = Field(default_factory=dict)


class FrameworkConfig(PluginBlocksModel):
    """``config.yaml``; plugins own further top-level blocks (``mcp:``, ``ray_config:``)."""

    block_scope: ClassVar[str] = "framework"

    gpu: GpuConfig = Field(default_factory=GpuConfig)
    scheduler: SchedulerDefaults = Field(default_factory=SchedulerDefaults)
    output: OutputConfig = Field(default_factory=OutputConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    correctness: CorrectnessConfig = Field(default_factory=CorrectnessConfig)
    compiling: CompilingConfig = Field(default_factory=CompilingConfig)
    performance: PerformanceConfig = Field(default_factory=PerformanceConfig)
    latency: LatencyConfig | None = None
    compare: CompareConfig = Field(default_factory=CompareConfig)
    benchmark: BenchmarkDefaults = Field(default_factory=BenchmarkDefaults)
