"""AMD Magpie's benchmark files: ``envs`` (which keys magpie reads, what reaches the server) and
the keys of features magpie refuses rather than silently replacing.

AMD Magpie exports every ``envs`` key to its benchmark scripts. magpie reads the keys in
:data:`CONSUMED` itself (each row says what it sets) and exports **every other key** to the
server process (and into its container), so ``VLLM_ROCM_USE_AITER: 1`` and the like keep working.
Keys in :data:`REFUSED` name features magpie does not have; a run that switches one on stops with
a message naming the key instead of silently doing something else. Values are never logged:
reports and the workspace's config snapshot show secret-looking values (token, key, password...)
as ``***``.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

log = logging.getLogger("magpie.compat")

_OWN_LOAD = "magpie drives the load with its own load generator; InferenceX scripts are not run"
_OWN_ANALYSIS = "magpie runs its own inference analysis in-process (magpie inference) instead of TraceLens's CLI"
_TRACE_FILE = (
    "no InferenceX recipe is resolved: magpie replays InferenceX's agentic-coding trace (or dataset.path) itself"
)
#: ``benchmark:`` keys accepted for AMD Magpie files that magpie does not act on -> what it does instead
#: (dotted paths from the block; see :func:`magpie_core.config.amd_magpie.warn_unimplemented`)
UNIMPLEMENTED: dict[str, str] = {
    "inferencex_path": _OWN_LOAD,
    "inferencemax_path": _OWN_LOAD,
    "runner_type": _OWN_LOAD,
    # AMD Magpie runs this script (from InferenceX's benchmarks/ or its own scripts/benchmark/) in the
    # server image: it installs, downloads, starts the server and runs its client. magpie does each of those
    # steps itself from the same keys, so the file still runs; the key is warned rather than refused.
    "benchmark_script": "the script is not run: magpie starts the server through the framework plugin and "
    "drives the load itself from the same envs (what the script's client, e.g. vllm bench serve, would do); "
    "to measure with the script itself, run it from an InferenceX / AMD Magpie checkout",
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


#: envs key -> what magpie does with it (it is not exported to the server)
CONSUMED: dict[str, str] = {
    "TP": "tensor parallel size: the server's GPU count and its --tensor-parallel-size",
    "CONC": "load.max_concurrency (requests in flight)",
    "ISL": "dataset.input_len (random prompts' input tokens)",
    "OSL": "dataset.output_len (requested output tokens)",
    "RANDOM_RANGE_RATIO": "dataset.range_ratio (spread of random lengths)",
    "NUM_PROMPTS": "load.num_prompts (requests per load point)",
    "REQUEST_RATE": "load.request_rate (requests/s; inf: all at once)",
    "SEED": "dataset.seed (prompt sampling and arrival times)",
    "PORT": "port of the server magpie starts (benchmark.port)",
    "BENCHMARK_BASE_URL": "base_url: client-only run against that server (run_mode external)",
    "MAGPIE_BENCHMARK_ENDPOINT": "load.endpoint (/v1/completions or /v1/chat/completions)",
    "MAGPIE_BENCHMARK_BACKEND": "load.endpoint (openai-chat: chat completions)",
    "MAX_MODEL_LEN": "the server's max model length flag",
    "GPU_MEM_UTIL": "the server's GPU memory fraction flag",
    "GPU_MEMORY_UTILIZATION": "the server's GPU memory fraction flag (same as GPU_MEM_UTIL)",
    "ENABLE_PROFILE": "profiler.torch_profiler.enabled when the profiler block does not say",
    "RUN_EVAL": "true: the lm-eval quality gate after the load (magpie-quality-gate plugin; refused without it)",
    "MAGPIE_EVAL_TASKS": "quality gate: lm-eval tasks, comma-separated (default gsm8k)",
    "MAGPIE_EVAL_LIMIT": "quality gate: lm-eval --limit (documents per task)",
    "MAGPIE_EVAL_MAX_LENGTH": "quality gate: lm-eval's max_length (context admitted per request)",
    "MAGPIE_EVAL_MAX_GEN_TOKENS": "quality gate: max_tokens of each generated answer",
    "MAGPIE_EVAL_PRIMARY_METRIC": "quality gate: the metric reported first per task (e.g. exact_match,strict-match)",
    "MAGPIE_EVAL_POLICY_ID": "quality gate: a name for the evaluation policy, recorded in the report",
    "MAGPIE_EVAL_BATCH_SIZE": "quality gate: lm-eval --batch_size (auto: 1, as lm-eval does for API models)",
    "MAGPIE_EVAL_PYTHON": "quality gate: the python that runs lm-eval (default: magpie's own)",
    "EVAL_CONCURRENT_REQUESTS": "quality gate: requests lm-eval keeps in flight (default CONC)",
    "EVAL_TASKS_DIR": "quality gate: folder (or task file) of custom lm-eval task YAMLs (--include_path)",
    "EXTRA_VLLM_ARGS": "extra server arguments (whitespace-split, quotes kept) for the framework plugin of that name",
    "EXTRA_SGLANG_ARGS": "extra server arguments (whitespace-split, quotes kept) for the framework plugin of that name",
    "EXTRA_ATOM_ARGS": "extra server arguments (whitespace-split, quotes kept) for the framework plugin of that name",
    "EXTRA_SERVER_ARGS": "extra server arguments (whitespace-split, quotes kept) for any framework plugin",
    "WEKA_LOADER_OVERRIDE": "agentx: which InferenceX AgentX corpus is replayed (an AIPerf public-dataset loader "
    "name, as InferenceX's resolve_trace_source reads it)",
    "EXTRA_XDIT_ARGS": "extra arguments (whitespace-split, quotes kept) appended to run_cmd by the xdit plugin",
}

#: AMD Magpie's ``*_mm.sh`` envs -> (``dataset.multimodal`` key, its script's default); read by :func:`map_multimodal`
MULTIMODAL_ENVS: dict[str, tuple[str, int | float]] = {
    "MM_BASE_ITEMS_PER_REQUEST": ("base_items_per_request", 1),
    "MM_ITEMS_RANGE_RATIO": ("items_range_ratio", 0.0),
    "MM_LIMIT_IMAGES": ("limit_images", 3),
    "MM_IMAGE_HEIGHT": ("height", 256),
    "MM_IMAGE_WIDTH": ("width", 256),
}
for _key, (_field, _default) in MULTIMODAL_ENVS.items():
    _where = f"buckets[0].{_field}" if _field in ("height", "width") else _field
    CONSUMED[_key] = f"dataset.multimodal.{_where} (random images per request, as vllm bench serve random-mm)"
CONSUMED["MM_LIMIT_VIDEOS"] = "multimodal: video items are never generated (any limit is accepted)"
CONSUMED["MM_IMAGE_NUM_FRAMES"] = "multimodal: 1 (images); more frames would be video, which is refused"

#: envs key prefixes of features magpie does not implement -> what to do instead (keys in CONSUMED excepted)
UNSUPPORTED_PREFIXES: dict[str, str] = {
    "MM_": "not an AMD Magpie multimodal key magpie knows; ignored (still exported to the server)",
}

_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE", re.IGNORECASE)
_TRUE = {"1", "true", "yes", "on"}


def is_secret(key: str) -> bool:
    """A variable whose value must never appear in an argv, a log or a report."""
    return bool(_SECRET.search(key))


def truthy(value: Any) -> bool:
    return str(value).strip().lower() in _TRUE


def server_envs(envs: dict[str, Any]) -> dict[str, str]:
    """The ``envs`` keys exported to the server: all but the ones magpie consumes."""
    return {k: str(v) for k, v in envs.items() if k not in CONSUMED and v is not None}


def redacted(envs: dict[str, Any]) -> dict[str, Any]:
    """``envs`` with secret-looking values replaced by ``***`` (for reports and snapshots)."""
    return {k: "***" if is_secret(k) and v not in (None, "") else v for k, v in envs.items()}


def envs_warnings(envs: dict[str, Any]) -> list[str]:
    """One message per ``envs`` key of a feature magpie does not have (keys named)."""
    out = []
    for prefix, instead in UNSUPPORTED_PREFIXES.items():
        keys = sorted(k for k in envs if k.startswith(prefix) and k not in CONSUMED)
        if keys:
            out.append(f"benchmark.envs {', '.join(keys)}: AMD Magpie keys not implemented by magpie; {instead}")
    return out


#: ``benchmark.<key>`` of an AMD Magpie feature magpie does not have -> what to do instead.
#: A file that switches one on is refused (exit 2): running something else would mislead.
REFUSED_KEYS: dict[str, str] = {}  # none today: agentx and run_cmd are implemented

#: ``agentx.<key>`` that magpie reads (AMD Magpie's other AgentX keys are warned: magpie_core.config.amd_magpie)
AGENTX_READ = ("enabled", "concurrency")
#: AMD Magpie's AgentX keys magpie accepts without acting on them (listed in magpie_core.config.amd_magpie's table)
AGENTX_KNOWN = (
    *AGENTX_READ,
    "mode",
    "recipe",
    "selector",
    "config_file",
    "launch_overrides",
    "failed_request_threshold",
    "resolved",
)


def switched_on(value: Any) -> bool:
    """A feature key that is on: ``enable``, ``true``, or a mapping whose ``enabled`` is not false."""
    if isinstance(value, dict):
        return value.get("enabled", True) not in (False, None, "false", "disable", "disabled")
    return value not in (None, False, "", "false", "disable", "disabled")


def map_agentx(block: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``agentx`` on: trace replay (``dataset.name: trace``) with ``agentx.concurrency`` as the sessions in
    flight, and no profiled run unless the file asks (AMD Magpie's defaults). Warnings for AgentX keys
    magpie does not know and for ``envs`` lengths a trace replaces."""
    agentx = block.get("agentx")
    if not switched_on(agentx):
        return block, []
    out = copy.deepcopy(block)
    _set_default(out, ("dataset", "name"), "trace")
    _set_default(out, ("profiler", "torch_profiler", "enabled"), False)
    warnings = []
    if isinstance(agentx, dict):
        if agentx.get("concurrency") is not None:
            conc = agentx["concurrency"]
            if isinstance(conc, bool) or not isinstance(conc, int) or conc < 1:
                raise ValueError(f"agentx.concurrency: {conc!r} is not a positive whole number")
            _set_default(out, ("load", "max_concurrency"), conc)
        unknown = sorted(str(k) for k in agentx if k not in AGENTX_KNOWN)
        if unknown:
            names = ", ".join(f"benchmark.agentx.{k}" for k in unknown)
            warnings.append(f"{names}: not an AMD Magpie AgentX key magpie knows (ignored)")
    envs = {str(k).upper() for k in (block.get("envs") or {})}
    lengths = sorted(envs & {"ISL", "RANDOM_RANGE_RATIO"})
    if lengths:
        warnings.append(
            f"benchmark.envs {', '.join(lengths)}: ignored with agentx (input lengths come from the trace, "
            "as in AMD Magpie); OSL is only the output length of turns the trace gives none"
        )
    return out, warnings


