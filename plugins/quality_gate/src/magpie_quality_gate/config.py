"""The gate's settings: magpie's ``quality_gate:`` block, and AMD Magpie's ``envs`` keys (``RUN_EVAL``,
``MAGPIE_EVAL_*``) with AMD Magpie's meanings. A key the block sets wins over its ``envs`` spelling."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from magpie_benchmark.amd_magpie import truthy
from magpie_benchmark.interfaces import CheckUnavailable
from pydantic import Field, field_validator

from magpie_core.config.common import NonNegativeInt, PositiveInt, Seconds, StrictModel

BLOCK = "quality_gate"
#: AMD Magpie's default task when ``RUN_EVAL`` is true and no task is named
MAGPIE_DEFAULT_TASKS = ("gsm8k",)


class Bound(StrictModel):
    """A threshold: the metric must be at least ``min`` and at most ``max`` (either may be left out)."""

    min: float | None = None
    max: float | None = None


class QualityGateConfig(StrictModel):
    """``quality_gate:`` in a benchmark file (beside AMD Magpie's keys, inside ``benchmark:``)."""

    enabled: bool = True
    tasks: list[str] = Field(default_factory=list, description="lm-eval task names (a comma-separated string too)")
    include_path: str | None = Field(None, description="folder of custom task YAMLs; lm-eval runs in it")
    thresholds: dict[str, dict[str, float | Bound]] = Field(
        default_factory=dict, description="task -> metric -> minimum (a number) or {min, max}"
    )
    primary_metric: str | None = Field(None, description="the metric reported first per task")
    policy_id: str | None = None
    num_fewshot: NonNegativeInt | None = None
    limit: float | None = Field(None, gt=0, description="documents per task (below 1: a fraction)")
    endpoint: Literal["completions", "chat"] | None = Field(None, description="default: the load's endpoint")
    num_concurrent: PositiveInt | None = Field(None, description="requests in flight (default: envs CONC)")
    max_length: PositiveInt | None = None
    max_gen_tokens: PositiveInt | None = None
    batch_size: PositiveInt = 1
    tokenizer_backend: Literal["none", "huggingface", "tiktoken", "remote"] = "none"
    tokenizer: str | None = None
    gen_kwargs: dict[str, str | int | float | bool] = Field(default_factory=dict)
    seed: int = 0
    python: str | None = Field(None, description="the python that runs lm-eval (default: magpie's)")
    timeout_s: Seconds = 3600.0
    request_timeout_s: Seconds = 300.0
    extra_args: list[str] = Field(default_factory=list, description="more lm-eval command-line arguments")

    @field_validator("tasks", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _split(value) if isinstance(value, str) else value


@dataclass
class GateSettings:
    """What one run of the gate does: the block merged with the ``envs`` keys; ``key`` asked for it."""

    key: str
    tasks: list[str]
    endpoint: Literal["completions", "chat"]
    num_concurrent: int
    python: str
    block: QualityGateConfig
    thresholds: dict[str, dict[str, Bound]] = field(default_factory=dict)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def block_of(config: Any) -> QualityGateConfig | None:
    block = config.plugin_block(BLOCK)
    return block if isinstance(block, QualityGateConfig) else None


def wanted(config: Any) -> bool:
    block = block_of(config)
    if block is not None:
        return block.enabled
    return truthy(config.envs.get("RUN_EVAL", ""))


def _env_number(envs: dict[str, Any], key: str, kind: type) -> Any:
    raw = envs.get(key)
    if raw in (None, ""):
        return None
    if kind is int and str(raw).strip().lower() == "auto":
        return 1  # lm-eval runs API models one request per batch whatever "auto" asks
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise CheckUnavailable(f"envs.{key}", f"{raw!r} is not a {kind.__name__}") from None
    if value <= 0:
        raise CheckUnavailable(f"envs.{key}", f"{raw!r} must be above 0")
    return value


def settings(config: Any) -> GateSettings:
    """The gate's settings for ``config`` (a run that wants it); :class:`CheckUnavailable` names a bad key."""
    envs = config.envs
    block = block_of(config)
    from_envs = block is None or ("RUN_EVAL" in envs and truthy(envs["RUN_EVAL"]))
    block = block or QualityGateConfig()
    key = BLOCK if block_of(config) is not None else "envs.RUN_EVAL"
    fill: dict[str, Any] = {}
    if from_envs:  # AMD Magpie's keys fill what the block leaves out
        fill = {
            "limit": _env_number(envs, "MAGPIE_EVAL_LIMIT", float),
            "max_length": _env_number(envs, "MAGPIE_EVAL_MAX_LENGTH", int),
            "max_gen_tokens": _env_number(envs, "MAGPIE_EVAL_MAX_GEN_TOKENS", int),
            "batch_size": _env_number(envs, "MAGPIE_EVAL_BATCH_SIZE", int),
            "primary_metric": envs.get("MAGPIE_EVAL_PRIMARY_METRIC") or None,
            "policy_id": envs.get("MAGPIE_EVAL_POLICY_ID") or None,
            "python": envs.get("MAGPIE_EVAL_PYTHON") or None,
            "include_path": envs.get("EVAL_TASKS_DIR") or None,
        }
        if not block.gen_kwargs:  # AMD Magpie's evaluator: greedy answers
            fill["gen_kwargs"] = {"temperature": 0, "top_p": 1}
    given = block.model_fields_set
    merged = block.model_copy(update={k: v for k, v in fill.items() if v is not None and k not in given})
    tasks = merged.tasks or _split(str(envs.get("MAGPIE_EVAL_TASKS") or "")) or list(MAGPIE_DEFAULT_TASKS)
    endpoint = merged.endpoint or ("chat" if key == "envs.RUN_EVAL" else config.load.endpoint)
    concurrent = merged.num_concurrent or _env_number(envs, "EVAL_CONCURRENT_REQUESTS", int)
    concurrent = concurrent or _env_number(envs, "CONC", int) or 1
    thresholds = {
        task: {metric: b if isinstance(b, Bound) else Bound(min=b) for metric, b in metrics.items()}
        for task, metrics in merged.thresholds.items()
    }
    return GateSettings(
        key=key,
        tasks=tasks,
        endpoint=endpoint,
        num_concurrent=concurrent,
        python=merged.python or sys.executable,
        block=merged,
        thresholds=thresholds,
    )
