"""Everything magpie does to stay compatible with AMD Magpie's files, in one place.

AMD Magpie's YAML configs load unchanged and magpie's reports carry AMD Magpie's fields next to
its own. This module holds the mappings between the two: report fields and states, the defaults
AMD Magpie assumes, and the keys magpie accepts but does not act on. Such a key is never silently
ignored: :func:`warn_unimplemented` names it (file, line, key) and says what magpie does instead.
"""

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

#: AMD Magpie's kernel-table columns of a gap analysis (``top_kernels.csv``)
GAP_KERNEL_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]


def throughput_block(metrics: dict[str, Any]) -> dict[str, Any]:
    """AMD Magpie's ``throughput`` block of ``benchmark_report.json`` from magpie's load metrics."""
    return {
        "request_throughput": metrics["request_throughput"],
        "output_throughput": metrics["output_throughput"],
        "total_token_throughput": metrics["total_token_throughput"],
        "completed_requests": metrics["completed"],
        "failed_requests": metrics["failed"],
        "total_input_tokens": metrics["total_input_tokens"],
        "total_output_tokens": metrics["total_output_tokens"],
        "duration_seconds": metrics["duration_s"],
        "request_goodput": metrics["request_goodput"],
    }


# --- keys accepted for AMD Magpie files that magpie does not act on -----------------------------

_OWN_LOAD = "magpie drives the load with its own load generator; InferenceX scripts are not run"
_OWN_ANALYSIS = "magpie runs its own inference analysis in-process (magpie inference) instead of TraceLens's CLI"
_TRACE_FILE = "no InferenceX recipe is resolved: magpie replays the trace file in dataset.path itself"
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

_BENCHMARK: dict[str, str] = {
    "inferencex_path": _OWN_LOAD,
    "inferencemax_path": _OWN_LOAD,
    "runner_type": _OWN_LOAD,
    "benchmark_script": _OWN_LOAD,
    "lm_eval_runtime": "lm-eval runs from quality_gate.python (envs MAGPIE_EVAL_PYTHON, default magpie's python); "
    "the hash-locked runtime is neither used nor verified",
    "profiler.gpu_monitor": "no GPU monitor samples are recorded during the run",
    "profiler.system_profiler": "no system profiler is run around the server; use a profiler plugin on kernels",
    "profiler.tracelens.perf_report_enabled": _OWN_ANALYSIS,
    "profiler.tracelens.multi_rank_report_enabled": _OWN_ANALYSIS,
    "profiler.tracelens.auto_patch_runtime": _OWN_ANALYSIS,
    "profiler.tracelens.tracelens_repo_path": _OWN_ANALYSIS,
    "profiler.tracelens.extension_wheel_path": _OWN_ANALYSIS,
    "profiler.tracelens.cli_timeout_seconds": _OWN_ANALYSIS,
    "gap_analysis.auto_clone_repos": "magpie clones kernel-source repos only with gap_analysis.clone_repos or --clone",
    "agentx.mode": _TRACE_FILE + "; the whole trace is replayed (load.trace.max_sessions / time_scale shorten it)",
    "agentx.recipe": _TRACE_FILE,
    "agentx.selector": _TRACE_FILE,
    "agentx.config_file": _TRACE_FILE,
    "agentx.resolved": _TRACE_FILE,
    "agentx.launch_overrides": "the server is started by the framework plugin: use server_args and server_env",
    "agentx.failed_request_threshold": "failed turns are counted in the report (failure_reasons); the run "
    "fails only when every request fails",
}

#: config model name -> dotted key path (from the model's root) -> what magpie does instead
UNIMPLEMENTED: dict[str, dict[str, str]] = {
    "BenchmarkConfig": _BENCHMARK,
    "BenchmarkConfigFile": {f"benchmark.{key}": why for key, why in _BENCHMARK.items()},
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


def unimplemented_keys(model_name: str, data: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """The keys in ``data`` (a config of model ``model_name``) that magpie accepts but does not act on."""
    table = UNIMPLEMENTED.get(model_name, {})
    found = []
    for path, value in _key_paths(data):
        dotted = ".".join(str(part) for part in path if not isinstance(part, int))
        switched_off = value is False or value is None or (isinstance(value, dict) and value.get("enabled") is False)
        if dotted in table and not switched_off:
            found.append((path, table[dotted]))
    return found


def warn_unimplemented(
    model_name: str, data: Any, file: str | Path, lines: dict[tuple[str | int, ...], int]
) -> list[str]:
    """Log one warning per AMD Magpie key in ``data`` that magpie does not implement; return the messages."""
    messages = []
    for path, instead in unimplemented_keys(model_name, data):
        where = f"{file}:{lines[path]}" if path in lines else str(file)
        key = ".".join(str(part) for part in path)
        messages.append(f"{where}: {key}: AMD Magpie key not implemented by magpie (ignored); {instead}")
    for message in messages:
        log.warning(message)
    return messages
