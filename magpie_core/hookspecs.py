"""The magpie plugin surface: every hook a plugin can implement, in one file.

magpie is built from plugins of six kinds. A plugin is a Python module that
implements one or more of the hooks below with ``@magpie_core.hookimpl`` and is
declared under the ``magpie`` entry-point group of its distribution::

    # pyproject.toml
    [project.entry-points.magpie]
    my_plugin = "my_package.my_plugin"

    # my_package/my_plugin.py
    from magpie_core import hookimpl

    @hookimpl
    def magpie_register_kernel_backends(register):
        register(MyBackend())

Every ``magpie_register_*`` hook receives a ``register`` callable; call it once
per component. Each component has a ``name`` (kernel backends may instead list
``kernel_types``); names are unique per kind across all installed plugins, and
a second plugin claiming a taken name is a :class:`PluginConflictError`.
The interfaces each kind must satisfy live in :mod:`magpie_core.interfaces`.

magpie's own built-in plugins register through exactly these hooks, so
anything a built-in does, a third-party plugin can do too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "magpie"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[Any], None]


# --- The six plugin kinds ---------------------------------------------------


@hookspec
def magpie_register_kernel_backends(register: Register) -> None:
    """Register kernel backends (:class:`~magpie_core.interfaces.KernelBackend`).

    A backend owns one or more kernel ``type`` values of the kernel config
    (``type: <name>``): it compiles sources, runs the correctness harness and
    times the kernel. It also contributes the timers its devices need.
    """


@hookspec
def magpie_register_serving_frameworks(register: Register) -> None:
    """Register LLM serving frameworks (:class:`~magpie_core.interfaces.ServingFramework`).

    A framework builds the server command, its environment, the readiness
    check and the profiler control for ``magpie benchmark``.
    """


@hookspec
def magpie_register_profilers(register: Register) -> None:
    """Register hardware-counter or kernel-trace profilers (:class:`~magpie_core.interfaces.Profiler`).

    Selected per kernel with ``performance.backend``; results come back in the
    normalized per-kernel schema :class:`~magpie_core.reports.KernelCounters`.
    """


@hookspec
def magpie_register_trace_analyzers(register: Register) -> None:
    """Register trace analyzers (:class:`~magpie_core.interfaces.TraceAnalyzer`).

    An analyzer takes loaded profiler traces and writes tables and a summary
    (gap analysis, stage split, roofline, ...).
    """


@hookspec
def magpie_register_kernel_name_parsers(register: Register) -> None:
    """Register kernel-name parsers (:class:`~magpie_core.interfaces.KernelNameParser`).

    A parser recognises a family of GPU kernel names (cuBLAS, CK Tile,
    Inductor, ...) and says what the kernel is: kind, category, dtype, tile.
    """


@hookspec
def magpie_register_environments(register: Register) -> None:
    """Register execution environments (:class:`~magpie_core.interfaces.ExecutionEnvironment`).

    An environment decides where work runs: ``local``, ``container``, ``ray``.
    """


# --- Hooks that extend the other surfaces ---------------------------------


@hookspec
def magpie_register_timers(register: Register) -> None:
    """Register timers (:class:`~magpie_core.interfaces.Timer`), one per device kind.

    Kernel-backend plugins contribute the timers of the devices they run on
    (``cpu``, ``cuda``, ``hip``...); the statistics around them are the core's.
    """


@hookspec
def magpie_detect_gpus() -> list[Any]:
    """Return the GPUs this plugin can see, as :class:`~magpie_core.reports.GpuInfo`.

    Called by ``magpie gpu-info`` and by automatic GPU selection. A vendor
    plugin returns an empty list when its tools are absent; it never raises
    for "no GPU".
    """


@hookspec
def magpie_register_mcp_tools(register: Register) -> None:
    """Register extra tools for ``magpie mcp``: plain typed Python callables.

    The function's name becomes the tool name, its docstring the description
    and its type hints the input and output schema.
    """
