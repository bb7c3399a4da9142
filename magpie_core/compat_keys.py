"""Every AMD Magpie config key, and what magpie does with it (the source of docs/compatibility.md).

Three outcomes per key: **implemented** (the meaning AMD Magpie gives it, or magpie's stated
equivalent), **warned** (accepted; the load logs a warning naming the key and what magpie does
instead; see :data:`magpie_core.compat.UNIMPLEMENTED`), **refused** (a file that switches it on
stops with exit 2 naming the key; see :data:`magpie_core.compat_benchmark.REFUSED_KEYS`).
Patterns use ``*`` for one free-form key (an env var name, a metric name, a GPU index).
``tests/test_magpie_corpus.py`` checks every key of the gathered AMD Magpie configs against this
table and against what the loaders actually do.
"""

from __future__ import annotations

import fnmatch

from magpie_core.compat import UNIMPLEMENTED
from magpie_core.compat_benchmark import CONSUMED, REFUSED_KEYS, UNSUPPORTED_PREFIXES

_FREE = "free-form mapping: each entry is passed on as written"

#: benchmark YAML (``benchmark:`` block), keys relative to the block
BENCHMARK: dict[str, str] = {
    "framework": "the serving-framework plugin of that name starts and drives the server",
    "model": "the served model (HF id or local path; local paths are mounted into a container)",
    "precision": "a dtype name (bf16, fp16, ...) becomes the server's dtype; a quantized one describes the "
    "checkpoint (framework_options.quantization forces a flag)",
    "run_mode": "docker | local (magpie starts the server), external (client only), or an installed "
    "execution environment plugin such as the cluster one",
    "run_kind": "measurement | diagnostic | auto (profiled diagnostic run kept apart from the measurement)",
    "envs": "see the envs table: keys magpie reads are listed, every other key is exported to the server",
    "envs.*": "exported to the server process (and container) unless listed in the envs table",
    "profiler.torch_profiler.enabled": "the profiled diagnostic run (off unless asked on the command line; "
    "a YAML that does not say profiles, as AMD Magpie does)",
    "profiler.torch_profiler.num_steps": "engine steps per capture (server-side limit, where the plugin supports it)",
    "profiler.torch_profiler.num_profiles": "captures on one server; traces in torch_trace/profile_NNN/",
    "profiler.torch_profiler.interval_seconds": "pause between captures, after the previous traces are written",
    "profiler.torch_profiler.capture_timeout_seconds": "longest a capture's load may run",
    "profiler.torch_profiler.flush_timeout_seconds": "longest wait for a capture's trace files",
    "profiler.system_profiler": "warned when enabled",
    "profiler.system_profiler.*": "warned when enabled",
    "profiler.tracelens.enabled": "magpie's own inference analysis (stage split, roofline CSVs with AMD names)",
    "profiler.tracelens.analysis_mode": "inference; pytorch is noted in the report (inference analysis is run)",
    "profiler.tracelens.analysis_stages": "stages analyzed (all, prefilldecode, decode, prefill)",
    "profiler.tracelens.export_format": "csv; excel is noted in the report (CSV is written)",
    "profiler.tracelens.gpu_arch_config": "GPU spec JSON for the roofline",
    "profiler.tracelens.*": "warned (TraceLens CLI settings; magpie analyzes in-process)",
    "profiler.gpu_monitor": "warned when enabled",
    "profiler.gpu_monitor.*": "warned when enabled",
    "profiler.targeted_trace": "the diagnostic run's traces are adapted into targeted-trace shards and validated "
    "(magpie-targeted-trace; run_kind measurement refuses it, as AMD Magpie does)",
    "profiler.targeted_trace.*": "AMD Magpie's meaning: backend torch_profiler, run_seed and sample_rate (hash "
    "sampling), max_records_per_shard, targets (target_id, name_patterns globs, variant_id, package, source, hashes)",
    "gap_analysis.*": "gap analysis of the diagnostic traces (magpie-gap-analysis plugin), AMD columns",
    "gap_analysis.auto_clone_repos": "warned: magpie clones only with gap_analysis.clone_repos or --clone",
    "docker_image": "the server's image (empty: the plugin's default for gpu_arch)",
    "gpu_arch": "picks the GPU vendor and default image",
    "timeout_seconds": "client timeout of a load point (and the run)",
    "hf_cache_path": "mounted as the container's Hugging Face cache",
    "inferencex_path": "warned: magpie drives the load itself",
    "inferencemax_path": "warned: magpie drives the load itself",
    "runner_type": "warned: magpie drives the load itself",
    "benchmark_script": "warned: magpie drives the load itself",
    "gpu_selection.*": "idle-GPU selection through the vendor plugins (devices pins GPUs)",
    "ray_config": "the cluster environment plugin's block",
    "ray_config.*": "the cluster environment plugin's block",
    "sweep_matrix": "one load point per case on one server",
    "sweep_matrix.*": "one load point per case on one server",
    "lm_eval_runtime": "warned: lm-eval runs from quality_gate.python (envs.MAGPIE_EVAL_PYTHON), not from a "
    "hash-locked runtime",
    "lm_eval_runtime.*": "warned: lm-eval runs from quality_gate.python (envs.MAGPIE_EVAL_PYTHON), not from a "
    "hash-locked runtime",
    "server_lifecycle.*": "persistent server across runs: reuse when healthy and matching, cleanup stops it",
    "agentx": "trace replay of the file in dataset.path, which it needs (--dataset-path; AMD Magpie's InferenceX "
    "trace is not fetched): multi-turn sessions with their timing and growing context, prefix cache hits "
    "reported; the torch profiler is off unless the file turns it on",
    "agentx.enabled": "trace replay on or off",
    "agentx.concurrency": "load.max_concurrency: agent sessions in flight (as envs.CONC)",
    "agentx.mode": "warned: the whole trace is replayed",
    "agentx.recipe": "warned: no InferenceX recipe; the trace in dataset.path is replayed",
    "agentx.selector": "warned: no InferenceX recipe; the trace in dataset.path is replayed",
    "agentx.config_file": "warned: no InferenceX recipe; the trace in dataset.path is replayed",
    "agentx.resolved": "warned: no InferenceX recipe; the trace in dataset.path is replayed",
    "agentx.launch_overrides": "warned: use server_args / server_env",
    "agentx.launch_overrides.*": "warned: use server_args / server_env",
    "agentx.failed_request_threshold": "warned: failed turns are counted in the report",
    "agentx.*": "warned as unknown AgentX keys (ignored)",
    "run_cmd": "the offline framework plugin of benchmark.framework (xdit: magpie-run-cmd) runs it (argv, no "
    "shell) and reads its timings.json; ignored (noted) for a server framework",
}

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

