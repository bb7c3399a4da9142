"""Every AMD Magpie benchmark-YAML key, and what magpie does with it (the benchmark part of docs/compatibility.md).

Three outcomes per key, as in :mod:`magpie_core.config.amd_magpie_keys`: **implemented**, **warned** (see
:data:`magpie_benchmark.amd_magpie.UNIMPLEMENTED`), **refused** (see :data:`magpie_benchmark.amd_magpie.REFUSED_KEYS`).
``tests/test_magpie_corpus.py`` checks every key of the gathered AMD Magpie benchmark configs against this table.
"""

from __future__ import annotations

from magpie_benchmark.amd_magpie import CONSUMED, REFUSED_KEYS, UNIMPLEMENTED, UNSUPPORTED_PREFIXES
from magpie_core.config.amd_magpie_keys import describe_in, status_in

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
    "profiler.tracelens.export_format": "csv; excel: the CSVs and one workbook of them (a sheet per table)",
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
    "benchmark_script": "warned: the script is not run; magpie starts the server and drives the load itself "
    "from the same envs",
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
    "agentx": "trace replay of InferenceX's agentic-coding corpus (HF semianalysisai/cc-traces-weka-062126 or its "
    "256k variant, as InferenceX picks; envs.WEKA_LOADER_OVERRIDE another), downloaded on first use into "
    "$MAGPIE_TRACE_CACHE (~/.cache/magpie/traces), SHA-256 recorded and checked against dataset.sha256; "
    "dataset.path / dataset.url replace it; prefix cache hits reported; the torch profiler is off unless "
    "the file turns it on",
    "agentx.enabled": "trace replay on or off",
    "agentx.concurrency": "load.max_concurrency: agent sessions in flight (as envs.CONC)",
    "agentx.mode": "warned: the whole trace is replayed",
    "agentx.recipe": "warned: no InferenceX recipe; InferenceX's AgentX corpus is replayed",
    "agentx.selector": "warned: no InferenceX recipe; InferenceX's AgentX corpus is replayed",
    "agentx.config_file": "warned: no InferenceX recipe; InferenceX's AgentX corpus is replayed",
    "agentx.resolved": "warned: no InferenceX recipe; InferenceX's AgentX corpus is replayed",
    "agentx.launch_overrides": "warned: use server_args / server_env",
    "agentx.launch_overrides.*": "warned: use server_args / server_env",
    "agentx.failed_request_threshold": "warned: failed turns are counted in the report",
    "agentx.*": "warned as unknown AgentX keys (ignored)",
    "run_cmd": "the offline framework plugin of benchmark.framework (xdit: magpie-run-cmd) runs it (argv, no "
    "shell) and reads its timings.json; ignored (noted) for a server framework",
}


def describe(key: str) -> str | None:
    """What magpie does with ``key`` (dotted, from the ``benchmark:`` block, list indices dropped); None: unknown."""
    if key.startswith("envs.") and key not in BENCHMARK:
        return describe_env(key[5:])
    return describe_in(BENCHMARK, key)


def describe_env(name: str) -> str:
    if name in CONSUMED:
        return f"read by magpie: {CONSUMED[name]}"
    for prefix, why in UNSUPPORTED_PREFIXES.items():
        if name.startswith(prefix):
            return f"warned: {why}"
    return "exported to the server"


def status(key: str) -> str:
    """implemented | warned | refused (what a file switching ``key`` on gets)."""
    if key.split(".")[0] in REFUSED_KEYS:
        return "refused"
    name = key[5:]
    if key.startswith("envs.") and name not in CONSUMED and any(name.startswith(p) for p in UNSUPPORTED_PREFIXES):
        return "warned"
    return status_in(UNIMPLEMENTED, key)
