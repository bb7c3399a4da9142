"""The MCP server's trust model: where commands taken from tool inputs may run.

An MCP client (an AI agent) can ask magpie to compile and run code. magpie
runs such commands only when everything they touch lies under an allowed
workspace root (``mcp.allowed_roots`` in the framework config; default: the
server's working directory):

* the kernel config file, the working directory of every command, the files
  a kernel names (sources, ``entry``/``reference`` files) and output folders
  must resolve (symlinks followed) to a path under a root;
* a command's program, when given as a path (``./run``, ``/opt/x/bin/y``),
  must lie under a root too; a bare name (``python``) is looked up on PATH as
  usual;
* commands from tool inputs are argv lists and run without a shell; strings
  in YAML files are split like POSIX shell words (``shlex``), never on spaces,
  and never run through a shell.

This confines *where* an agent's commands run; it is not a sandbox. See
``docs/mcp.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from magpie_core.config.common import as_argv_list
from magpie_core.config.kernel import KernelConfig, KernelConfigFile


class TrustError(PermissionError):
    """A tool input names something outside the allowed workspace roots."""


@dataclass(frozen=True)
class TrustPolicy:
    roots: tuple[Path, ...]
    cwd: Path

    @classmethod
    def from_roots(cls, roots: Iterable[str | Path], cwd: Path | None = None) -> TrustPolicy:
        base = (cwd or Path.cwd()).resolve()
        resolved = tuple((base / Path(os.path.expandvars(str(r))).expanduser()).resolve() for r in roots)
        return cls(roots=resolved or (base,), cwd=base)

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)

    def is_allowed(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def check_path(self, path: str | Path, what: str, base: Path | None = None) -> Path:
        """``path`` (relative to ``base``, default the server's CWD), resolved; an error if outside every root."""
        candidate = Path(os.path.expandvars(str(path))).expanduser()
        resolved = ((base or self.cwd) / candidate).resolve()
        if not self.is_allowed(resolved):
            raise TrustError(
                f"{what} {resolved} is outside the allowed workspace roots ({self.describe()}); "
                "add a root to mcp.allowed_roots in the framework config (magpie -c config.yaml mcp)"
            )
        return resolved

    def check_argv(self, argv: list[str], cwd: Path, what: str) -> None:
        if not argv:
            raise TrustError(f"{what}: empty command")
        program = argv[0]
        if "/" in program:
            self.check_path(program, f"{what}: program", base=cwd)

    def check_kernel_file(self, file: KernelConfigFile, config_dir: Path) -> None:
        """Every folder, file and program the kernels of ``file`` would use must be under a root."""
        self.check_path(config_dir, "config folder")
        for kernel in file.all_kernels():
            self.check_kernel(kernel, config_dir)

    def check_kernel(self, kernel: KernelConfig, config_dir: Path) -> None:
        label = f"kernel {kernel.id!r}"
        cwd = self.check_path(kernel.resolved_working_dir(config_dir), f"{label}: working_dir")
        for source in kernel.source_files:
            self.check_path(source, f"{label}: source file", base=cwd)
        for field in ("entry", "reference", "get_inputs", "get_init_inputs", "get_inputs_func", "get_init_inputs_func"):
            spec = getattr(kernel, field)
            if spec and ":" in spec and spec.split(":", 1)[0].endswith(".py"):
                self.check_path(spec.split(":", 1)[0], f"{label}: {field} file", base=cwd)
        for field in ("compile_command", "testcase_command", "prof_command"):
            for argv in as_argv_list(getattr(kernel, field)):
                self.check_argv(argv, cwd, f"{label}: {field}")
