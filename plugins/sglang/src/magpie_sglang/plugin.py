"""SGLang for ``magpie benchmark``.

Server: ``python -m sglang.launch_server --model-path M --tp N --host H
--port P`` (+ ``--dtype``, ``--quantization``, ``--context-length``,
``--mem-fraction-static``). Profiler: the ``SGLANG_TORCH_PROFILER_DIR``
environment variable names the trace folder; ``POST /start_profile`` and
``POST /stop_profile`` control it. Readiness: ``GET /health``.

AMD Magpie ``envs``: TP, MAX_MODEL_LEN, GPU_MEM_UTIL, EXTRA_SGLANG_ARGS.
``framework_options``: ``quantization``, ``kv_cache_dtype``, ``container_python``.
The server's python: ``server_python``, else ``$MAGPIE_SGLANG_PYTHON``, else this python.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from magpie_benchmark.serving.framework import FrameworkBase

from magpie_core import hookimpl

IMAGES = {
    "nvidia": "lmsysorg/sglang:v0.5.18",
    "gfx942": "lmsysorg/sglang:v0.5.18-rocm720-mi30x",
    "gfx950": "lmsysorg/sglang:v0.5.18-rocm720-mi35x",
}


class Sglang(FrameworkBase):
    name = "sglang"
    description = "SGLang server (python -m sglang.launch_server)"
    python_env_var = "MAGPIE_SGLANG_PYTHON"
    extra_args_env = "EXTRA_SGLANG_ARGS"
    readiness_path = "/health"
    start_profile_path: ClassVar[str | None] = "/start_profile"
    stop_profile_path: ClassVar[str | None] = "/stop_profile"

    module = "sglang.launch_server"
    model_flag = "--model-path"
    tp_flag = "--tp"
    max_len_flag = "--context-length"
    mem_fraction_flag = "--mem-fraction-static"

    supports_num_steps: ClassVar[bool] = True

    def start_profile_body(self, config: Any) -> dict[str, Any] | None:
        steps = config.profiler.torch_profiler.num_steps
        return {"num_steps": steps} if steps else None  # SGLang stops the capture itself after them

    def server_env(self, config: Any, profile_dir: Path | None) -> dict[str, str]:
        return {"SGLANG_TORCH_PROFILER_DIR": str(profile_dir)} if profile_dir is not None else {}

    def default_image(self, gpu_arch: str | None) -> str | None:
        if not gpu_arch:
            return None
        arch = gpu_arch.lower()
        if arch.startswith("gfx"):
            return IMAGES.get(arch)
        return IMAGES["nvidia"]


@hookimpl
def magpie_register_serving_frameworks(register: Callable[[Any], None]) -> None:
    register(Sglang())
