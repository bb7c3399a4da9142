"""What each plugin kind must provide.

Components are plain objects; subclassing these ABCs is the easy way to get the defaults, and :func:`component_names` is
how the registry names them. Methods that run inside an isolated worker process say so: they may crash or hang without
harming the run, because the core runs them in a subprocess."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from magpie_core.config.kernel import KernelConfig
    from magpie_core.measurement.timing import TimingSession
    from magpie_core.reports import (
        CompileResult,
        EvaluationOutcome,
        EvaluationTask,
        KernelCounters,
        ParsedKernelName,
        ToolInfo,
    )


class Component(ABC):
    """Shared by every kind: a unique ``name`` and a one-line ``description``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def tools(self) -> list[ToolInfo]:
        """External programs this component relies on, and whether they were found."""
        return []


class KernelBackend(Component):
    """Compiles, checks and times kernels of one or more ``type`` values."""

    kernel_types: ClassVar[tuple[str, ...]] = ()
    #: How ``discover_kernels`` recognises this backend's sources: file suffix -> regexes, any of which marks a kernel
    #: source (an empty tuple: the suffix alone). A named group ``name`` captures kernel names.
    source_patterns: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: Modules a timing worker of this backend needs (its heavy imports): imported once into the fork server
    #: that compare's worker processes are forked from, so each process start costs a fork, not an import.
    #: They must not start threads or touch a device when imported.
    worker_preload: ClassVar[tuple[str, ...]] = ()
    #: Environment variables this backend's worker processes start with where the user set none (read as a
    #: runtime library loads: they reach the fork server as it starts, and every worker started afresh).
    worker_env: ClassVar[dict[str, str]] = {}
    #: Its timing sessions send one ``{"captured": ...}`` line a timed batch and one before the first
    #: (:func:`~.measurement.worker.tell`), which its referee's ``verify`` judges: the parent rejects another number.
    captures_launches: ClassVar[bool] = False

    def worker_preload_for(self, kernel: KernelConfig) -> tuple[str, ...]:
        """More modules for the fork server when a compare has ``kernel`` (e.g. a JIT compiler's warm-up, too
        costly to pay in every compare); same rules as :attr:`worker_preload`."""
        return ()

    def compile(self, kernel: KernelConfig, build_dir: Path) -> CompileResult | None:
        """Build the kernel's sources in the parent process; ``None``: nothing to build. Called only when the kernel
        config gives no ``compile_command`` of its own."""
        return None

    def annotate_compile(self, kernel: KernelConfig, result: CompileResult) -> CompileResult:
        """Read the output of the config's own ``compile_command`` (resources, error locations), in the parent process
        after it ran; the default changes nothing."""
        return result

    def cannot_run(self, kernel: KernelConfig) -> str | None:
        """Why a compiled kernel cannot run on this machine (e.g. no device of its vendor), or ``None``. When a reason
        is given, correctness and performance are reported as ``not_run`` with it: neither a failure nor a pass."""
        return None

    @abstractmethod
    def evaluate(self, task: EvaluationTask) -> EvaluationOutcome:
        """Correctness, then timing, of one kernel. Runs in an isolated worker process."""

    def open_timing(self, task: EvaluationTask) -> TimingSession | None:
        """Keep a kernel whose correctness passed ready for timing, in a long-lived worker process.

        ``compare`` then times every candidate in short interleaved blocks through this session
        (:class:`magpie_core.measurement.timing.SamplerSession` wraps the core's batch sampler). ``None``: not
        supported, and ``compare`` falls back to whole timing rounds with :meth:`evaluate`."""
        return None


class Timer(Component):
    """Times launches on one kind of device (``cpu``, ``cuda``, ...). A timer only supplies a clock
    (:class:`magpie_core.measurement.timing.BatchClock`); batch sizes, cold caches, warm-up and stopping are the core's
    (:func:`magpie_core.measurement.timing.measure`)."""

    device_kinds: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def clock(self, device: Any, graph_replay: bool = False) -> Any:
        """A clock whose ``time_batch(launch, n)`` times ``n`` launches between two timestamps."""


class Profiler(Component):
    """Collects per-kernel hardware counters or kernel times for a command."""

    @abstractmethod
    def profile(
        self, argv: Sequence[str], cwd: Path, env: dict[str, str], out_dir: Path, options: dict[str, Any] | None = None
    ) -> list[KernelCounters]:
        """Run ``argv`` under the profiler and return one row per kernel (launches grouped by name).

        ``options`` is the profiler's block of the performance settings (``performance.<profiler name>: {...}``) plus
        ``profiler_ranges: true`` when ``argv`` marks its region of interest with the device runtime's profiler
        start/stop calls (the built-in harness does), so only that region needs profiling."""

    def notes(self, options: dict[str, Any] | None = None) -> list[str]:
        """What the reader of the numbers must know (clocks locked, caches flushed, ...)."""
        return []


