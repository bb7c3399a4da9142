"""``profiler.targeted_trace`` of a benchmark file (AMD Magpie's TargetedKernelTrace), owned by this plugin.

Registered as a config block of the benchmark's ``profiler:`` (scope ``benchmark.profiler``), and read by
``magpie targeted-trace adapt-torch --target-config``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from magpie_core.config.common import Fraction, NonNegativeInt, PositiveInt, StrictModel

__all__ = ["TargetSource", "TargetSpec", "TargetedTraceConfig"]


class TargetSource(StrictModel):
    """Where a target's launch lives (Python-visible source evidence)."""

    path: str = Field(min_length=1)
    line: PositiveInt | None = None
    function: str | None = None
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


class TargetSpec(StrictModel):
    """One target of ``profiler.targeted_trace``: kernels chosen by glob patterns over their names."""

    target_id: str = Field(min_length=1, validation_alias=AliasChoices("target_id", "id"))
    name_patterns: list[str] = Field(
        min_length=1,
        validation_alias=AliasChoices("name_patterns", "names"),
        description="fnmatch globs, case-sensitive",
    )
    variant_id: str = "baseline"
    package: str | None = None
    source: TargetSource | None = None
    source_hashes: dict[str, str] = Field(default_factory=dict)
    provenance_hashes: dict[str, str] = Field(default_factory=dict)

    @field_validator("name_patterns", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("target_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("name_patterns")
    @classmethod
    def _no_empty_pattern(cls, value: list[str]) -> list[str]:
        if any(not p for p in value):
            raise ValueError("an empty pattern matches nothing")
        return value


class TargetedTraceConfig(StrictModel):
    """``profiler.targeted_trace`` (AMD Magpie's TargetedKernelTrace): the diagnostic run's kernels whose
    names match a target, written as checksummed evidence shards (docs/targeted-trace.md)."""

    enabled: bool = False
    backend: Literal["torch_profiler"] = Field("torch_profiler", description="the only acquisition backend")
    run_seed: str = Field("magpie-targeted-trace", description="seed of the deterministic sampling")
    sample_rate: Fraction = Field(1.0, description="fraction of matching events kept (by a hash, not a PRNG)")
    max_records_per_shard: NonNegativeInt = Field(
        100_000, description="records per (rank, pid) shard; more are dropped"
    )
    targets: list[TargetSpec] = Field(default_factory=list)

    @field_validator("backend", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _targets_when_on(self) -> TargetedTraceConfig:
        if self.enabled and not self.targets:
            raise ValueError("enabled targeted_trace needs at least one entry in targets")
        return self
