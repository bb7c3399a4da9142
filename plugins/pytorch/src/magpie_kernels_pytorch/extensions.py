"""Inline C++/CUDA extensions (``torch.utils.cpp_extension.load_inline``): built once per kernel, in its own folder.

KernelBench solutions written by models build their kernels when the file is imported, under names that
many solutions share (``relu``, ``matmul``, ``fused_ops``). Torch keeps builds in one folder per name under
``TORCH_EXTENSIONS_DIR`` (default ``~/.cache/torch_extensions``): two solutions called ``relu`` would build
over each other, and one could load the other's library. So a kernel whose file uses ``cpp_extension`` is
built in the compile stage, in a separate process, with ``TORCH_EXTENSIONS_DIR`` set to a folder of its own
build directory; the build's time is the compile stage's (not the kernel's run time), and a build that fails
is a failed compile with the compiler's first error. Every worker process that later imports the file gets
the same folder (:func:`use_folder`), where torch finds the library already built (ninja has nothing to do).

A kernel option ``extensions_cache: DIR`` moves the folder into a cache keyed by the file's bytes and what the
build depends on (Python, torch, ``TORCH_CUDA_ARCH_LIST``, the kernel's ``env``): the same solution compared again
is not built again, and :class:`BuildsAhead` builds many solutions side by side ahead of their compares (``magpie
kernelbench run``: later problems build while earlier ones are timed). The cached build's outcome (``build.json``,
a failed build's error included) is reported again as it was, its ``duration_s`` the time the build took.

``python -m magpie_kernels_pytorch.extensions FILE`` is the build: it imports ``FILE`` and prints how long
the import took (the build, without the interpreter's and torch's start-up) as its last line.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import sys
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from magpie_core.config.kernel import KernelConfig
    from magpie_core.reports import CompileResult

#: the folder of a kernel's build directory that its extensions are built in (and found by its workers)
FOLDER = "torch_extensions"
VARIABLE = "TORCH_EXTENSIONS_DIR"
#: a file that builds an extension when imported (``load_inline``, ``load``, ``cpp_extension.load*``)
_USES = re.compile(r"\bcpp_extension\b|\bload_inline\s*\(")
_TIMING = "magpie-extension-build-s: "
#: a cached build's outcome (a CompileResult), beside its extensions folder
RECORD = "build.json"
#: how much lower a build process (and its compilers) runs than the timed workers: ``nice`` 10
BUILD_NICENESS = 10


def uses_extensions(path: Path) -> bool:
    try:
        return _USES.search(path.read_text(errors="replace")) is not None
    except OSError:
        return False


def folder_in(artifacts: list[str]) -> str | None:
    """The extensions folder among a kernel's build artifacts (None: the kernel builds none)."""
    return next((a for a in artifacts if Path(a).name == FOLDER), None)


def use_folder(artifacts: list[str], kernel_env: dict[str, str]) -> None:
    """Point this worker's torch at the kernel's own extensions folder before its file is imported (torch reads
    the variable at each build); a ``TORCH_EXTENSIONS_DIR`` the kernel config sets itself is left alone."""
    folder = folder_in(artifacts)
    if folder is not None and VARIABLE not in kernel_env:
        os.environ[VARIABLE] = folder


def build_seconds(output: str) -> float | None:
    """The import time the build process printed (None: it did not get that far)."""
    for line in reversed(output.splitlines()):
        if line.startswith(_TIMING):
            return float(json.loads(line[len(_TIMING) :]))
    return None


def entry_file(kernel: KernelConfig) -> Path | None:
    """The Python file of the kernel's ``entry`` (``file.py:Name``), when there is one."""
    if not kernel.entry or ":" not in kernel.entry:
        return None
    spec = kernel.entry.rsplit(":", 1)[0]
    path = Path(kernel.working_dir or ".") / spec
    return path.resolve() if spec.endswith(".py") and path.is_file() else None


def build(kernel: KernelConfig, build_dir: Path) -> CompileResult | None:
    """Import the kernel's file in a process of its own, its extensions built into ``build_dir``'s folder (or the
    ``extensions_cache`` option's); None when the file builds no extension (importing it here would only cost
    torch's start-up)."""
    path = entry_file(kernel)
    if path is None or not uses_extensions(path):
        return None
    timeout = float(kernel.options.get("compile_timeout_seconds", 600))
    cache = kernel.options.get("extensions_cache")
    if cache:
        # relative to the kernel's folder, like its other paths
        return build_cached(path, (Path(kernel.working_dir or ".") / cache).resolve(), kernel.env, timeout)
    return build_file(path, build_dir / FOLDER, kernel.env, timeout, build_dir / "compile.log")


def cached_folder(path: Path, cache: Path, env: dict[str, str]) -> Path:
    """The extensions folder of ``path`` in ``cache``: one per file content and build setting (torch rebuilds
    when sources or flags change, but not for another architecture list or torch; the key covers those)."""
    from magpie_kernels_pytorch.kernelbench_run import VISIBLE_DEVICES

    digest = hashlib.sha256(path.read_bytes())
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = ""
    arch = env.get("TORCH_CUDA_ARCH_LIST", os.environ.get("TORCH_CUDA_ARCH_LIST", ""))
    # which GPU a process sees is not what it builds (``kernelbench run --gpus`` pins each problem's GPU, after
    # the builds ran with every GPU visible): left out, or every pinned compare would build again
    built_with = {k: v for k, v in env.items() if k not in VISIBLE_DEVICES}
    for part in (sys.executable, torch_version, arch, json.dumps(built_with, sort_keys=True)):
        digest.update(b"\0" + part.encode())
    return cache / f"{path.stem}-{digest.hexdigest()[:16]}" / FOLDER