class TraceAnalyzer(Component):
    """Turns profiler trace files into tables and a JSON summary. Read traces with the public library
    :mod:`magpie_trace` (streaming decode, column tables, split-by-bytes for several processes)."""

    @abstractmethod
    def analyze(self, traces: Path, options: dict[str, Any], out_dir: Path | None) -> dict[str, Any]:
        """Analyze ``traces`` (a trace file or a folder of them) and write outputs under ``out_dir`` (``None``: the
        analyzer's default place, said in the summary).

        ``options`` are the analyzer's own settings (its documented keys); an unusable input is a ``ValueError`` or
        ``OSError`` with a message that names the file. Returns the summary."""


class KernelSourceFinder(Component):
    """Maps kernel names, as traces show them, to the source files that define them."""

    @abstractmethod
    def find(self, kernels: Sequence[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        """Find sources for ``kernels`` (``[{"name": str, "parsed": ParsedKernelName | None}]``): ``options`` name
        where to look (``repos``: folders) and how (``cache_dir``, ``clone``).
        Returns ``{"sources": {name: ...}, "repos": [...], "errors": [...]}``."""


class KernelNameParser(Component):
    """Recognises one family of kernel names."""

    #: Parsers are tried in ascending priority; the first non-None answer wins.
    priority: ClassVar[int] = 100

    @abstractmethod
    def parse(self, name: str, context: dict[str, Any] | None = None) -> ParsedKernelName | None:
        """Describe ``name``, or return ``None`` when it is not of this family."""


class ExecutionEnvironment(Component):
    """Where work runs. ``map`` keeps input order and never raises for one item."""

    def with_options(self, options: dict[str, Any]) -> ExecutionEnvironment:
        """This environment configured by the run's config blocks (e.g. ``{"ray_config": {...}}``).

        The pipelines pass every block a kernel file or framework config gives for environments; an environment reads
        the ones it knows and ignores the rest."""
        return self

    @abstractmethod
    def map(
        self,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        *,
        workers: int = 1,
        gpus_per_item: float = 0,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """Apply the picklable top-level ``fn`` to each item; results in input order. An item whose call raised yields
        the exception object instead of a result. ``on_result(index, result)`` is called as each item finishes (for
        progress)."""


@dataclass(frozen=True)
class ConfigBlock:
    """A top-level config key owned by a plugin, validated by the plugin's own model.

    ``scopes`` says which files may hold it: ``framework`` (``config.yaml``), ``kernel_file`` (a kernel YAML, also
    inside its ``scheduler:``), ``benchmark`` (the ``benchmark:`` block) and ``benchmark.profiler`` (its ``profiler:``).
    """

    name: str
    model: type[BaseModel]
    scopes: tuple[str, ...]
    description: str = ""
    #: an execution environment that a kernel file holding this block runs on unless told otherwise
    #: (AMD Magpie: its cluster block means the cluster environment)
    implies_environment: str | None = None


@dataclass(frozen=True)
class ContainerGpuAccess:
    """What ``docker run`` needs to give a container some GPUs of one vendor."""

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


class HardwareControlError(RuntimeError):
    """A GPU setting could not be read or changed (no permission, not supported); the message says which."""


class GpuHardwareControl(ABC):
    """One vendor's GPU clocks, power limit and persistence: read always, changed only when asked.

    Settings (AMD Magpie's ``gpu.hardware``, flattened per GPU): ``power_limit_w``, ``gpu_clock_mhz`` /
    ``mem_clock_mhz`` ([min, max] to lock to), ``gpu_clock_level`` / ``mem_clock_level`` (a vendor's performance level).
    A setting the vendor cannot make raises :class:`HardwareControlError` naming it; nothing is left half-applied."""

    vendor: ClassVar[str] = ""

    @abstractmethod
    def query(self, indices: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """One row per GPU: ``index``, clocks (MHz), ``power_limit_w``, ``persistence_mode``, ``source``..."""

    @abstractmethod
    def apply(self, index: int, settings: dict[str, Any]) -> dict[str, Any]:
        """Make ``settings`` on GPU ``index``; return what :meth:`restore` needs to undo them."""

    @abstractmethod
    def restore(self, index: int, saved: dict[str, Any]) -> None:
        """Undo :meth:`apply` with what it returned (defaults, or the earlier power limit)."""


def component_names(kind: str, component: Any) -> tuple[str, ...]:
    """The names a component claims in the registry of its kind."""
    if kind == "kernel_backend" and getattr(component, "kernel_types", ()):
        return tuple(component.kernel_types)
    if kind == "timer" and getattr(component, "device_kinds", ()):
        return tuple(component.device_kinds)
    if kind == "config_block":
        return tuple(f"{scope}.{component.name}" for scope in component.scopes)
    name = getattr(component, "name", None)
    if name is None and kind == "mcp_tool" and callable(component):
        name = getattr(component, "__name__", None)  # MCP tools are plain functions
    if not isinstance(name, str) or not name:
        raise TypeError(f"{type(component).__name__} has no 'name'")
    return (name,)
