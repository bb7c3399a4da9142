"""Typed report models shared by every pipeline and plugin.

Reports are written as JSON with ``schema_version``; readers should accept
any report whose major version matches theirs."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from magpie_core import __version__

SCHEMA_VERSION = "1.0"


class Model(BaseModel):
    """Base for report models: tolerant of extra keys so newer reports still load."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class ParsedKernelName(Model):
    """What a kernel-name parser says about one kernel name."""

    name: str
    family: str  # which parser family: cublas, ck_tile, inductor, ...
    kind: str | None = None  # how it was built: triton_jit, inductor, aten_native, tensile_gemm, hip_cpp, ...
    category: str = (
        "other"  # gemm, attention, norm, elementwise, reduce, copy/memset, moe, communication, sampling, other
    )
    function: str | None = None
    dtype: str | None = None
    tile: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 1.0
    parser: str | None = None


class ToolInfo(Model):
    """An external program a plugin relies on (compiler, profiler, smi tool)."""

    name: str
    path: str | None = None
    version: str | None = None
    found: bool = False
    note: str | None = None


class GpuInfo(Model):
    index: int
    vendor: str
    name: str
    arch: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    utilization_pct: float | None = None
    driver: str | None = None
    uuid: str | None = None
    source: str | None = None  # which tool reported it


class StageStatus(str, Enum):
    """State of one pipeline stage of one kernel."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"  # not asked for, or nothing to do
    NOT_RUN = "not_run"  # could not run here (e.g. no device); neither pass nor fail
    ERROR = "error"  # the stage itself broke (crash, timeout)


class CompileResult(Model):
    status: StageStatus
    command: list[str] | None = None
    log: str = ""
    artifacts: list[str] = Field(default_factory=list)
    duration_s: float | None = None
    resources: dict[str, Any] = Field(default_factory=dict)  # registers, smem, spills...
    message: str | None = None


class CorrectnessResult(Model):
    status: StageStatus
    method: str | None = None  # "testcase_command" | "harness" | "baseline"
    trials: int = 0
    message: str | None = None
    details: list[dict[str, Any]] = Field(default_factory=list)
    #: outputs written for a trusted process to judge (a compare's referee); the check is not over until it has
    handover: str | None = None


class TimingStats(Model):
    unit: Literal["us"] = "us"
    median: float
    mean: float
    std: float
    min: float
    max: float
    p5: float
    p95: float
    ci95_low: float
    ci95_high: float
    samples: int
    rse_median: float | None = None
    stop_reason: str | None = None


class KernelCounters(Model):
    """One row of profiler output, normalized across profilers.

    One row per kernel name; every quantity is per launch (the mean over ``invocations`` launches), ``total_time_us`` is
    the sum. ``pct_of_peak`` keys: ``compute`` (SM / CU throughput), ``memory`` (memory-system throughput), ``dram``
    where the profiler has them. ``arithmetic_intensity`` is FLOPs per DRAM byte (read + write).
    """

    kernel_name: str
    invocations: int = 1
    time_us: float | None = None
    total_time_us: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    flops: float | None = None
    arithmetic_intensity: float | None = None
    pct_of_peak: dict[str, float] = Field(default_factory=dict)
    achieved_occupancy_pct: float | None = None
    source: str | None = None  # which profiler produced the row
    raw: dict[str, Any] = Field(default_factory=dict)


class PerformanceResult(Model):
    status: StageStatus
    timer: str | None = None
    timing: TimingStats | None = None
    samples_us: list[float] | None = None
    counters: list[KernelCounters] = Field(default_factory=list)
    message: str | None = None
    notes: list[str] = Field(default_factory=list)
    timing_meaningful: bool = True  # False e.g. under an interpreter: reported, never ranked
    batch_size: int | None = None  # launches between two timestamps
    #: compare: this kernel's median in each interleaved block (paired with the baseline's, block by block)
    block_medians_us: list[float] | None = None
    #: compare: the level of each worker process that timed this kernel (the median over blocks of its log
    #: block time minus the baseline's of the same block); their spread is the between-process variance
    process_levels: list[float] | None = None
    #: compare: each worker process's median in each block (a process stalled on its own leaves no verdict)
    process_blocks_us: list[list[float]] | None = None
    per_call_us: float | None = None  # compare: mean single synchronized call (call_trials), launches included


class EvaluationTask(Model):
    """Everything an isolated worker needs to check and time one kernel."""

    kernel: dict[str, Any]
    kernel_type: str
    config_dir: str
    workspace: str
    build_artifacts: list[str] = Field(default_factory=list)
    baseline_outputs: str | None = None  # file with the baseline's outputs (compare without reference)
    save_outputs: str | None = None  # where to write this kernel's outputs
    seed: int = 0
    settings: dict[str, Any] = Field(default_factory=dict)


class EvaluationOutcome(Model):
    correctness: CorrectnessResult
    performance: PerformanceResult
    environment: dict[str, Any] = Field(default_factory=dict)


class Report(Model):
    """Fields every report carries."""

    schema_version: str = SCHEMA_VERSION
    magpie_version: str = __version__
    mode: str
    timestamp: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())
    workspace: str | None = None
    #: the run was stopped by a signal (Ctrl-C): the report holds what was measured until then
    interrupted: bool = False
    #: each GPU's clocks, power limit and persistence when the report was written
    #: (:func:`magpie_core.machine.hardware.write_report`)
    gpu_hardware: dict[str, Any] | None = None

    def write(self, path: Path) -> Path:
        """Write the JSON atomically: a reader (or a second Ctrl-C) never sees half a report."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.model_dump_json(indent=2, exclude_none=False) + "\n")
        tmp.replace(path)
        return path


def read_report_json(path: Path) -> dict[str, Any]:
    """A report file as a dict; ``ValueError`` naming the file (and line, for bad JSON) when it cannot be read."""
    import json

    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a magpie report (a JSON object)")
    return data