TABLES = {"benchmark": BENCHMARK, "kernel": KERNEL, "framework": FRAMEWORK}
_MODEL = {"benchmark": "BenchmarkConfig", "kernel": "KernelConfigFile", "framework": "FrameworkConfig"}


def describe(kind: str, key: str) -> str | None:
    """What magpie does with ``key`` (dotted, list indices dropped) of a ``kind`` config; None: unknown."""
    table = TABLES[kind]
    if key in table:
        return table[key]
    if kind == "benchmark" and key.startswith("envs."):
        return describe_env(key[5:])
    wild = [p for p in table if "*" in p and fnmatch.fnmatchcase(key, p)]
    same_depth = [p for p in wild if p.count(".") == key.count(".")]
    matches = same_depth or wild  # a free-form name may hold dots itself (a counter metric name)
    return table[max(matches, key=len)] if matches else None


def describe_env(name: str) -> str:
    if name in CONSUMED:
        return f"read by magpie: {CONSUMED[name]}"
    for prefix, why in UNSUPPORTED_PREFIXES.items():
        if name.startswith(prefix):
            return f"warned: {why}"
    return "exported to the server"


def status(kind: str, key: str) -> str:
    """implemented | warned | refused (what a file switching ``key`` on gets)."""
    top = key.split(".")[0]
    if kind == "benchmark" and top in REFUSED_KEYS:
        return "refused"
    if kind == "benchmark" and key.startswith("envs.") and any(key[5:].startswith(p) for p in UNSUPPORTED_PREFIXES):
        return "warned"
    table = UNIMPLEMENTED.get(_MODEL[kind], {})
    parts = key.split(".")
    if any(".".join(parts[: i + 1]) in table for i in range(len(parts))):
        return "warned"
    return "implemented"
