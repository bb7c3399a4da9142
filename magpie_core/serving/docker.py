"""The ``docker run`` command for a containerized server.

Built as an argv (never a shell string). GPU access per vendor:
NVIDIA ``--gpus "device=0,1"``; AMD ``--device /dev/kfd --device /dev/dri
--group-add video --security-opt seccomp=unconfined --cap-add SYS_PTRACE``
plus ``HIP_VISIBLE_DEVICES``. The container shares the host network (the
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

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
AMD_DEVICE_FLAGS = [
    "--device",
    "/dev/kfd",
    "--device",
    "/dev/dri",
    "--group-add",
    "video",
    "--security-opt",
    "seccomp=unconfined",
    "--cap-add",
    "SYS_PTRACE",
]


def vendor_for(gpu_arch: str | None, detected_vendor: str | None) -> str | None:
    """``nvidia`` or ``amd`` from the config's ``gpu_arch`` (``sm_90``, ``gfx942``) or what was detected."""
    if gpu_arch:
        if gpu_arch.lower().startswith("gfx"):
            return "amd"
        if re.match(r"(sm_?\d+|compute_\d+)", gpu_arch.lower()):
            return "nvidia"
    return detected_vendor


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
    if not gpus:
        pass
    elif vendor == "nvidia":
        argv += ["--gpus", f'"device={",".join(map(str, devices))}"' if devices else "all"]
    elif vendor == "amd":
        argv += AMD_DEVICE_FLAGS
        if devices:
            env = {**env, "HIP_VISIBLE_DEVICES": ",".join(map(str, devices))}
    else:
        raise ValueError("cannot tell the GPU vendor for docker mode: set gpu_arch (sm_90, gfx942, ...)")
    for key, value in sorted(env.items()):
        if key in SECRET_ENV:
            continue
        argv += ["-e", f"{key}={value}"]
    for key in SECRET_ENV:
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
