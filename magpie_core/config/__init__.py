"""Typed configs: framework ``config.yaml`` and kernel files (benchmark files: ``magpie_benchmark.config``).

The names below are imported on first use (PEP 562), so a command that needs one kind of
config does not pay for building the models of the others at start-up."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magpie_core.config.defaults import FrameworkConfig
    from magpie_core.config.errors import ConfigError, ConfigErrors
    from magpie_core.config.kernel import KernelConfig, KernelConfigFile
    from magpie_core.config.loader import load_config, load_yaml
    from magpie_core.config.validation import validate

_WHERE = {
    "FrameworkConfig": "defaults",
    "KernelConfig": "kernel",
    "KernelConfigFile": "kernel",
    "ConfigError": "errors",
    "ConfigErrors": "errors",
    "load_config": "loader",
    "load_yaml": "loader",
    "validate": "validation",
}

__all__ = ["ConfigError", "ConfigErrors", "FrameworkConfig", "KernelConfig", "KernelConfigFile", "load_config"]
__all__ += ["load_yaml", "validate"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
