"""The ``ray_config:`` blocks this plugin owns, as AMD Magpie writes them.

In ``config.yaml`` and kernel files (top level or inside ``scheduler:``) the block
configures the tasks (:class:`RayConfig`); in a benchmark file it describes the job
that runs the whole benchmark (:class:`BenchmarkRayConfig`). Both turn into the
environment's options with :func:`environment_options`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RayConfig(_Strict):
    cluster_address: str | None = None
    shared_storage_path: str | None = None
    num_gpus_per_task: float | None = None
    num_cpus_per_task: float | None = None


class BenchmarkRayConfig(_Strict):
    cluster_address: str = "auto"
    shared_storage_path: str = "/shared_nfs/magpie"
    entrypoint_num_gpus: float = 0
    entrypoint_num_cpus: float = 16
    multi_node: bool = False
    total_num_gpus: int = 8
    num_nodes: int = 1
    gpus_per_node: int = 8
    pip_packages: list[str] = Field(default_factory=list)
    env_vars: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    install_magpie: bool = True
    magpie_install_path: str | None = None


def environment_options(block: RayConfig | BenchmarkRayConfig | dict[str, Any] | None) -> dict[str, Any]:
    """The task options a block asks for (``cluster_address``, ``shared_storage_path``, ``num_*_per_task``).

    A benchmark block's ``entrypoint_num_gpus`` / ``entrypoint_num_cpus`` count only when the file
    sets them (their defaults would override the server's own GPU count).
    """
    if block is None:
        return {}
    if isinstance(block, dict):
        return dict(block)
    if isinstance(block, BenchmarkRayConfig):
        options: dict[str, Any] = {
            "cluster_address": block.cluster_address,
            "shared_storage_path": block.shared_storage_path,
        }
        if "entrypoint_num_cpus" in block.model_fields_set:
            options["num_cpus_per_task"] = block.entrypoint_num_cpus
        if "entrypoint_num_gpus" in block.model_fields_set:
            options["num_gpus_per_task"] = block.entrypoint_num_gpus
        return options
    return block.model_dump(exclude_none=True)
