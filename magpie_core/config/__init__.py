"""Typed configs: framework ``config.yaml``, kernel files, benchmark files."""

from magpie_core.config.benchmark import BenchmarkConfig, BenchmarkConfigFile
from magpie_core.config.framework import FrameworkConfig
from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_core.config.loader import ConfigError, ConfigErrors, load_config, load_yaml, validate

__all__ = [
    "BenchmarkConfig",
    "BenchmarkConfigFile",
    "ConfigError",
    "ConfigErrors",
    "FrameworkConfig",
    "KernelConfig",
    "KernelConfigFile",
    "load_config",
    "load_yaml",
    "validate",
]
