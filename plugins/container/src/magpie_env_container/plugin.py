"""The ``container`` execution environment (``-e container``).

Each work item (a kernel evaluation, ...) runs as ``docker run --rm IMAGE python
-m magpie_env_container.call CALL RESULT``: the function and item are pickled
into a folder mounted at the same path inside, along with the item's own
folders (workspace, kernel sources), and the result comes back the same way.
GPU flags are the core's (``--gpus`` for NVIDIA; ``/dev/kfd``, ``/dev/dri`` and
``HIP_VISIBLE_DEVICES`` for AMD), one GPU per item when items need GPUs.

The image must contain magpie and the plugins the item needs (``pip install``
the repository's distributions into it). Settings:

- ``MAGPIE_CONTAINER_IMAGE`` or ``magpie --docker-image IMAGE``: the image (required);
- ``MAGPIE_CONTAINER_GPU_VENDOR`` (``nvidia``/``amd``; default: detected GPUs' vendor);
- ``MAGPIE_DOCKER`` (default ``docker``): the docker client to run.

No Docker engine runs on magpie's CI machines: the tests check the command
built and run the round trip through a stand-in ``docker`` that executes the
inner command directly (see tests/test_container_environment.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_core import hookimpl
from magpie_core.interfaces import ExecutionEnvironment

if TYPE_CHECKING:
    from magpie_core.reports import ToolInfo


class ContainerError(RuntimeError):
    """An item could not be run in its container (no image, docker failed, no result)."""


def _mounts_for(item: Any) -> list[Path]:
    """Folders an item refers to (workspace, config folder): mounted at the same path."""
    paths = []
    for attr in ("workdir", "config_dir"):
        value = getattr(item, attr, None)
        if value:
            path = Path(value)
            path.mkdir(parents=True, exist_ok=True) if attr == "workdir" else None
            paths.append(path if path.is_dir() else path.parent)
    return paths


class ContainerEnvironment(ExecutionEnvironment):
    name = "container"
    description = "each item in its own `docker run` (image from --docker-image or MAGPIE_CONTAINER_IMAGE)"

    def __init__(self, image: str | None = None, vendor: str | None = None, docker: str | None = None) -> None:
        self.image = image
        self.vendor = vendor
        self.docker = docker

    def _settings(self) -> tuple[str, str | None, str]:
        image = self.image or os.environ.get("MAGPIE_CONTAINER_IMAGE")
        if not image:
            raise ContainerError("no container image: pass --docker-image IMAGE or set MAGPIE_CONTAINER_IMAGE")
        vendor = self.vendor or os.environ.get("MAGPIE_CONTAINER_GPU_VENDOR")
        docker = self.docker or os.environ.get("MAGPIE_DOCKER", "docker")
        return image, vendor, docker

    def command(self, call: Path, result: Path, item: Any, gpu: int | None, vendor: str | None) -> list[str]:
        import uuid

        from magpie_benchmark.serving.docker import container_name, docker_command  # every command loads this module

        image, _, docker = self._settings()
        inner = ["python", "-m", "magpie_env_container.call", str(call), str(result)]
        return docker_command(
            image=image,
            inner_argv=inner,
            name=container_name(f"{getattr(item, 'workdir', 'item')}-{uuid.uuid4().hex[:6]}"),
            vendor=vendor,
            devices=[gpu] if gpu is not None else [],
            gpus=gpu is not None,
            env={},
            mounts=[call.parent, *_mounts_for(item)],
            docker=docker,
        )

    def _run_one(self, fn: Callable[[Any], Any], item: Any, gpu: int | None, vendor: str | None) -> Any:
        import pickle  # here, like the other imports a run needs: every magpie command loads this module
        import tempfile

        exchange = Path(tempfile.mkdtemp(prefix="magpie-container-"))
        try:
            call, result = exchange / "call.pkl", exchange / "result.pkl"
            call.write_bytes(pickle.dumps((fn, item)))
            argv = self.command(call, result, item, gpu, vendor)
            proc = subprocess.run(argv, capture_output=True, text=True)
            if not result.exists():
                tail = (proc.stderr or proc.stdout)[-2000:]
                return ContainerError(f"container exited {proc.returncode} without a result: {tail}")
            return pickle.loads(result.read_bytes())
        except Exception as exc:
            return exc
        finally:
            shutil.rmtree(exchange, ignore_errors=True)

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
        try:
            _, vendor, _ = self._settings()
        except ContainerError as exc:
            return [exc for _ in items]
        gpus = _gpu_indices(vendor) if gpus_per_item else []
        vendor = vendor or (_detected_vendor() if gpus_per_item else None)
        slots = max(1, min(workers, len(gpus))) if gpus else max(1, workers)
        assigned = [(item, gpus[i % len(gpus)] if gpus else None) for i, item in enumerate(items)]
        from magpie_core.runtime.threads import map_in_threads

        return map_in_threads(
            lambda pair: self._run_one(fn, pair[0], pair[1], vendor), assigned, workers=slots, on_result=on_result
        )

    def tools(self) -> list[ToolInfo]:
        from magpie_core.reports import ToolInfo  # pydantic models: not at plugin load (every magpie command)

        docker = os.environ.get("MAGPIE_DOCKER", "docker")
        path = shutil.which(docker)
        return [ToolInfo(name="docker", path=path, found=path is not None, note=None if path else "not on PATH")]


def _gpu_indices(vendor: str | None) -> list[int]:
    from magpie_core.plugins import get_plugin_manager

    return [g.index for g in get_plugin_manager().detect_gpus() if vendor in (None, g.vendor)]


def _detected_vendor() -> str | None:
    from magpie_core.plugins import get_plugin_manager

    vendors = {g.vendor for g in get_plugin_manager().detect_gpus()}
    return vendors.pop() if len(vendors) == 1 else None


@hookimpl
def magpie_register_environments(register: Callable[[Any], None]) -> None:
    register(ContainerEnvironment())


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m magpie_env_container.call CALL RESULT")
