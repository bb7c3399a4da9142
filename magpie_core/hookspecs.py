"""The magpie plugin surface: every hook a plugin can implement, in one file.

magpie is built from plugins. A plugin is a Python module that implements one or more of the hooks below with
``@magpie_core.hookimpl`` and is declared under the ``magpie`` entry-point group of its distribution::

    # pyproject.toml
    [project.entry-points.magpie]
    my_plugin = "my_package.my_plugin"

    # my_package/my_plugin.py
    from magpie_core import hookimpl

    @hookimpl
    def magpie_register_kernel_backends(register):
        register(MyBackend())

Every ``magpie_register_*`` hook receives a ``register`` callable; call it once per component. Each component has a
``name`` (kernel backends may instead list ``kernel_types``); names are unique per kind across all installed plugins,
and a second plugin claiming a taken name is a :class:`PluginConflictError`. The interfaces each kind must satisfy live
in :mod:`magpie_core.interfaces`.

magpie's own built-in plugins register through exactly these hooks, so anything a built-in does, a third-party plugin
can do too: ``magpie gap``, ``magpie inference`` and ``magpie mcp`` are plugins, and so is every MCP tool.

Hooks are called through pluggy (``pm.hook.<name>(...)``); a function in a plugin whose name starts with ``magpie_`` but
matches no hook below is an error at load time that names the plugin (pluggy's ``check_pending``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

if TYPE_CHECKING:  # the types of the hooks' arguments and answers (type-only: the core's modules import this one)
    import typer

    from magpie_core.config.kernel import KernelConfigFile
    from magpie_core.interfaces import (
        ConfigBlock,
        ContainerGpuAccess,
        ExecutionEnvironment,
        GpuHardwareControl,
        KernelBackend,
        KernelNameParser,
        KernelSourceFinder,
        Profiler,
        Timer,
        TraceAnalyzer,
    )
    from magpie_core.report_pages import ReportPage
    from magpie_core.reports import GpuInfo, PerformanceResult

PROJECT = "magpie"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

_Component = TypeVar("_Component")
#: the ``register`` a ``magpie_register_*`` hook receives, typed by its kind: call it once per component
Register = Callable[[_Component], None]


# --- Component kinds: each hook registers components of one kind ---------------------------------------------------


@hookspec
def magpie_register_kernel_backends(register: Register[KernelBackend]) -> None:
    """Register kernel backends (:class:`~magpie_core.interfaces.KernelBackend`): a backend owns one or more kernel
    ``type`` values of the kernel config (``type: <name>``), compiles sources, runs the correctness harness and times
    the kernel. It also contributes the timers its devices need."""


@hookspec
def magpie_register_profilers(register: Register[Profiler]) -> None:
    """Register hardware-counter or kernel-trace profilers (:class:`~magpie_core.interfaces.Profiler`), selected per
    kernel with ``performance.backend``; results come back in the normalized per-kernel schema
    :class:`~magpie_core.reports.KernelCounters`."""


@hookspec
def magpie_register_trace_analyzers(register: Register[TraceAnalyzer]) -> None:
    """Register trace analyzers (:class:`~magpie_core.interfaces.TraceAnalyzer`): an analyzer reads profiler trace files
    (with :mod:`magpie_trace`, the public trace-reading library) and writes tables and a summary: ``gap`` (kernel
    tables, GPU idle gaps), ``inference`` (stage split, roofline), ..."""


@hookspec
def magpie_register_source_finders(register: Register[KernelSourceFinder]) -> None:
    """Register kernel-source finders (:class:`~magpie_core.interfaces.KernelSourceFinder`): a finder maps kernel names
    (as they appear in traces) to the source files that define them, and says how sure it is."""


@hookspec
def magpie_register_kernel_name_parsers(register: Register[KernelNameParser]) -> None:
    """Register kernel-name parsers (:class:`~magpie_core.interfaces.KernelNameParser`): a parser recognises a family of
    GPU kernel names (cuBLAS, CK Tile, Inductor, ...) and says what the kernel is: kind, category, dtype, tile."""


@hookspec
def magpie_register_environments(register: Register[ExecutionEnvironment]) -> None:
    """Register execution environments (:class:`~magpie_core.interfaces.ExecutionEnvironment`), which decide where work
    runs: ``local`` (the core's), a container, a cluster."""


# --- Hooks that extend the other surfaces ---------------------------------


@hookspec
def magpie_register_commands(cli: typer.Typer) -> None:
    """Add commands to the ``magpie`` command line.

    ``cli`` is the root :class:`typer.Typer`; add commands with ``@cli.command()``. Declare each command word in the
    entry-point group ``magpie.commands`` (``word = "module:function"``, naming this implementation) and the function is
    imported only when its command runs or ``magpie --help`` lists it; the command line calls this hook only for plugins
    whose distribution declares none (:mod:`magpie_core.cli.commands`). Errors raised as
    :class:`magpie_core.cli.kit.UsageError` or ``NotAvailable`` become one clear line and exit code 2, as for the
    built-in commands."""


@hookspec
def magpie_register_config_blocks(register: Register[ConfigBlock]) -> None:
    """Register config blocks (:class:`~magpie_core.interfaces.ConfigBlock`) that a plugin owns.

    A block is a top-level key of a config file (``mcp:`` in ``config.yaml``, ``ray_config:`` in a kernel or benchmark
    file, ``gap_analysis:`` in a benchmark file) or of a nested section that allows blocks (``profiler.targeted_trace:``
    of a benchmark file) with the plugin's own pydantic model. The core validates it with that model, with the same
    file:line errors as its own keys; without the plugin the key is an unknown key."""


@hookspec
def magpie_register_timers(register: Register[Timer]) -> None:
    """Register timers (:class:`~magpie_core.interfaces.Timer`), one per device kind: kernel-backend plugins contribute
    the timers of the devices they run on (``cpu``, ``cuda``, ``hip``...); the statistics around them are the core's."""


@hookspec
def magpie_detect_gpus() -> list[GpuInfo]:
    """Return the GPUs this plugin can see, as :class:`~magpie_core.reports.GpuInfo`.

    Called by ``magpie gpu-info`` and by automatic GPU selection. A vendor plugin returns an empty list when its tools
    are absent; it never raises for "no GPU"."""


@hookspec
def magpie_register_mcp_tools(register: Register[Callable[..., Any]]) -> None:
    """Register tools for ``magpie mcp``: plain typed Python callables.

    The function's name becomes the tool name, its docstring the description and its type hints the input and output
    schema. Every built-in tool is registered through this hook too."""


# --- Kernel files that a plugin builds or completes ------------------------------------------------------------------


@hookspec(firstresult=True)
def magpie_kernel_file_from_sources(sources: list[str], kernel_type: str | None) -> KernelConfigFile | None:
    """A kernel file (:class:`~magpie_core.config.kernel.KernelConfigFile`) for source files given on the command line
    with no YAML, testcase or compile command, when a plugin recognises them (a problem file and its solutions, say);
    None when not. ``kernel_type`` is ``--type`` when given, else None. Raise
    :class:`~magpie_core.config.errors.ConfigError` for files that are recognised but cannot run as given."""


@hookspec(firstresult=True)
def magpie_prepare_kernel_file(
    file: KernelConfigFile, config_dir: Path, source: Path | None
) -> KernelConfigFile | None:
    """A kernel file with a plugin's own block applied (its kernels and settings written out), or None to leave it as it
    is. Called for every kernel file before it runs (``source``: the YAML it came from, None when built from source
    files); raise :class:`~magpie_core.config.errors.ConfigError` for a kernel of yours that cannot run as configured,
    so that it is a config error (exit 2) before any worker starts, not a failed check."""


@hookspec(firstresult=True)
def magpie_testcase_env(latency: dict[str, Any] | None) -> dict[str, str] | None:
    """Variables for a kernel's testcase commands under the file's ``latency:`` block (AMD Magpie's), or None."""


@hookspec(firstresult=True)
def magpie_testcase_performance(output: str, latency: dict[str, Any] | None) -> PerformanceResult | None:
    """The :class:`~magpie_core.reports.PerformanceResult` a self-timing testcase printed (``latency:``), or None."""


# --- Vendor knowledge the engine-neutral core asks for ----------------------


@hookspec(firstresult=True)
def magpie_gpu_vendor_for_arch(arch: str) -> str | None:
    """The GPU vendor (``nvidia``, ``amd``, ...) of a GPU architecture name (``sm_90``, ``gfx942``), or None."""


@hookspec(firstresult=True)
def magpie_visible_devices_env(vendor: str) -> str | None:
    """The environment variable that restricts which of ``vendor``'s GPUs a process sees, or None. ``vendor`` is ``""``
    when nothing tells the vendor (GPUs pinned on a machine where none was detected): a plugin whose variable other
    runtimes honour too may answer for it."""


@hookspec(firstresult=True)
def magpie_container_gpu_access(vendor: str, devices: list[int]) -> ContainerGpuAccess | None:
    """How a container gets ``vendor``'s GPUs ``devices`` (empty: all): a
    :class:`~magpie_core.interfaces.ContainerGpuAccess` (``docker run`` arguments and environment variables), or None
    when ``vendor`` is not yours."""


@hookspec(firstresult=True)
def magpie_gpu_hardware_control(vendor: str) -> GpuHardwareControl | None:
    """The :class:`~magpie_core.interfaces.GpuHardwareControl` of ``vendor``'s GPUs, or None when not yours.

    The core records every GPU's clocks, power limit and persistence in each report through it, and applies the
    framework config's ``gpu.hardware`` (then restores it) only when that block is enabled."""


# --- Reports people look at --------------------------------------------------


@hookspec
def magpie_status_lines() -> list[str] | None:
    """Lines for people under ``magpie plugins``' table: the state of something a plugin relies on that its components
    do not show, and what to do about it (the trace analyzers say which trace reader reads plain-JSON traces: the
    compiled one of ``magpie-trace-native`` or msgspec alone, and why). Lines several plugins give are printed once;
    ``--json`` and ``--format csv`` print none."""


@hookspec
def magpie_report_sections(page: ReportPage) -> list[Any] | None:
    """Sections for the HTML report of one run (:class:`~magpie_core.report_pages.ReportPage`).

    ``page.kind`` says what ran (``analyze``, ``compare``, ``benchmark``, ``gap``, ``inference``, a plugin's own mode),
    ``page.report`` is its report as JSON data, ``page.workspace`` its folder. ``page.kit`` is the report plugin's
    section and figure helper: return ``page.kit.section(...)`` objects for the modes you know, None otherwise. The
    report plugin implements this hook as a wrapper that hands out the kit and writes the page; without it installed, no
    one is asked."""