def refused(envs: dict[str, Any], block: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """(key, why) when this run cannot go ahead as the file asks (a feature magpie does not have)."""
    for key, why in REFUSED_KEYS.items():
        if block and switched_on(block.get(key)):
            return key, f"benchmark.{key}: {why}"
    if "RUN_EVAL" in envs and truthy(envs["RUN_EVAL"]) and not _check_claims("RUN_EVAL"):
        why = (
            "benchmark.envs.RUN_EVAL is true: AMD Magpie's lm-eval quality gate needs the magpie-quality-gate "
            "plugin, which is not installed, so the run would report no accuracy result; install it with "
            "pip install 'magpie-quality-gate[lm-eval]', or set RUN_EVAL: false to benchmark performance only"
        )
        return "envs", why
    return None


def _check_claims(env_key: str) -> bool:
    """Whether an installed benchmark check is switched on by ``env_key`` (its ``switch_envs``)."""
    from magpie_core.plugins import get_plugin_manager

    checks = get_plugin_manager().components("benchmark_check").values()
    return any(env_key in getattr(check, "switch_envs", ()) for check in checks)


def endpoint_from_envs(envs: dict[str, Any]) -> str | None:
    """``load.endpoint`` from ``MAGPIE_BENCHMARK_ENDPOINT`` / ``MAGPIE_BENCHMARK_BACKEND``, if set."""
    path = str(envs.get("MAGPIE_BENCHMARK_ENDPOINT") or "")
    backend = str(envs.get("MAGPIE_BENCHMARK_BACKEND") or "")
    if "chat" in path or backend == "openai-chat":
        return "chat"
    if path or backend:
        return "completions"
    return None


def rate_from_envs(envs: dict[str, Any]) -> float | None:
    """``REQUEST_RATE`` as requests/s (None for inf or unset)."""
    raw = envs.get("REQUEST_RATE")
    if raw is None or str(raw).strip().lower() in ("inf", "infinity", ""):
        return None
    return float(raw)


def _set_default(block: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """``block[path] = value`` unless the file already sets that key (the file's own key wins)."""
    node = block
    for key in path[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            return  # a wrong type there is reported by validation
        node = child
    node.setdefault(path[-1], value)


def _number(key: str, raw: Any, kind: type) -> Any:
    try:
        return kind(raw)
    except (TypeError, ValueError):
        raise ValueError(f"envs.{key}: {raw!r} is not a {kind.__name__}") from None


def map_envs(block: dict[str, Any]) -> dict[str, Any]:
    """A raw ``benchmark:`` mapping with the ``envs`` keys magpie consumes turned into its own keys.

    A key the file sets itself wins over its ``envs`` spelling. Raises ``ValueError`` naming the key
    for a value of the wrong type.
    """
    envs = block.get("envs")
    if not isinstance(envs, dict):
        return block
    envs = {str(k).upper(): v for k, v in envs.items()}
    out = copy.deepcopy(block)
    if envs.get("PORT") not in (None, ""):
        _set_default(out, ("port",), _number("PORT", envs["PORT"], int))
    if envs.get("BENCHMARK_BASE_URL"):
        _set_default(out, ("base_url",), str(envs["BENCHMARK_BASE_URL"]))
        out["run_mode"] = "external"  # AMD Magpie: client-only against that server
    if envs.get("REQUEST_RATE") not in (None, ""):
        try:
            rate = rate_from_envs(envs)
        except ValueError:
            raise ValueError(f"envs.REQUEST_RATE: {envs['REQUEST_RATE']!r} is not a number or inf") from None
        _set_default(out, ("load", "request_rate"), rate)
    if envs.get("SEED") not in (None, ""):
        _set_default(out, ("dataset", "seed"), _number("SEED", envs["SEED"], int))
    endpoint = endpoint_from_envs(envs)
    if endpoint:
        _set_default(out, ("load", "endpoint"), endpoint)
    if envs.get("ENABLE_PROFILE") not in (None, ""):
        _set_default(out, ("profiler", "torch_profiler", "enabled"), truthy(envs["ENABLE_PROFILE"]))
    map_multimodal(envs, out)
    return out


def map_multimodal(envs: dict[str, Any], out: dict[str, Any]) -> None:
    """``MM_*`` envs -> ``dataset.multimodal`` (one image bucket of MM_IMAGE_HEIGHT x MM_IMAGE_WIDTH) and the
    chat endpoint, as AMD Magpie's ``*_mm.sh`` scripts call ``vllm bench serve --dataset-name random-mm``."""
    given = {k: v for k, v in envs.items() if k in MULTIMODAL_ENVS and v not in (None, "")}
    if not given:
        return
    frames = _number("MM_IMAGE_NUM_FRAMES", envs.get("MM_IMAGE_NUM_FRAMES") or 1, int)
    if frames != 1:
        raise ValueError(
            f"envs.MM_IMAGE_NUM_FRAMES: {frames} frames is a video; magpie generates image requests only (set 1)"
        )
    value = {
        field: _number(key, given.get(key, default), type(default)) for key, (field, default) in MULTIMODAL_ENVS.items()
    }
    bucket = {"height": value.pop("height"), "width": value.pop("width")}
    _set_default(out, ("dataset", "multimodal"), {**value, "buckets": [bucket]})
    _set_default(out, ("load", "endpoint"), "chat")


def adapt_block(block: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A raw ``benchmark:`` mapping ready for validation, and the warnings its ``envs`` call for.

    Raises ``ValueError`` (a bad envs value) or :class:`Refused` (a feature magpie does not have).
    """
    block = map_envs(block)
    block, agentx_warnings = map_agentx(block)
    envs = {str(k).upper(): v for k, v in (block.get("envs") or {}).items()}
    refusal = refused(envs, block)
    if refusal:
        raise Refused(*refusal)
    return block, agentx_warnings + envs_warnings(envs)


class Refused(ValueError):
    """A file switches on a feature magpie does not have; ``key`` names it (``envs`` for an envs key)."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key = key
