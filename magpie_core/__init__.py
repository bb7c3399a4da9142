"""magpie: GPU kernel and LLM-inference performance, told truthfully.

The core holds the plugin surface, configs, reports, pipelines, CLI and MCP
server; every backend, framework and parser is a plugin.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("magpie-core")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from magpie_core.hookspecs import hookimpl  # noqa: E402

__all__ = ["__version__", "hookimpl"]
