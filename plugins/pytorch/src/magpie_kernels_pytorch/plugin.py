"""Registers the PyTorch kernel backend and the CPU and CUDA/ROCm timers.

Torch is imported only when a kernel is evaluated or a clock is made: every
``magpie`` command loads this module to register plugins, and ``import torch``
alone costs about a second.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from magpie_core import hookimpl
from magpie_core.interfaces import Timer
from magpie_kernels_pytorch.harness_backend import HarnessBackend

if TYPE_CHECKING:
    from magpie_core.config.kernel import KernelConfig, KernelConfigFile
    from magpie_core.reports import CompileResult, EvaluationTask
    from magpie_kernels_pytorch.harness import HarnessOptions


def compile_setting(kernel: KernelConfig) -> Any:
    """``options.torch_compile: true`` or ``{mode: max-autotune, ...}``; type ``torch_compile`` implies it."""
    return kernel.options.get("torch_compile", kernel.type == "torch_compile")


def compile_wrapper(fn: Callable[..., Any], kernel: KernelConfig) -> Callable[..., Any]:
    setting = compile_setting(kernel)
    if not setting:
        return fn
    kwargs = setting if isinstance(setting, dict) else {}
    import torch

    return torch.compile(fn, **kwargs)


class PyTorchBackend(HarnessBackend):
    name = "pytorch"
    kernel_types = ("pytorch", "torch", "py", "torch_compile")
    description = "PyTorch callables or nn.Modules, eager or torch.compile, on CPU, CUDA or ROCm"
    #: KernelBench-style files: an ``nn.Module`` named Model* or a ``get_inputs`` function
    source_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        ".py": (r"(?m)^class\s+(?P<name>Model\w*)\s*\(\s*(?:torch\.)?nn\.Module", r"(?m)^def\s+get_inputs\s*\("),
    }

    def worker_preload_for(self, kernel: KernelConfig) -> tuple[str, ...]:
        return ("magpie_kernels_pytorch.compile_preload",) if compile_setting(kernel) else ()

    def compile(self, kernel: KernelConfig, build_dir: Path) -> CompileResult | None:
        """Inline C++/CUDA extensions the entry's file builds (``load_inline``), in a folder of this kernel's own;
        None (nothing to build) for plain PyTorch. A syntax error or a missing entry is a failed compile too."""
        from magpie_core.reports import CompileResult, StageStatus
        from magpie_kernels_pytorch.extensions import build
        from magpie_kernels_pytorch.static_check import problem

        found = problem(kernel, [Path(kernel.working_dir or "."), Path.cwd()])
        if found is not None:
            return CompileResult(status=StageStatus.FAILED, message=found)
        return build(kernel, build_dir)

    def harness_options(self, task: EvaluationTask) -> HarnessOptions:
        from magpie_core.config.kernel import KernelConfig  # here: building the kernel models costs every command
        from magpie_kernels_pytorch.harness import HarnessOptions

        kernel = KernelConfig.model_validate(task.kernel)
        compiled = bool(compile_setting(kernel))
        return HarnessOptions(
            backend=self.name,
            wrap=compile_wrapper,
            environment={"variant": "torch.compile" if compiled else "eager"},
        )


class CpuTimer(Timer):
    name = "cpu"
    device_kinds = ("cpu",)
    description = "perf_counter_ns around batches of launches"

    def clock(self, device: Any, graph_replay: bool = False) -> Any:
        from magpie_kernels_pytorch.timers import CpuClock

        return CpuClock()


class CudaEventTimer(Timer):
    name = "cuda-events"
    device_kinds = ("cuda",)
    description = "device events around batches behind a spin guard; optional graph replay"

    def clock(self, device: Any, graph_replay: bool = False) -> Any:
        from magpie_kernels_pytorch.timers import CudaClock

        return CudaClock(device, graph_replay)


@hookimpl
def magpie_register_kernel_backends(register: Callable[[Any], None]) -> None:
    register(PyTorchBackend())


@hookimpl
def magpie_register_timers(register: Callable[[Any], None]) -> None:
    register(CpuTimer())
    register(CudaEventTimer())


@hookimpl
def magpie_register_config_blocks(register: Callable[[Any], None]) -> None:
    from magpie_core.interfaces import ConfigBlock
    from magpie_kernels_pytorch.kernelbench import BLOCK, KernelBenchBlock

    register(
        ConfigBlock(
            name=BLOCK,
            model=KernelBenchBlock,
            scopes=("kernel_file",),
            description="KernelBench problem and solutions, checked the way KernelBench checks them",
        )
    )


@hookimpl
def magpie_kernel_file_from_sources(sources: list[str], kernel_type: str | None) -> KernelConfigFile | None:
    """KernelBench files on the command line (``magpie compare ref.py sol.py``): the kernel file a YAML would be."""
    if kernel_type is not None and kernel_type not in PyTorchBackend.kernel_types:
        return None
    from magpie_core.config.kernel import KernelConfigFile
    from magpie_kernels_pytorch.kernelbench import BLOCK, block_for_sources

    block = block_for_sources(sources)
    if block is None:
        return None
    file = KernelConfigFile.model_validate({BLOCK: block.model_dump()})
    return _expand(file, Path.cwd(), None, kernel_type or PyTorchBackend.name)


@hookimpl
def magpie_prepare_kernel_file(
    file: KernelConfigFile, config_dir: Path, source: Path | None
) -> KernelConfigFile | None:
    """The ``kernelbench:`` block written out, and every PyTorch kernel's inputs checked before it runs."""
    return _expand(file, config_dir, source, PyTorchBackend.name)


def _expand(file: KernelConfigFile, config_dir: Path, source: Path | None, kernel_type: str) -> KernelConfigFile | None:
    from magpie_kernels_pytorch.kernelbench import BLOCK, apply_block, check_inputs

    block = file.plugin_blocks().get(BLOCK)
    expanded = apply_block(file, block, kernel_type, PyTorchBackend.kernel_types, config_dir) if block else None
    check_inputs(expanded or file, PyTorchBackend.kernel_types, [Path.cwd(), config_dir], source)
    return expanded


@hookimpl
def magpie_register_commands(cli: Any) -> None:
    """``magpie kernelbench run``: a KernelBench problem set against a folder of solutions."""
    from magpie_kernels_pytorch.kernelbench_cli import kernelbench_app

    cli.add_typer(kernelbench_app, name="kernelbench")


@hookimpl
def magpie_report_sections(page: Any) -> list[Any] | None:
    """report.html of ``magpie kernelbench run`` (drawn with the report plugin's kit, when it is installed)."""
    from magpie_kernels_pytorch.kernelbench_report import KIND, sections

    if page.kit is None or page.kind != KIND:
        return None
    return sections(page)
