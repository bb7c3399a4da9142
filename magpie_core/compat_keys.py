"""Every AMD Magpie config key, and what magpie does with it (the source of docs/compatibility.md).

Three outcomes per key: **implemented** (the meaning AMD Magpie gives it, or magpie's stated equivalent), **warned**
(accepted; the load logs a warning naming the key and what magpie does instead; see
:data:`magpie_core.compat.UNIMPLEMENTED`), **refused** (a file that switches it on stops with exit 2 naming the key).
The benchmark YAML's table lives with the benchmark (``magpie_benchmark.compat_keys``); :func:`describe_in` and
:func:`status_in` serve any table. Patterns use ``*`` for one free-form key (an env var name, a metric name, a GPU
index). ``tests/test_magpie_corpus.py`` checks every key of the gathered AMD Magpie configs against this table and
against what the loaders actually do.
"""

from __future__ import annotations

import fnmatch

from magpie_core.compat import UNIMPLEMENTED

_LATENCY: dict[str, str] = {
    "latency.enabled": "false: testcase latency lines are ignored",
    "latency.method": "none ignores them; cuda_graph/both/auto read the testcase's own line; other methods "
    "(outer-profiler timing) are noted as not run",
    "latency.primary_metric": "wall_median_ms takes the line's stats, kernel_median_ms its kernel_stats",
    "latency.rep_ms": "warm-up of magpie's timer; MAGPIE_BENCH_REP_MS for self-timed testcases",
    "latency.n_retries": "warned; MAGPIE_BENCH_N_RETRIES for self-timed testcases",
    "latency.estimate_reps": "warned; MAGPIE_BENCH_ESTIMATE_REPS for self-timed testcases",
    "latency.warmup_iters": "warned; MAGPIE_BENCH_WARMUP_ITERS for self-timed testcases",
    "latency.seed": "MAGPIE_BENCH_SEED for self-timed testcases",
    "latency.kernel_filter": "regex over the lines' kernel_name / per_kernel names",
    "latency.pythonpath": "prepended to the testcase's PYTHONPATH",
    "latency.timeout_seconds": "warned: the testcase's own timeout is correctness.timeout_seconds",
    "latency.output_dir": "warned: outputs stay in the run workspace",
    "latency.bench_target": "warned: give bench_target on the kernel entry",
    "latency.bench_target.*": "warned: give bench_target on the kernel entry",
}

_KERNEL_ENTRY: dict[str, str] = {
    "id": "kernel id (default kernel)",
    "type": "the kernel backend plugin of that type (default hip)",
    "source_files": "sources, relative to working_dir",
    "working_dir": "where commands run (the config folder first, then the current one)",
    "env": "environment of the kernel's commands",
    "env.*": "environment of the kernel's commands",
    "testcase_command": "correctness gate (exit code); its MAGPIE_LATENCY_JSON lines become the timing",
    "compile_command": "replaces the backend's compile (string, list, or list of lists)",
    "prof_command": "what a profiler plugin wraps instead of the testcase",
    "get_inputs_func": "the harness's inputs function",
    "get_init_inputs_func": "the harness's constructor-arguments function",
    "bench_target": "the built-in harness times module.callable with get_inputs",
    "bench_target.*": "the built-in harness times module.callable with get_inputs",
}

_PERFORMANCE: dict[str, str] = {
    "performance.backend": "events (magpie's timer), none, or the profiler plugin of that name",
    "performance.timeout_seconds": "timeout of the timing / profiling stage",
    "performance.*": "the selected profiler plugin's option block",
    "performance.*.*": "the selected profiler plugin's option block",
    "correctness.backend": "testcase | accordo (the harness applies accordo's tolerances) | auto",
    "correctness.accordo": "tolerances for the built-in harness",
    "correctness.accordo.*": "tolerances for the built-in harness",
    "correctness.*": "correctness settings",
}

