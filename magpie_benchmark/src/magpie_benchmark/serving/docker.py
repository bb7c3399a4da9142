"""The ``docker run`` command for a containerized server or work item.

Built as an argv (never a shell string). GPU access comes from the vendor plugins
(``magpie_container_gpu_access``: e.g. ``--gpus`` for one vendor, device nodes and a
visible-devices variable for another). The container shares the host network (the
server binds the host port magpie chose) and IPC namespace. Secrets such as
``HF_TOKEN`` are passed by name only (``-e HF_TOKEN``): docker copies the
value from magpie's environment, so it never appears in the argv or logs.
Local paths the server needs (model folder, HF cache, the run workspace
where traces land) are mounted at the same path inside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from magpie_benchmark.amd_magpie import is_secret

if TYPE_CHECKING:
    from magpie_core.interfaces import ContainerGpuAccess
    from magpie_core.plugins import PluginManager

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def vendor_for(gpu_arch: str | None, detected_vendor: str | None, manager: PluginManager | None = None) -> str | None:
    """The GPU vendor of the config's ``gpu_arch`` (as a vendor plugin reads it), else the one detected."""
    if gpu_arch:
        from magpie_core.plugins import get_plugin_manager

        vendor = (manager or get_plugin_manager()).first("magpie_gpu_vendor_for_arch", arch=gpu_arch)
        if vendor:
            return str(vendor)
    return detected_vendor


def gpu_access(vendor: str | None, devices: Sequence[int], manager: PluginManager | None = None) -> ContainerGpuAccess:
    """What ``docker run`` needs for ``vendor``'s GPUs ``devices``, from the vendor's plugin."""
    from magpie_core.plugins import get_plugin_manager

    if vendor is None:
        raise ValueError("cannot tell the GPU vendor for docker mode: set gpu_arch (sm_90, gfx942, ...)")
    access = (manager or get_plugin_manager()).first(
        "magpie_container_gpu_access", vendor=vendor, devices=list(devices)
    )
    if access is None:
        raise ValueError(f"no installed plugin knows how to give a container {vendor!r} GPUs (see 'magpie plugins')")
    return access


def container_name(label: str) -> str:
    return "magpie-" + re.sub(r"[^a-zA-Z0-9_.-]+", "-", label)[:60]


def docker_command(
    *,
    image: str,
    inner_argv: Sequence[str],
    name: str,
    vendor: str | None,
    devices: Sequence[int],
    env: dict[str, str],
    mounts: Sequence[str | Path] = (),
    hf_cache: str | None = None,
    docker: str = "docker",
    environ: dict[str, str] | None = None,
    gpus: bool = True,
) -> list[str]:
    """``docker run`` argv that runs ``inner_argv`` in ``image`` with the given GPUs (``gpus=False``: none)."""
    environ = os.environ if environ is None else environ
    argv = [docker, "run", "--rm", "--name", name, "--network", "host", "--ipc", "host", "--shm-size", "16g"]
    if gpus:
        access = gpu_access(vendor, devices)
        argv += access.args
        env = {**env, **access.env}
    for key, value in sorted(env.items()):
        if key in SECRET_ENV or is_secret(key):
            continue
        argv += ["-e", f"{key}={value}"]
    for key in sorted({*SECRET_ENV, *(k for k in env if is_secret(k))}):
        if key in environ or key in env:
            argv += ["-e", key]  # name only: docker reads the value from its own environment
    seen: set[str] = set()
    for path in mounts:
        p = str(Path(path).resolve())
        if p not in seen:
            seen.add(p)
            argv += ["-v", f"{p}:{p}"]
    if hf_cache:
        argv += ["-v", f"{Path(hf_cache).expanduser().resolve()}:/root/.cache/huggingface"]
    argv.append(image)
    argv += list(inner_argv)
    return argv


def stop_command(name: str, grace_s: int = 30, docker: str = "docker") -> list[str]:
    return [docker, "stop", "-t", str(grace_s), name]
