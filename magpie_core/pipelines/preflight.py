"""What must hold before a kernel's commands run: its folder, its source files and its entry file exist.

A testcase command that exits 0 proves nothing about a kernel whose files are not there, so a missing
file is the kernel's failure before anything runs (AMD Magpie ran the testcase and reported a pass)."""

from __future__ import annotations

from pathlib import Path

from magpie_core.config.kernel import KernelConfig

__all__ = ["preflight_problem"]


def preflight_problem(kernel: KernelConfig, cwd: Path, config_dir: Path) -> str | None:
    """Why ``kernel`` cannot be run as configured (one line naming the field and the path), or None."""
    if kernel.working_dir and not cwd.is_dir():
        return f"working_dir {kernel.working_dir!r} not found (looked in {config_dir} and {Path.cwd()})"
    missing = [s for s in kernel.source_files if not (cwd / s).is_file()]
    if missing:
        return f"source_files: not found in {cwd}: {', '.join(missing)}"
    for field in ("entry", "reference"):
        problem = _ref_file_problem(field, getattr(kernel, field), kernel, cwd, config_dir)
        if problem:
            return problem
    return None


def _ref_file_problem(field: str, ref: str | None, kernel: KernelConfig, cwd: Path, config_dir: Path) -> str | None:
    """A ``file:function`` reference whose file is neither where the harness looks nor among the sources."""
    if not ref or ":" not in ref:
        return None
    file = ref.rsplit(":", 1)[0]
    if not ("/" in file or Path(file).suffix):
        return None  # a module name: found (or not) by import, which names it
    names = {Path(s).name for s in kernel.source_files}
    if any((base / file).is_file() for base in (cwd, config_dir)) or Path(file).name in names:
        return None
    return f"{field}: file {file!r} not found (looked in {' and '.join(dict.fromkeys(map(str, (cwd, config_dir))))})"
