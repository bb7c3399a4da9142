"""Helpers shared by serving-framework plugins: AMD Magpie's ``envs`` read one way everywhere.

``TP`` tensor parallel size, ``MAX_MODEL_LEN``, ``GPU_MEM_UTIL`` (or ``GPU_MEMORY_UTILIZATION``), ``EXTRA_<X>_ARGS``
(extra server arguments, split on whitespace as AMD Magpie's scripts split them: see
:mod:`magpie_benchmark.serving.cli_args`) and the server's python: ``server_python``
in the config, else the plugin's environment variable, else this python
(``python3`` inside a container).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from magpie_benchmark.interfaces import ServingFramework

from .cli_args import drop_overridden, remove_flags, split_extra_args

DTYPES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "half": "float16",
    "fp32": "float32",
    "float32": "float32",
    "auto": "auto",
}


class FrameworkBase(ServingFramework):
    """Common reading of the benchmark config; a plugin names its module and flags.

    :meth:`server_command` builds ``python -m <module> <model> <host> <port> <tp>``
    plus the optional flags below (a ``None`` flag is not supported by that
    engine and never passed), then :meth:`framework_args`, then ``EXTRA_*_ARGS``. A flag the extra
    arguments set is not passed by magpie as well (the extra arguments' value wins).
    """

    #: environment variable naming the python that runs a local server
    python_env_var: str = "MAGPIE_SERVER_PYTHON"
    #: the ``EXTRA_<NAME>_ARGS`` key this framework reads from ``envs``
    extra_args_env: str = "EXTRA_SERVER_ARGS"
    #: ``python -m`` entry point of the OpenAI-compatible server
    module: str = ""
    model_flag: str = "--model"
    port_flag: str = "--port"
    tp_flag: str = "--tensor-parallel-size"
    served_name_flag: str | None = "--served-model-name"
    dtype_flag: str | None = "--dtype"
    quantization_flag: str | None = "--quantization"
    max_len_flag: str | None = "--max-model-len"
    mem_fraction_flag: str | None = "--gpu-memory-utilization"
    kv_cache_dtype_flag: str | None = "--kv-cache-dtype"
    enforce_eager_flag: str | None = None
    #: GET path answering ``{"version": ...}`` (the engine version recorded in a report's fingerprint)
    version_path: str | None = None

    def server_command(self, config: Any, host: str, port: int) -> list[str]:
        argv = [self.python(config), "-m", self.module]
        # the host and port are magpie's: it waits for the server there (the extra arguments cannot move them)
        extra = remove_flags(self.extra_args(config), {"--host", self.port_flag}, self.extra_args_env)
        argv += drop_overridden(self.own_options(config, host, port), extra, self.extra_args_env)
        return argv + self.framework_args(config) + extra

    def own_options(self, config: Any, host: str, port: int) -> list[list[str]]:
        """The flags magpie sets, each with its value (or a lone switch), before any extra arguments."""
        dtype, quant = self.dtype_and_quantization(config)
        candidates = [
            (self.model_flag, config.model),
            ("--host", host),
            (self.port_flag, port),
            (self.tp_flag, self.tp(config)),
            (self.served_name_flag, config.served_model_name),
            (self.dtype_flag, dtype),
            (self.quantization_flag, quant),
            (self.max_len_flag, self.max_model_len(config)),
            (self.mem_fraction_flag, self.gpu_mem_util(config)),
            (self.kv_cache_dtype_flag, self.kv_cache_dtype(config)),
        ]
        options = [[flag, str(value)] for flag, value in candidates if flag and value is not None and value != ""]
        if self.enforce_eager_flag and config.framework_options.get("enforce_eager"):
            options.append([self.enforce_eager_flag])
        return options

    def framework_args(self, config: Any) -> list[str]:
        """Engine-specific arguments beyond the shared ones."""
        return []

    def kv_cache_dtype(self, config: Any) -> str | None:
        value = config.framework_options.get("kv_cache_dtype")
        return str(value) if value else None

    def python(self, config: Any) -> str:
        if config.run_mode == "docker":
            return config.framework_options.get("container_python", "python3")
        return config.server_python or os.environ.get(self.python_env_var) or sys.executable

    @staticmethod
    def tp(config: Any) -> int:
        return config.env_int("TP") or 1

    @staticmethod
    def max_model_len(config: Any) -> int | None:
        return config.max_model_len or config.env_int("MAX_MODEL_LEN")

    @staticmethod
    def gpu_mem_util(config: Any) -> float | None:
        value = config.env_float("GPU_MEM_UTIL")
        return value if value is not None else config.env_float("GPU_MEMORY_UTILIZATION")

    def extra_args(self, config: Any) -> list[str]:
        raw = config.envs.get(self.extra_args_env) or config.envs.get("EXTRA_SERVER_ARGS")
        return split_extra_args(raw if raw is None or isinstance(raw, list | tuple) else str(raw))

    @staticmethod
    def dtype_and_quantization(config: Any) -> tuple[str | None, str | None]:
        """(dtype, quantization): ``dtype``, else ``precision`` when it names a dtype (bf16, fp16, ...).

        A quantized ``precision`` (fp8, mxfp4, ...) usually describes the checkpoint, which the
        engine reads from the model's own config; a quantization flag is passed only when
        ``framework_options.quantization`` asks for one.
        """
        precision = (config.precision or "").lower()
        dtype = config.dtype or DTYPES.get(precision)
        return dtype, config.framework_options.get("quantization")
