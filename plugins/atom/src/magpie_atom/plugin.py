"""AMD ATOM (ROCm/ATOM, "AiTer Optimized Model") for ``magpie benchmark``.

Server: ``python -m atom.entrypoints.openai_server --model M
--tensor-parallel-size N --host H --server-port P`` (ATOM's ``--port`` is an
internal engine port; the HTTP port is ``--server-port``), with
``--max-model-len``, ``--gpu-memory-utilization``, ``--kv_cache_dtype``.
Profiler: ``--torch-profiler-dir DIR`` plus ``POST /start_profile`` and
``POST /stop_profile``. Readiness: ``GET /health``. ROCm only: the default
image is ``rocm/atom:latest``.

AMD Magpie ``envs``: TP, MAX_MODEL_LEN, GPU_MEM_UTIL, EXTRA_ATOM_ARGS.
``framework_options``: ``kv_cache_dtype`` (bf16 | fp8; fp8 when precision is fp8),
``enforce_eager``, ``container_python``.
The server's python: ``server_python``, else ``$MAGPIE_ATOM_PYTHON``, else this python.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from magpie_benchmark.serving.framework import FrameworkBase

from magpie_core import hookimpl

IMAGE = "rocm/atom:latest"


class Atom(FrameworkBase):
    name = "atom"
    description = "AMD ATOM OpenAI-compatible server (python -m atom.entrypoints.openai_server)"
    python_env_var = "MAGPIE_ATOM_PYTHON"
    extra_args_env = "EXTRA_ATOM_ARGS"
    readiness_path = "/health"
    start_profile_path: ClassVar[str | None] = "/start_profile"
    stop_profile_path: ClassVar[str | None] = "/stop_profile"

    module = "atom.entrypoints.openai_server"
    port_flag = "--server-port"  # ATOM's --port is an internal engine port
    served_name_flag = None
    dtype_flag = None
    quantization_flag = None
    kv_cache_dtype_flag = "--kv_cache_dtype"
    enforce_eager_flag = "--enforce-eager"

    def kv_cache_dtype(self, config: Any) -> str | None:
        return super().kv_cache_dtype(config) or ("fp8" if config.precision == "fp8" else None)

    def profiler_args(self, config: Any, profile_dir: Path) -> list[str]:
        return ["--torch-profiler-dir", str(profile_dir)]

    def default_image(self, gpu_arch: str | None) -> str | None:
        return IMAGE if gpu_arch is None or gpu_arch.lower().startswith("gfx") else None


@hookimpl
def magpie_register_serving_frameworks(register: Callable[[Any], None]) -> None:
    register(Atom())
