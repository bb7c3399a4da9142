"""The config one benchmark run uses: a benchmark YAML loaded (AMD Magpie's ``envs`` adapted first), then what a
command line (``magpie benchmark``'s flags) or an MCP ``benchmark`` call sets over it (:class:`RunOverrides`).

The config's models are :mod:`magpie_benchmark.config`'s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_benchmark.amd_magpie import Refused, adapt_block
from magpie_benchmark.config import BenchmarkConfig, BenchmarkConfigFile
from magpie_core.config.loader import ConfigError, load_yaml, validate

log = logging.getLogger("magpie.benchmark")


def load_benchmark_config(path: Path) -> BenchmarkConfig:
    """A benchmark YAML: AMD Magpie's ``benchmark:`` block, or the block's keys at top level.

    The ``envs`` keys magpie consumes become its own keys first (``magpie_benchmark.amd_magpie``).
    """
    data, lines = load_yaml(path)
    nested = isinstance(data, dict) and "benchmark" in data
    block = data["benchmark"] if nested else data
    if isinstance(block, dict):

        def line_of(key: str) -> int | None:
            return lines.get(("benchmark", key) if nested else (key,))

        try:
            block, warnings = adapt_block(block)
        except Refused as exc:
            raise ConfigError(path, str(exc), line_of(exc.key)) from None
        except ValueError as exc:
            raise ConfigError(path, str(exc), line_of("envs")) from None
        for message in warnings:
            log.warning("%s:%s: %s", path, line_of("envs"), message)
    if nested:
        return validate(BenchmarkConfigFile, {**data, "benchmark": block}, path, lines).benchmark
    return validate(BenchmarkConfig, block or {}, path, lines)


@dataclass(frozen=True)
class RunOverrides:
    """What a command line (``magpie benchmark``'s flags) or an MCP ``benchmark`` call sets over a benchmark YAML, in
    one type both build: ``None`` is "not given"; ``patch``: nested config keys (the load flags) merged over the file's.
    """

    model: str | None = None
    precision: str | None = None
    tp: int | None = None
    concurrency: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    torch_profiler: bool | None = None
    run_mode: str | None = None
    run_kind: str | None = None
    base_url: str | None = None
    docker_image: str | None = None
    timeout: float | None = None
    repeats: int | None = None
    restart_between_repeats: bool | None = None
    patch: dict[str, Any] = field(default_factory=dict)


def apply_overrides(
    config: BenchmarkConfig, framework: str | None, overrides: RunOverrides, *, from_file: bool = False
) -> BenchmarkConfig:
    """Command-line (or tool-call) values on top of the file. A torch profiler the file and flags leave unset is on
    for a file (AMD Magpie's default), off for a command-line run and for an external server."""
    data = config.model_dump()
    for block, values in overrides.patch.items():
        data[block] = _merged(data[block], values)
    envs = dict(data["envs"])
    if framework:
        data["framework"] = framework
    simple = {
        "model": "model",
        "precision": "precision",
        "run_mode": "run_mode",
        "run_kind": "run_kind",
        "base_url": "base_url",
        "docker_image": "docker_image",
        "timeout": "timeout_seconds",
        "repeats": "repeats",
        "restart_between_repeats": "restart_between_repeats",
    }
    for key, name in simple.items():
        if getattr(overrides, key) is not None:
            data[name] = getattr(overrides, key)
    for key, env in {"tp": "TP", "concurrency": "CONC", "input_len": "ISL", "output_len": "OSL"}.items():
        if getattr(overrides, key) is not None:
            envs[env] = getattr(overrides, key)
    data["envs"] = envs
    for key, block in config.plugin_blocks().items():  # a plugin may care which of its keys the file set
        data[key] = block.model_dump(exclude_unset=True)
    for key, block in config.profiler.plugin_blocks().items():
        data["profiler"][key] = block.model_dump(exclude_unset=True)
    if overrides.torch_profiler is not None:
        data["profiler"]["torch_profiler"]["enabled"] = overrides.torch_profiler
    if overrides.base_url and overrides.run_mode is None:
        data["run_mode"] = "external"
    torch = data["profiler"]["torch_profiler"]
    if torch["enabled"] is None:
        lifecycle = data.get("server_lifecycle") or {}
        kept_alive = lifecycle.get("enabled") and not lifecycle.get("cleanup")
        torch["enabled"] = from_file and data["run_mode"] != "external" and not kept_alive
    return validate(BenchmarkConfig, data, "command line")


def _merged(base: Any, patch: Any) -> Any:
    """``patch`` over ``base``, mapping by mapping (a flag sets one key of a nested block, not the block)."""
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    return {**base, **{k: _merged(base.get(k), v) for k, v in patch.items()}}
