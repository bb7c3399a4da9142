"""Everything magpie does to stay compatible with AMD Magpie's files, in one place.

AMD Magpie's YAML configs load unchanged and magpie's reports carry AMD Magpie's fields next to
its own. This module holds the mappings between the two: report fields and states, the defaults
AMD Magpie assumes, and the keys magpie accepts but does not act on. Such a key is never silently
ignored: :func:`warn_unimplemented` names it (file, line, key) and says what magpie does instead.
A plugin distribution keeps the mappings of its own files (the serving benchmark's: ``magpie_benchmark.amd_magpie``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger("magpie.compat")

#: the kernel ``type`` AMD Magpie assumes when a kernel entry or ``--type`` names none
DEFAULT_KERNEL_TYPE = "hip"

#: magpie's stage status -> AMD Magpie's ``EvaluationState`` value (``compiling_state`` & co.)
EVALUATION_STATE = {
    "passed": "SUCCESS",
    "failed": "FAILED",
    "error": "FAILED",
    "skipped": "SKIPPED",
    "not_run": "SKIPPED",
}

# --- keys accepted for AMD Magpie files that magpie does not act on -----------------------------

_OWN_LOAD = "magpie drives the load with its own load generator; InferenceX scripts are not run"
_TIME_ONLY = "magpie ranks correct kernels by measured time only; counters explain, they never weight the ranking"
_OWN_TIMING = "magpie times with its adaptive sampler: see performance.min_samples, target_rse, budget_seconds"

_SELF_TIMED = "passed to testcases that time themselves as MAGPIE_BENCH_*; " + _OWN_TIMING
#: ``latency:`` keys (kernel files and the framework config) magpie's own timer does not use
_LATENCY: dict[str, str] = {
    "latency.n_retries": _SELF_TIMED,
    "latency.estimate_reps": _SELF_TIMED,
    "latency.warmup_iters": _SELF_TIMED,
    "latency.timeout_seconds": "a testcase's timeout is correctness.timeout_seconds",
    "latency.output_dir": "outputs stay in the run workspace",
    "latency.bench_target": "give bench_target on the kernel entry (the built-in harness times it)",
}

#: config model name -> dotted key path (from the model's root) -> what magpie does instead; a plugin's model
#: carries its own table as the class attribute ``compat_unimplemented`` (see :func:`unimplemented_table`)
UNIMPLEMENTED: dict[str, dict[str, str]] = {
    "FrameworkConfig": {
        "compare.perf_weights_rocprof": _TIME_ONLY,
        "compare.perf_weights_ncu": _TIME_ONLY,
        "compare.perf_weights_metrix": _TIME_ONLY,
        "compare.winner_strategy": _TIME_ONLY,
        "compare.perf_lower_is_better": _TIME_ONLY,
        "logging": "magpie logs to stderr; use --verbose for debug output",
        "gpu.device_ids": "set the GPU runtime's visible-devices variable, or benchmark.gpu_selection.devices "
        "(gpu.hardware is applied to these GPUs)",
        "gpu.parallel": "kernels run one at a time per device unless --workers says otherwise",
        "scheduler.gpu_devices": "GPUs are chosen by the execution environment (e.g. one per cluster task)",
        "benchmark.image_config": "set benchmark.docker_image, or the framework plugin's default image is used",
        "benchmark.inferencex_path": _OWN_LOAD,
        "benchmark.timeout_seconds": "set timeout_seconds in the benchmark YAML (AMD Magpie ignores it here too)",
        "benchmark.profiler": "set profiler in the benchmark YAML (AMD Magpie does not read it here either)",
        **_LATENCY,
    },
    "KernelConfigFile": {
        **_LATENCY,
        "scheduler.gpu_devices": "GPUs are chosen by the execution environment (e.g. one per cluster task)",
    },
}


def _key_paths(data: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            path = (*prefix, key)
            yield path, value
            yield from _key_paths(value, path)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _key_paths(value, (*prefix, index))


def unimplemented_table(model: type) -> dict[str, str]:
    """The AMD Magpie keys config model ``model`` accepts but does not act on (dotted path -> what magpie does
    instead): the model's own ``compat_unimplemented`` (a plugin's model), else :data:`UNIMPLEMENTED`."""
    own = getattr(model, "compat_unimplemented", None)
    return own if isinstance(own, dict) else UNIMPLEMENTED.get(model.__name__, {})


def unimplemented_keys(
    model_name: str, data: Any, table: dict[str, str] | None = None
) -> list[tuple[tuple[str | int, ...], str]]:
    """The keys in ``data`` (a config of model ``model_name``, or of ``table``) that magpie accepts but does not
    act on."""
    table = UNIMPLEMENTED.get(model_name, {}) if table is None else table
    found = []
    for path, value in _key_paths(data):
        dotted = ".".join(str(part) for part in path if not isinstance(part, int))
        switched_off = value is False or value is None or (isinstance(value, dict) and value.get("enabled") is False)
        if dotted in table and not switched_off:
            found.append((path, table[dotted]))
    return found


def warn_unimplemented(
    model_name: str,
    data: Any,
    file: str | Path,
    lines: dict[tuple[str | int, ...], int],
    table: dict[str, str] | None = None,
) -> list[str]:
    """Log one warning per AMD Magpie key in ``data`` that magpie does not implement; return the messages."""
    messages = []
    for path, instead in unimplemented_keys(model_name, data, table):
        where = f"{file}:{lines[path]}" if path in lines else str(file)
        key = ".".join(str(part) for part in path)
        messages.append(f"{where}: {key}: AMD Magpie key not implemented by magpie (ignored); {instead}")
    for message in messages:
        log.warning(message)
    return messages