#: kernel YAML, keys from the file's root
KERNEL: dict[str, str] = {
    **{f"kernel.{k}": v for k, v in _KERNEL_ENTRY.items()},
    **{f"kernels.{k}": v for k, v in _KERNEL_ENTRY.items()},
    **_PERFORMANCE,
    **_LATENCY,
    "scheduler.max_workers": "parallel workers",
    "scheduler.environment": "execution environment (local, container, cluster plugin)",
    "scheduler.docker_image": "the container environment's image",
    "scheduler.gpu_devices": "warned: the environment chooses GPUs",
    "ray_config": "the cluster environment plugin's block (implies that environment)",
    "ray_config.*": "the cluster environment plugin's block",
    "compiling.enable_default_compile": "false: no backend compile without compile_command",
}

#: framework config (``--config``), keys from the file's root
FRAMEWORK: dict[str, str] = {
    "gpu.device_ids": "warned; also the GPUs gpu.hardware is applied to",
    "gpu.parallel": "warned",
    "gpu.hardware.enabled": "apply power limit / clock locks around each run (vendor plugins), restore after",
    "gpu.hardware.reset_after_benchmark": "restore the recorded settings after the run (default true)",
    "gpu.hardware.default.*": "settings for every GPU",
    "gpu.hardware.default.*.*": "power.limit_watts, frequency.gpu_clock_mhz / mem_clock_mhz / *_clock_level",
    "gpu.hardware.per_gpu": "per-GPU overrides of default",
    "gpu.hardware.per_gpu.*": "per-GPU overrides of default",
    "gpu.hardware.per_gpu.*.*": "per-GPU overrides of default",
    "gpu.hardware.per_gpu.*.*.*": "per-GPU overrides of default",
    "scheduler.max_workers": "parallel workers (default for kernel runs)",
    "scheduler.environment": "default execution environment",
    "scheduler.docker_image": "default image of the container environment",
    "scheduler.gpu_devices": "warned: the environment chooses GPUs",
    "output.directory": "where run workspaces go",
    "output.format": "json",
    "logging": "warned: stderr logging, --verbose",
    "logging.*": "warned: stderr logging, --verbose",
    "compiling.enable_default_compile": "false: no backend compile without compile_command",
    **{k: f"default for kernel files without their own block: {v}" for k, v in _PERFORMANCE.items()},
    **_LATENCY,
    "compare.*": "warned: magpie ranks correct kernels by measured time only",
    "compare.*.*": "warned: magpie ranks correct kernels by measured time only",
    "benchmark.image_config": "warned: plugins hold their default images",
    "benchmark.inferencex_path": "warned: magpie drives the load itself",
    "benchmark.timeout_seconds": "warned: set timeout_seconds in the benchmark YAML (AMD Magpie ignores it too)",
    "benchmark.profiler": "warned: set profiler in the benchmark YAML (AMD Magpie ignores it too)",
    "benchmark.profiler.*": "warned: set profiler in the benchmark YAML",
    "benchmark.profiler.*.*": "warned: set profiler in the benchmark YAML",
}

TABLES = {"kernel": KERNEL, "framework": FRAMEWORK}
_MODEL = {"kernel": "KernelConfigFile", "framework": "FrameworkConfig"}


def describe(kind: str, key: str) -> str | None:
    """What magpie does with ``key`` (dotted, list indices dropped) of a ``kind`` config; None: unknown."""
    return describe_in(TABLES[kind], key)


def describe_in(table: dict[str, str], key: str) -> str | None:
    """What ``table`` (dotted key or ``*`` pattern -> what magpie does) says about ``key``; None: nothing."""
    if key in table:
        return table[key]
    wild = [p for p in table if "*" in p and fnmatch.fnmatchcase(key, p)]
    same_depth = [p for p in wild if p.count(".") == key.count(".")]
    matches = same_depth or wild  # a free-form name may hold dots itself (a counter metric name)
    return table[max(matches, key=len)] if matches else None


def status(kind: str, key: str) -> str:
    """implemented | warned (what a file switching ``key`` on gets)."""
    return status_in(UNIMPLEMENTED.get(_MODEL[kind], {}), key)


def status_in(unimplemented: dict[str, str], key: str) -> str:
    """warned when ``key`` or an ancestor is in ``unimplemented`` (see :mod:`magpie_core.compat`), else implemented."""
    parts = key.split(".")
    if any(".".join(parts[: i + 1]) in unimplemented for i in range(len(parts))):
        return "warned"
    return "implemented"
