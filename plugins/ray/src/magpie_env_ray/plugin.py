"""The ``ray`` execution environment: each item is one Ray task that requests its GPUs.

``magpie -e ray analyze -k kernels.yaml`` evaluates every kernel as a Ray
task asking for ``num_gpus`` (1 by default for GPU kernels), so a cluster with
N free GPUs runs N kernels at once, one per GPU; Ray sets
``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` for each task. The item
(a :class:`~magpie_core.pipelines.jobs.KernelJob`) carries its correctness,
timing and profiler settings, so a remote task runs exactly what a local one
would. A ``compare`` of harness kernels is one task (its referee, workers and
interleaved blocks together: :class:`~magpie_core.pipelines.compare.BlocksElsewhere`).
A task that fails (an exception, a crashed or lost worker) comes back
as that item's exception object; the others are unaffected. Results are
returned in input order, and the pipeline builds the same reports as a local
run.

Cluster address: ``ray_config.cluster_address`` (kernel YAML, else framework
config), else ``RAY_ADDRESS``, else a Ray runtime this process already
started, else a new local one. Workspaces must be readable by every node:
see ``docs/ray.md`` (``shared_storage_path``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_core import hookimpl
from magpie_core.interfaces import ConfigBlock, ExecutionEnvironment

if TYPE_CHECKING:  # report models (pydantic): not imported when the plugin loads
    from magpie_core.reports import ToolInfo

log = logging.getLogger("magpie.ray")

_INIT_LOCK = threading.Lock()


def resolve_address(ray_config: dict[str, Any]) -> str | None:
    """Where to connect: the config's ``cluster_address``, else ``RAY_ADDRESS``, else None (local)."""
    address = ray_config.get("cluster_address") or os.environ.get("RAY_ADDRESS") or None
    return None if address in (None, "", "local") else str(address)


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    """Runs inside the Ray worker."""
    return fn(item)


def _task_options(gpus: float, cpus: float | None) -> dict[str, Any]:
    return {
        "num_gpus": gpus,
        # The task mostly waits on the isolated worker subprocess; a GPU task is
        # limited by its GPU, so it does not also reserve a CPU unless asked to.
        "num_cpus": cpus if cpus is not None else (0 if gpus > 0 else 1),
        "max_retries": 0,  # a crashing kernel must not be run again on another GPU
        "retry_exceptions": False,
    }


class RayEnvironment(ExecutionEnvironment):
    name = "ray"
    description = "Ray tasks on a local or remote cluster, one GPU per kernel (ray_config.cluster_address)"

    def __init__(self, ray_config: dict[str, Any] | None = None) -> None:
        self.ray_config = dict(ray_config or {})

    def with_options(self, options: dict[str, Any]) -> RayEnvironment:
        """Overlay a ``ray_config`` block (this plugin's model, or a plain mapping)."""
        from magpie_env_ray.config import environment_options

        return RayEnvironment({**self.ray_config, **environment_options(options.get("ray_config"))})

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo

        try:
            import ray

            return [ToolInfo(name="ray", version=ray.__version__, found=True)]
        except ImportError:
            return [ToolInfo(name="ray", found=False, note="pip install magpie-env-ray")]

    # -- connection ------------------------------------------------------------

    def connect(self) -> Any:
        """Return the ``ray`` module, initialized against the configured cluster."""
        import ray

        with _INIT_LOCK:
            if ray.is_initialized():
                return ray
            address = resolve_address(self.ray_config)
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "WARNING"}
            if address is not None:
                kwargs["address"] = address
            log.info("connecting to Ray at %s", address or "a new local runtime")
            ray.init(**kwargs)
        return ray

    def _check_shared_storage(self, ray: Any, items: list[Any]) -> None:
        shared = self.ray_config.get("shared_storage_path")
        alive = [n for n in ray.nodes() if n.get("Alive")]
        if len(alive) <= 1:
            return
        for item in items:
            workdir = getattr(item, "workdir", None)
            if workdir and shared and not Path(workdir).resolve().is_relative_to(Path(shared).resolve()):
                log.warning(
                    "%d Ray nodes, but workspace %s is not under shared_storage_path %s: "
                    "tasks on other nodes will not see it (use --output-dir on shared storage)",
                    len(alive),
                    workdir,
                    shared,
                )
                return
            if workdir and not shared:
                log.warning("%d Ray nodes and no ray_config.shared_storage_path: see docs/ray.md", len(alive))
                return

    # -- work --------------------------------------------------------------------

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        *,
        workers: int = 1,
        gpus_per_item: float = 0,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        items = list(items)
        if not items:
            return []
        ray = self.connect()
        self._check_shared_storage(ray, items)
        configured = self.ray_config.get("num_gpus_per_task")
        gpus = float(configured) if configured is not None else float(gpus_per_item)
        cpus = self.ray_config.get("num_cpus_per_task")
        available = float(ray.cluster_resources().get("GPU", 0))
        if gpus > available:
            error = RuntimeError(
                f"each task needs {gpus:g} GPU(s) but the Ray cluster has {available:g}; "
                "for CPU-only work set ray_config.num_gpus_per_task: 0"
            )
            for i in range(len(items)):
                if on_result is not None:
                    on_result(i, error)
            return [error for _ in items]  # unschedulable tasks would wait forever
        remote = ray.remote(_call).options(**_task_options(gpus, cpus))
        fn_ref = ray.put(fn)
        refs = [remote.remote(fn_ref, item) for item in items]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:  # gather as tasks finish (for progress); results stay in input order
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    try:
                        result = ray.get(ref)
                    except Exception as exc:  # RayTaskError, WorkerCrashedError, ...: this item alone failed
                        result = _as_failure(exc)
                    results[index[ref]] = result
                    if on_result is not None:
                        on_result(index[ref], result)
        except BaseException:  # Ctrl-C, SIGTERM: the tasks this run started stop too (a KeyboardInterrupt in
            for ref in pending:  # each, so its own cleanup stops the worker processes it started)
                ray.cancel(ref)
            raise
        return results


def _as_failure(exc: BaseException) -> BaseException:
    """The task's own exception where Ray has it (a RayTaskError wraps the original)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return cause
    return RuntimeError(f"Ray task failed: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:500]}")


@hookimpl
def magpie_register_environments(register: Callable[[Any], None]) -> None:
    register(RayEnvironment())


@hookimpl
def magpie_register_config_blocks(register: Callable[[Any], None]) -> None:
    from magpie_env_ray.config import BenchmarkRayConfig, RayConfig  # pydantic models: built only when asked for

    register(
        ConfigBlock(
            "ray_config",
            RayConfig,
            scopes=("framework", "kernel_file"),
            description="Ray tasks: cluster address, shared storage, GPUs and CPUs per task",
            implies_environment="ray",
        )
    )
    register(
        ConfigBlock(
            "ray_config",
            BenchmarkRayConfig,
            scopes=("benchmark",),
            description="the Ray job that runs a whole benchmark (run_mode: ray)",
        )
    )
