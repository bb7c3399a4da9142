"""Kernel files: loaded (or built from sources by a plugin), prepared, checked, turned into jobs; their environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magpie_core.config.common import PluginBlocksModel, config_blocks
from magpie_core.config.kernel import KernelConfigFile
from magpie_core.config.loader import ConfigError, load_config, load_yaml
from magpie_core.pipelines.jobs import KernelJob, plugin_answer
from magpie_core.plugins import UnknownComponentError, get_plugin_manager
from magpie_core.runtime.workspace import Workspace


def load_kernel_file(path: Path) -> KernelConfigFile:
    file = load_config(KernelConfigFile, path)
    check_backends(file, path)
    return file


def kernel_file_from_sources(sources: list[str], kernel_type: str | None) -> KernelConfigFile | None:
    """A kernel file a plugin builds for source files it recognises (no YAML needed), or None."""
    return plugin_answer("magpie_kernel_file_from_sources", sources=sources, kernel_type=kernel_type)


def prepare_kernel_file(file: KernelConfigFile, config_dir: Path, source: Path | None = None) -> KernelConfigFile:
    """``file`` with the plugins' own blocks applied, checked by them before anything runs."""
    prepared = plugin_answer("magpie_prepare_kernel_file", file=file, config_dir=config_dir, source=source)
    prepared = prepared if prepared is not None else file
    if not prepared.all_kernels():
        raise ConfigError(source or config_dir, "no kernels: give 'kernel:' or 'kernels:'")
    return prepared


def kernel_jobs(file: KernelConfigFile, config_dir: Path, ws: Workspace, measure_performance: bool) -> list[KernelJob]:
    return [
        KernelJob(
            kernel=kernel.model_dump(mode="json", exclude_none=True),
            correctness=file.effective_correctness(kernel).model_dump(mode="json"),
            performance=file.effective_performance(kernel),
            config_dir=str(config_dir.resolve()),
            workdir=str(ws.path / kernel.id),
            measure_performance=measure_performance,
            default_compile=file.compiling.enable_default_compile if file.compiling else True,
            latency=file.latency.model_dump(mode="json") if file.latency else None,
        )
        for kernel in file.all_kernels()
    ]


def check_backends(file: KernelConfigFile, source: Path | None = None) -> None:
    """Fail before running anything if a kernel type has no installed backend (read from ``source``: at its line)."""
    manager = get_plugin_manager()
    locs = ([("kernel", "type")] if file.kernel else []) + [("kernels", i, "type") for i in range(len(file.kernels))]
    for loc, kernel in zip(locs, file.all_kernels(), strict=True):
        try:
            manager.get("kernel_backend", kernel.type)
        except UnknownComponentError as exc:
            if source is None:
                raise
            raise ConfigError(source, str(exc), load_yaml(source)[1].get(loc), loc) from None


def block_options(*configs: PluginBlocksModel | None) -> dict[str, dict[str, Any]]:
    """The plugin config blocks of ``configs`` as plain mappings, later configs overlaying earlier ones."""
    options: dict[str, dict[str, Any]] = {}
    for config in configs:
        for key, block in (config.plugin_blocks() if config is not None else {}).items():
            options[key] = {**options.get(key, {}), **block.model_dump(exclude_none=True)}
    return options


def environment_options(file: KernelConfigFile, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Config blocks for the execution environment: the framework's ``defaults``, then the file's own
    (top level, then ``scheduler:``)."""
    options = dict(defaults or {})
    for key, block in block_options(file, file.scheduler).items():
        options[key] = {**options.get(key, {}), **block}
    return options


def shared_output_dir(options: dict[str, Any]) -> str | None:
    """A ``shared_storage_path`` from any environment block: where workspaces go when none is given."""
    for block in options.values():
        if isinstance(block, dict) and block.get("shared_storage_path"):
            return str(block["shared_storage_path"])
    return None


def file_environment(file: KernelConfigFile) -> str | None:
    """The environment a kernel file asks for: ``scheduler.environment``, else the one a plugin block
    implies (e.g. AMD Magpie's cluster block)."""
    if file.scheduler and file.scheduler.environment:
        return file.scheduler.environment
    blocks = config_blocks(KernelConfigFile.block_scope)
    held = [*file.plugin_blocks(), *(file.scheduler.plugin_blocks() if file.scheduler else {})]
    return next((blocks[key].implies_environment for key in held if blocks[key].implies_environment), None)
