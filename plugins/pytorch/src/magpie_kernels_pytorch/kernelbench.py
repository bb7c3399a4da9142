"""KernelBench files without a YAML: recognising them, and the ``kernelbench:`` block that says how to check them.

A KernelBench problem is a reference file with ``class Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``; a solution is a file with ``class ModelNew``. Given such files on the command line
(``magpie compare ref.py sol_a.py sol_b.py``), this module writes the kernel file that a YAML would hold:
the reference is the baseline, every solution is built from the reference's constructor arguments and run
on the reference's inputs, and each is checked against ``Model`` the way KernelBench checks it (training
mode, KernelBench's tolerances, five input sets). A YAML can ask for the same with a ``kernelbench:`` block.

Files are recognised from their text (no import: torch costs a second and a solution may not even load).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from magpie_core.config.errors import ConfigError
from magpie_core.config.kernel import CorrectnessConfig, KernelConfig, KernelConfigFile

log = logging.getLogger("magpie.pytorch")

BLOCK = "kernelbench"
REFERENCE_CLASS = "Model"
SOLUTION_CLASS = "ModelNew"
_MODULE_CLASS = r"(?m)^class\s+{}\s*\("
_FUNCTION = r"(?m)^(?:def\s+{0}\s*\(|{0}\s*=)"


class KernelBenchBlock(BaseModel):
    """``kernelbench:`` in a kernel YAML (and what a command line of KernelBench files gets)."""

    model_config = ConfigDict(extra="forbid")

    reference: str | None = Field(None, description="the problem file (Model, get_inputs, get_init_inputs)")
    solutions: list[str] = Field(default_factory=list, description="files with ModelNew, checked against Model")
    mode: Literal["train", "eval"] = Field(
        "train", description="module mode of Model and ModelNew; KernelBench never calls .eval()"
    )
    tolerance: Literal["kernelbench", "kernelbench-v0"] = Field(
        "kernelbench", description="kernelbench: KernelBench HEAD's per-dtype tolerances; kernelbench-v0: 1e-2"
    )
    trials: PositiveInt = Field(5, description="input sets checked, each with its own seed")
    use_solution_inputs: bool = Field(
        False, description="run a solution on its own get_inputs/get_init_inputs when it defines them"
    )


# --- recognition ------------------------------------------------------------------------------------------------


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def defines(text: str, name: str) -> bool:
    """A top-level ``def name(`` or ``name =`` (a function the harness can call by name)."""
    return re.search(_FUNCTION.format(re.escape(name)), text) is not None


def is_reference(path: Path) -> bool:
    text = _text(path)
    return re.search(_MODULE_CLASS.format(REFERENCE_CLASS), text) is not None and defines(text, "get_inputs")


def is_solution(path: Path) -> bool:
    return re.search(_MODULE_CLASS.format(SOLUTION_CLASS), _text(path)) is not None


def block_for_sources(sources: list[str]) -> KernelBenchBlock | None:
    """The block for a command line of KernelBench files (reference first or anywhere), or None when the files
    are not KernelBench's; recognised files that cannot run as given are a config error saying what to add."""
    paths = [Path(s) for s in sources]
    if not paths or any(p.suffix != ".py" or not p.is_file() for p in paths):
        return None
    references = [s for s, p in zip(sources, paths, strict=True) if is_reference(p)]
    solutions = [s for s, p in zip(sources, paths, strict=True) if s not in references and is_solution(p)]
    if len(references) + len(solutions) != len(paths):
        if len(references) == 1:  # a KernelBench command line with a file that is not a solution
            odd = next(s for s in sources if s not in references and s not in solutions)
            raise ConfigError(odd, f"not a KernelBench solution: no `class ModelNew` (the problem is {references[0]})")
        return None  # some file is neither: not a KernelBench command line
    if len(references) > 1:
        raise ConfigError(references[1], f"more than one problem file (class Model + get_inputs): {references}")
    if not references:
        raise ConfigError(
            solutions[0],
            "a KernelBench solution (class ModelNew) needs its problem file for inputs and the expected outputs: "
            f"give the reference first, e.g. `magpie compare ref.py {' '.join(solutions)}`",
        )
    return KernelBenchBlock(reference=references[0], solutions=solutions)


# --- writing the kernels out ----------------------------------------------------------------------------------


def _kernel_ids(files: list[str]) -> list[str]:
    stems = [Path(f).stem for f in files]
    return stems if len(set(stems)) == len(stems) else [f"kernel_{i}_{stem}" for i, stem in enumerate(stems)]


def _inputs_from(block: KernelBenchBlock, file: str, base: Path) -> tuple[str, str]:
    """Which files ``get_inputs`` and ``get_init_inputs`` come from for ``file``: the reference's, unless the
    block asks for a solution's own (KernelBench's eval likewise takes both from the reference)."""
    assert block.reference is not None
    text = _text(base / file)
    own = [name for name in ("get_inputs", "get_init_inputs") if defines(text, name)]
    if file == block.reference or not own:
        return block.reference, block.reference
    if block.use_solution_inputs:
        return (file if "get_inputs" in own else block.reference), (
            file if "get_init_inputs" in own else block.reference
        )
    log.warning(
        "%s defines its own %s: ignored, it runs on %s's (kernelbench.use_solution_inputs: true to use them)",
        file,
        " and ".join(own),
        block.reference,
    )
    return block.reference, block.reference


def kernels_of(block: KernelBenchBlock, kernel_type: str, base: Path) -> list[KernelConfig]:
    """The reference (the baseline, checked against itself) and every solution, each checked against Model."""
    assert block.reference is not None
    reference_text = _text(base / block.reference)
    if not defines(reference_text, "get_init_inputs"):
        log.warning("%s has no get_init_inputs: Model and ModelNew are built with no arguments", block.reference)
    files = [block.reference, *block.solutions]
    kernels = []
    for kernel_id, file in zip(_kernel_ids(files), files, strict=True):
        inputs, init_inputs = _inputs_from(block, file, base)
        entry = REFERENCE_CLASS if file == block.reference else SOLUTION_CLASS
        kernels.append(
            KernelConfig(
                id=kernel_id,
                type=kernel_type,
                entry=f"{file}:{entry}",
                reference=f"{block.reference}:{REFERENCE_CLASS}",
                get_inputs=f"{inputs}:get_inputs",
                get_init_inputs=_init_inputs_ref(init_inputs, base),
                options=module_options(block),
            )
        )
    return kernels


def _init_inputs_ref(file: str, base: Path) -> str | None:
    # None when the file has none: the harness then builds the module with no arguments (warned about above)
    return f"{file}:get_init_inputs" if defines(_text(base / file), "get_init_inputs") else None


def module_options(block: KernelBenchBlock) -> dict[str, Any]:
    """The harness options a KernelBench check runs under (see ``harness._Prepared`` and ``checking``)."""
    return {"module_mode": block.mode, "tolerance": block.tolerance}


def apply_block(
    file: KernelConfigFile, block: KernelBenchBlock, kernel_type: str, kernel_types: tuple[str, ...], base: Path
) -> KernelConfigFile:
    """``file`` with the block written out: its kernels first (the reference: the baseline), then the file's own;
    the mode and tolerance on every kernel of this backend that sets none, the trials unless the file sets them."""
    own = [
        k.model_copy(update={"options": module_options(block) | k.options}) if k.type in kernel_types else k
        for k in file.all_kernels()
    ]
    generated = kernels_of(block, kernel_type, base) if block.reference else []
    correctness = file.correctness or CorrectnessConfig()
    if "trials" not in correctness.model_fields_set:
        correctness = correctness.model_copy(update={"trials": block.trials})
    update: dict[str, Any] = {"kernel": None, "kernels": [*generated, *own], "correctness": correctness}
    if generated and file.baseline is None:
        update["baseline"] = generated[0].id
    expanded = file.model_copy(update=update)
    # the block is written out now: dropped, so that preparing the file again does not add its kernels twice
    expanded.__pydantic_extra__ = {k: v for k, v in (file.__pydantic_extra__ or {}).items() if k != BLOCK}
    return expanded


# --- checks of hand-written kernels -----------------------------------------------------------------------------


def _file_of(ref: str, fallback: str | None) -> str | None:
    """The ``file.py`` part of ``file.py:name`` (a bare name lives in ``fallback``'s file); None for modules."""
    spec = (
        ref.rsplit(":", 1)[0] if ":" in ref else (fallback.rsplit(":", 1)[0] if fallback and ":" in fallback else None)
    )
    return spec if spec and (spec.endswith(".py") or "/" in spec) else None


def _find(file: str, search_dirs: list[Path]) -> Path | None:
    return next((d / file for d in search_dirs if (d / file).is_file()), None)


def check_inputs(
    file: KernelConfigFile, kernel_types: tuple[str, ...], search_dirs: list[Path], source: Path | None
) -> None:
    """A kernel whose ``get_inputs`` names no function in its file cannot run: a config error that says what
    to write, before any worker starts (it used to be a failed check pointing into the loader)."""
    for index, kernel in enumerate(file.all_kernels()):
        if kernel.type not in kernel_types or not kernel.entry:
            continue
        name = kernel.inputs_function.rsplit(":", 1)[-1]
        inputs_file = _file_of(kernel.inputs_function, kernel.entry)
        path = _find(inputs_file, search_dirs) if inputs_file else None
        if (
            path is None
            or defines(_text(path), name)
            or re.search(rf"(?m)^\s*(from|import)\b.*\b{name}\b", _text(path))
        ):
            _warn_init_inputs(kernel, search_dirs)
            continue
        raise ConfigError(
            source or inputs_file or "<command line>",
            f"kernel {kernel.id!r}: {inputs_file} defines no {name}(), so there are no inputs to run it on; "
            f"name the function that makes them, e.g. `get_inputs: {_suggested_file(kernel, search_dirs)}:get_inputs`"
            " (and `get_init_inputs:` from the same file for the constructor's arguments)",
            path=("kernels", index, "get_inputs"),
        )


def _suggested_file(kernel: KernelConfig, search_dirs: list[Path]) -> str:
    ref_file = _file_of(kernel.reference, None) if kernel.reference else None
    path = _find(ref_file, search_dirs) if ref_file else None
    return ref_file if ref_file and path and defines(_text(path), "get_inputs") else "problem.py"


def _warn_init_inputs(kernel: KernelConfig, search_dirs: list[Path]) -> None:
    """Say which constructor arguments a class entry gets when the config does not name them: silently taking a
    solution's own (or none at all) while the reference has others builds a different model."""
    if kernel.get_init_inputs or kernel.get_init_inputs_func or not kernel.reference or not kernel.entry:
        return
    entry_file, ref_file = _file_of(kernel.entry, None), _file_of(kernel.reference, None)
    entry_path = _find(entry_file, search_dirs) if entry_file else None
    ref_path = _find(ref_file, search_dirs) if ref_file else None
    if (
        entry_path is None
        or ref_path is None
        or entry_path == ref_path
        or not defines(_text(ref_path), "get_init_inputs")
    ):
        return
    used = f"{entry_file}'s own get_init_inputs" if defines(_text(entry_path), "get_init_inputs") else "no arguments"
    log.warning(
        "kernel %r: its class is built with %s, not %s's get_init_inputs (write `get_init_inputs: %s:get_init_inputs`)",
        kernel.id,
        used,
        ref_file,
        ref_file,
    )
