"""magpie: GPU kernel and LLM-inference performance, told truthfully. The core holds the plugin surface, configs,
reports, the kernel pipelines and the CLI shell; every backend, framework, analyzer and parser is a plugin."""

from typing import Any

from magpie_core.hookspecs import hookimpl

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    """``__version__``, read from the installed metadata when first asked for (not by every command at import)."""
    if name != "__version__":
        raise AttributeError(f"module 'magpie_core' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("magpie-core")
    except PackageNotFoundError:  # a source tree that is not installed
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value
