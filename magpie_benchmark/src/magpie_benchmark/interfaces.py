"""What the benchmark's own component kinds must provide: serving frameworks (servers, and offline frameworks)
and benchmark checks.

Only ``magpie benchmark`` runs them, so they live with it, as do their hooks (:mod:`magpie_benchmark.hookspecs`:
a framework registers with ``magpie_register_serving_frameworks``, a check with ``magpie_register_benchmark_checks``);
the core's registry holds them like any component and knows nothing of what one does.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from magpie_core.interfaces import Component

if TYPE_CHECKING:
    from magpie_benchmark.config import BenchmarkConfig

__all__ = ["BenchmarkCheck", "CheckTarget", "CheckUnavailable", "OfflineFramework", "OfflineRun", "ServingFramework"]


class ServingFramework(Component):
    """An LLM serving engine that ``magpie benchmark`` can start and drive."""

    @abstractmethod
    def server_command(self, config: BenchmarkConfig, host: str, port: int) -> list[str]:
        """The argv that starts an OpenAI-compatible server (never a shell string)."""

    def server_env(self, config: BenchmarkConfig, profile_dir: Path | None) -> dict[str, str]:
        """Environment variables the server needs (profiler output folder, ...)."""
        return {}

    def profiler_args(self, config: BenchmarkConfig, profile_dir: Path) -> list[str]:
        """Extra server arguments that turn the torch profiler on, writing under ``profile_dir``."""
        return []

    def start_profile_body(self, config: BenchmarkConfig) -> dict[str, Any] | None:
        """JSON body of ``POST start_profile`` (None: no body), e.g. a step limit from
        ``profiler.torch_profiler.num_steps`` when :attr:`supports_num_steps`."""
        return None

    #: the plugin honours ``profiler.torch_profiler.num_steps`` (server flag or start_profile body)
    supports_num_steps: ClassVar[bool] = False
    readiness_path: ClassVar[str] = "/health"
    start_profile_path: ClassVar[str | None] = None
    stop_profile_path: ClassVar[str | None] = None
    #: file patterns of the traces the server writes into its profile folder
    trace_patterns: ClassVar[tuple[str, ...]] = ("*.pt.trace.json.gz", "*.pt.trace.json", "*.trace.json.gz")

    def default_image(self, gpu_arch: str | None) -> str | None:
        """Default container image for a GPU arch (``sm_90``, ``gfx942``), if any."""
        return None

    #: GET path of the server's Prometheus metrics (None: the server has none magpie reads)
    metrics_path: ClassVar[str | None] = None

    def prefix_cache_counters(self, metrics_text: str) -> dict[str, float] | None:
        """``{"hits": ..., "queries": ...}`` (cumulative prompt tokens found in / looked up in the prefix
        cache) read from the ``metrics_path`` page; None when the page does not have them."""
        return None


@dataclass
class OfflineRun:
    """What one run of an offline workload's command produced (:meth:`OfflineFramework.run_offline`).

    ``metrics`` are the workload's own numbers (AMD Magpie's ``raw_result``); ``throughput`` and
    ``latency`` the same numbers in AMD Magpie's report blocks. ``errors`` name the file and field at
    fault; a run with errors measured nothing that can be trusted.
    """

    argv: list[str]
    exit_code: int | None
    duration_s: float
    log: Path
    timed_out: bool = False
    result_file: Path | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    throughput: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    traces: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class OfflineFramework(Component):
    """A framework with no server: one command is the whole benchmark (AMD Magpie's command-launched,
    offline frameworks, configured by ``benchmark.run_cmd``). Registered with
    ``magpie_register_serving_frameworks`` like a server; ``magpie benchmark`` runs it instead of starting
    a server and driving load."""

    offline: ClassVar[bool] = True

    @abstractmethod
    def run_offline(
        self, config: BenchmarkConfig, out_dir: Path, *, profile: bool, env: dict[str, str], log_path: Path
    ) -> OfflineRun:
        """Run the configured command once, writing its results under ``out_dir`` and its output into
        ``log_path``; ``profile``: the profiled diagnostic pass (traces instead of timings). ``env`` is
        added to this process's environment. Runs in magpie's process: the command must be started
        through :func:`magpie_core.runtime.processes.run_command` (own process group, timeout, Ctrl-C)."""


class CheckUnavailable(RuntimeError):
    """A benchmark check the config asks for cannot run here (its tool is not installed, ...).

    ``key`` names the config key that asked for it; the message says how to make it available.
    ``magpie benchmark`` stops with exit 2 before the server starts.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class CheckTarget:
    """The served model a benchmark check runs against, once the measurement is done."""

    base_url: str
    model: str
    config: BenchmarkConfig
    #: the run's workspace; a check writes its own files under ``workspace / check.name``
    workspace: Path


class BenchmarkCheck(Component):
    """A check that runs against the served model after the load (a quality gate, ...).

    Its verdict lands in the report's ``checks`` under the check's ``name``; a failed verdict fails
    the run (``success: false``, exit 1) while every load metric measured is kept.
    """

    #: ``envs`` keys that switch this check on in an AMD Magpie file (a truthy value asks for it)
    switch_envs: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def wanted(self, config: BenchmarkConfig) -> bool:
        """Whether this run asks for the check (its config block, its ``switch_envs``)."""

    def preflight(self, config: BenchmarkConfig) -> None:
        """Raise :class:`CheckUnavailable` when the check cannot run here; called before the server starts."""

    @abstractmethod
    def run(self, target: CheckTarget) -> dict[str, Any]:
        """Run the check; a JSON-able verdict with at least ``passed`` (bool) and ``summary`` (one line).

        Must not raise for a failed check or a failed tool (say so in the verdict); ``KeyboardInterrupt``
        goes on after the check's processes are stopped.
        """