def build_cached(path: Path, cache: Path, env: dict[str, str], timeout: float) -> CompileResult:
    """The cached outcome when this file was built before with the same settings; else build and keep it (a build
    that was stopped — its time limit, Ctrl-C — is not kept: it may pass next time)."""
    from magpie_core.reports import CompileResult

    folder = cached_folder(path, cache, env)
    record = folder.parent / RECORD
    if record.is_file():
        result = CompileResult.model_validate_json(record.read_text())
        result.resources["cached"] = True
        return result
    result = build_file(path, folder, env, timeout, folder.parent / "compile.log")
    if not result.resources.get("stopped"):
        record.write_text(result.model_dump_json(indent=1))
    return result


def build_all(paths: list[Path], cache: Path, jobs: int, timeout: float = 600.0) -> list[CompileResult]:
    """Build the extensions of every file that has some into ``cache``, ``jobs`` builds at a time, and wait."""
    with BuildsAhead(paths, cache, jobs, timeout) as builds:
        return builds.results()


class BuildsAhead:
    """The extensions of many files built into ``cache`` in the background, ``jobs`` builds at a time, in the order
    given: ``magpie kernelbench run`` times one problem on the GPU while the next problems' solutions build, and a
    problem waits only for its own (:meth:`wait_for`). Each build is a process at a lower CPU priority (the timed
    workers come first; torch's ``MAX_JOBS`` sets the compiler processes inside it). Files with the same name and
    bytes share one build (one cache folder), so no two builds ever write the same folder."""

    def __init__(self, paths: list[Path], cache: Path, jobs: int, timeout: float = 600.0) -> None:
        self.waited_s = 0.0  # time problems spent waiting for their builds (the GPU idle, when nothing else runs)
        self.pool = ThreadPoolExecutor(max(1, jobs), thread_name_prefix="magpie-build")
        self.by_folder: dict[Path, Future[CompileResult]] = {}
        self.by_file: dict[Path, Future[CompileResult]] = {}
        for path in dict.fromkeys(p.resolve() for p in paths if uses_extensions(p)):
            folder = cached_folder(path, cache, {})
            if folder not in self.by_folder:
                self.by_folder[folder] = self.pool.submit(build_cached, path, cache, {}, timeout)
            self.by_file[path] = self.by_folder[folder]

    def wait_for(self, paths: Iterable[Path]) -> None:
        """Until every build of ``paths`` has ended (its outcome is in the cache for the compile stage to find)."""
        start = time.perf_counter()
        for path in paths:
            if (future := self.by_file.get(Path(path).resolve())) is not None:
                future.exception()  # an error is the compile stage's to report, when it builds again
        self.waited_s += time.perf_counter() - start

    def results(self) -> list[CompileResult]:
        return [future.result() for future in self.by_folder.values()]

    def __enter__(self) -> BuildsAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        from magpie_core.runtime.processes import stop_started

        if kind is KeyboardInterrupt:
            stop_started()  # Ctrl-C: the builds in flight stop now (their groups), not after their minute
        self.pool.shutdown(wait=True, cancel_futures=kind is not None)


def build_file(path: Path, folder: Path, env: dict[str, str], timeout: float, log_path: Path) -> CompileResult:
    from magpie_core.reports import CompileResult, StageStatus
    from magpie_core.runtime.processes import run_command, tail

    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", __name__, str(path)]
    env = {VARIABLE: str(folder), **env}
    outcome = run_command(argv, cwd=path.parent, env=env, timeout_s=timeout, log_path=log_path)
    seconds = build_seconds(outcome.output)
    built = sorted(p.name for p in folder.iterdir() if p.is_dir())
    stopped = outcome.timed_out or (outcome.returncode is not None and outcome.returncode < 0)
    result = CompileResult(
        status=StageStatus.PASSED if outcome.ok else StageStatus.FAILED,
        command=argv,
        log=tail(outcome.output, 80),
        artifacts=[str(folder)],
        # the import alone (torch's build): not the interpreter's start-up, when the process got that far
        duration_s=seconds if seconds is not None else outcome.duration_s,
        # stopped from outside (its time limit, Ctrl-C, a signal): not an answer about the file
        resources={"extensions": built, VARIABLE: env[VARIABLE], **({"stopped": True} if stopped else {})},
    )
    if not outcome.ok:
        # the generated sources live in the extensions folder: their path relative to it reads as relu/main.cpp
        result.message = failure(outcome.output, outcome.describe(), outcome.timed_out).replace(f"{folder}{os.sep}", "")
    return result


def failure(output: str, how: str, timed_out: bool) -> str:
    """Why the build failed: the compiler's first error, else (torch refusing to build, the file's own code
    raising) the exception Python printed last."""
    from magpie_kernels_pytorch.native import compiler_errors, describe_failure

    if timed_out or compiler_errors(output):
        return describe_failure(output, how)
    return next((line.strip() for line in reversed(output.splitlines()) if line.strip()), how)


def main(argv: list[str]) -> int:
    from magpie_kernels_pytorch.loading import load_file

    os.nice(BUILD_NICENESS)  # background work: timed workers on the same CPUs come first (the compilers inherit it)
    start = time.perf_counter()
    load_file(Path(argv[0]).resolve())  # torch builds (or finds) the extensions the file asks for
    print(f"{_TIMING}{time.perf_counter() - start:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
