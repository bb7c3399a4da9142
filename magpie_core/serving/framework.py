"""Helpers shared by serving-framework plugins: AMD Magpie's ``envs`` read one way everywhere.

``TP`` tensor parallel size, ``MAX_MODEL_LEN``, ``GPU_MEM_UTIL``, ``EXTRA_<X>_ARGS``
(shell-split extra server arguments) and the server's python: ``server_python``
in the config, else the plugin's environment variable, else this python
(``python3`` inside a container).
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

from magpie_core.interfaces import ServingFramework

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
    """Common reading of the benchmark config; plugins add their flags."""

    #: environment variable naming the python that runs a local server
    python_env_var: str = "MAGPIE_SERVER_PYTHON"
    #: the ``EXTRA_<NAME>_ARGS`` key this framework reads from ``envs``
    extra_args_env: str = "EXTRA_SERVER_ARGS"

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
        return config.env_float("GPU_MEM_UTIL")

    def extra_args(self, config: Any) -> list[str]:
        raw = config.envs.get(self.extra_args_env) or config.envs.get("EXTRA_SERVER_ARGS") or ""
        return shlex.split(str(raw)) if isinstance(raw, str) else [str(x) for x in raw]

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
