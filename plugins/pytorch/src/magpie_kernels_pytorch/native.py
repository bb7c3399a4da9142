"""Calling a compiled GPU kernel from Python: an ``extern "C"`` launcher in a shared library, via ctypes.

The CUDA and HIP backends build the kernel's sources into a shared library
(``nvcc -shared`` / ``hipcc -shared``). The kernel config's ``entry`` names a
host function in it, declared ``extern "C"``, that launches the kernel::

    extern "C" int launch_matmul(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
        matmul<<<grid, block, 0, stream>>>(a, b, c, n);
        return (int)cudaGetLastError();
    }

Its prototype is read from the source, so Python arguments are converted
without a hand-written binding: a pointer parameter takes a device tensor
(its ``data_ptr()``; it must be contiguous and on the GPU), a scalar parameter
takes a Python number, and a trailing ``cudaStream_t``/``hipStream_t``
parameter is filled with PyTorch's current stream (so the harness's events and
graph capture see the launch). An ``int``/``cudaError_t``/``hipError_t`` return
value other than 0 raises. ``options.argtypes`` (``[ptr, ptr, i32, f32, stream]``)
overrides the parsed prototype.

Why ctypes and not ``torch.utils.cpp_extension``: the library builds with the
plain compiler in seconds, without PyTorch headers, ninja or a matching CUDA
version of PyTorch, so it also compiles on machines without a GPU (CI); the
launcher is ordinary C that runs unchanged outside magpie.
"""

from __future__ import annotations

import ctypes
import json
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from magpie_core.config.kernel import KernelConfig
from magpie_core.reports import CompileResult, StageStatus
from magpie_core.runtime.processes import run_command, tail

SCALAR_TYPES: dict[str, Any] = {
    "i8": ctypes.c_int8,
    "u8": ctypes.c_uint8,
    "i16": ctypes.c_int16,
    "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "bool": ctypes.c_bool,
}

_C_SCALARS = {
    "char": "i8",
    "signed char": "i8",
    "unsigned char": "u8",
    "int8_t": "i8",
    "uint8_t": "u8",
    "short": "i16",
    "unsigned short": "u16",
    "int16_t": "i16",
    "uint16_t": "u16",
    "int": "i32",
    "signed": "i32",
    "signed int": "i32",
    "unsigned": "u32",
    "unsigned int": "u32",
    "int32_t": "i32",
    "uint32_t": "u32",
    "long": "i64",
    "long int": "i64",
    "long long": "i64",
    "long long int": "i64",
    "unsigned long": "u64",
    "unsigned long long": "u64",
    "int64_t": "i64",
    "uint64_t": "u64",
    "size_t": "u64",
    "ptrdiff_t": "i64",
    "float": "f32",
    "double": "f64",
    "bool": "bool",
}
_STREAM_TYPES = {"cudaStream_t", "hipStream_t", "CUstream"}
_STATUS_TYPES = {"int", "cudaError_t", "hipError_t", "CUresult", "int32_t"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}


class NativeError(ValueError):
    """The launcher cannot be found, parsed or called as configured."""


@dataclass
class Param:
    name: str
    kind: str  # "ptr" | "stream" | a key of SCALAR_TYPES
    c_type: str


@dataclass
class Launcher:
    """What the harness needs to call one ``extern "C"`` launcher (stored as JSON next to the library)."""

    function: str
    library: str
    params: list[Param]
    returns_status: bool
    source: str | None = None

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @classmethod
    def load(cls, path: Path) -> Launcher:
        data = json.loads(path.read_text())
        data["params"] = [Param(**p) for p in data["params"]]
        return cls(**data)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _parse_param(text: str, index: int) -> Param:
    text = text.split("=")[0].strip()
    stars = text.count("*") + text.count("&")
    words = [w for w in re.split(r"[\s\*&]+", text) if w and w not in _QUALIFIERS]
    if not words:
        raise NativeError(f"cannot read parameter {index + 1}: {text!r}")
    name = words[-1] if len(words) > 1 else f"arg{index}"
    type_words = words[:-1] if len(words) > 1 else words
    c_type = " ".join(type_words)
    if stars:
        return Param(name, "ptr", c_type + " " + "*" * stars)
    if c_type in _STREAM_TYPES:
        return Param(name, "stream", c_type)
    if c_type in _C_SCALARS:
        return Param(name, _C_SCALARS[c_type], c_type)
    raise NativeError(
        f"parameter {name!r} has type {c_type!r}, which a Python value cannot be passed as; use pointers, "
        f"integers, float/double or a stream (or give options.argtypes)"
    )


def parse_launcher(source: str, function: str) -> tuple[list[Param], bool]:
    """The parameters of ``function``'s definition in ``source`` and whether it returns a status code."""
    text = _strip_comments(source)
    pattern = re.compile(
        r"(?P<ret>(?:[A-Za-z_][\w:]*[\s\*]+)+?)" + re.escape(function) + r"\s*\((?P<params>[^)]*)\)\s*\{", re.M
    )
    match = pattern.search(text)
    if match is None:
        raise NativeError(f"no definition of {function}(...) found")
    ret_words = [w for w in match.group("ret").split() if w not in {"extern", "static", "inline", "__host__"}]
    ret = ret_words[-1] if ret_words else "void"
    if "*" in match.group("ret"):
        raise NativeError(f"{function} returns a pointer; a launcher returns void or an error code")
    raw = match.group("params").strip()
    params = [] if raw in ("", "void") else [_parse_param(p, i) for i, p in enumerate(raw.split(","))]
    return params, ret in _STATUS_TYPES


def line_of(source: str, function: str) -> int | None:
    match = re.search(r"\b" + re.escape(function) + r"\s*\(", source)
    return source.count("\n", 0, match.start()) + 1 if match else None


def params_from_argtypes(argtypes: Sequence[str]) -> list[Param]:
    params = []
    for i, kind in enumerate(argtypes):
        kind = str(kind).strip().lower()
        if kind not in SCALAR_TYPES and kind not in ("ptr", "stream"):
            known = ", ".join(["ptr", "stream", *SCALAR_TYPES])
            raise NativeError(f"options.argtypes[{i}]: unknown type {kind!r} (known: {known})")
        params.append(Param(f"arg{i}", kind, kind))
    return params


def find_launcher(sources: Sequence[Path], function: str) -> tuple[Path, list[Param], bool]:
    """The source that defines ``function``, its parameters and whether it returns a status."""
    problems = []
    for path in sources:
        text = path.read_text(errors="replace")
        if not re.search(r"\b" + re.escape(function) + r"\s*\(", text):
            continue
        try:
            params, status = parse_launcher(text, function)
        except NativeError as exc:
            problems.append(f"{path.name}:{line_of(text, function) or '?'}: {exc}")
            continue
        if 'extern "C"' not in text:
            problems.append(f'{path.name}: {function} is not declared extern "C" (its symbol would be mangled)')
            continue
        return path, params, status
    names = ", ".join(p.name for p in sources) or "no sources"
    detail = "; ".join(problems) if problems else f'no extern "C" function {function}(...) defined in {names}'
    raise NativeError(detail)


class NativeKernel:
    """A Python callable around the launcher: tensors in, launch on the current stream."""

    def __init__(self, launcher: Launcher, device_module: Any = None) -> None:
        import torch  # here, not at module level: plugin registration must not pay torch's import

        self.launcher = launcher
        try:
            self._lib = ctypes.CDLL(launcher.library)
        except OSError as exc:
            raise NativeError(f"cannot load {launcher.library}: {exc}") from exc
        try:
            self._fn = getattr(self._lib, launcher.function)
        except AttributeError:
            raise NativeError(
                f'{launcher.library} has no symbol {launcher.function!r}: declare it extern "C"'
            ) from None
        self._fn.argtypes = [
            ctypes.c_void_p if p.kind in ("ptr", "stream") else SCALAR_TYPES[p.kind] for p in launcher.params
        ]
        self._fn.restype = ctypes.c_int if launcher.returns_status else None
        self._device = device_module or torch.cuda
        self._tensor: type = torch.Tensor
        self._user_params = [p for p in launcher.params if p.kind != "stream"]
        self.__name__ = launcher.function

    def _convert(self, param: Param, value: Any) -> Any:
        if param.kind == "ptr":
            if value is None:
                return None
            if isinstance(value, self._tensor):
                if value.device.type == "cpu" and value.numel():
                    raise NativeError(
                        f"{self.launcher.function}: argument {param.name!r} is a CPU tensor; the kernel "
                        "needs device memory (is the kernel's device set to cpu?)"
                    )
                if not value.is_contiguous():
                    raise NativeError(f"{self.launcher.function}: argument {param.name!r} is not contiguous")
                return value.data_ptr()
            if isinstance(value, int):
                return value
            raise NativeError(
                f"{self.launcher.function}: argument {param.name!r} ({param.c_type}) needs a tensor, "
                f"got {type(value).__name__}"
            )
        if isinstance(value, self._tensor):
            value = value.item()
        return value

    def __call__(self, *args: Any) -> None:
        if len(args) != len(self._user_params):
            names = ", ".join(f"{p.c_type} {p.name}" for p in self._user_params)
            raise NativeError(
                f"{self.launcher.function}({names}) takes {len(self._user_params)} arguments "
                f"(streams are filled in), got {len(args)}"
            )
        values = iter(args)
        c_args = []
        for param in self.launcher.params:
            if param.kind == "stream":
                c_args.append(self._device.current_stream().cuda_stream)
            else:
                c_args.append(self._convert(param, next(values)))
        status = self._fn(*c_args)
        if self.launcher.returns_status and status:
            raise RuntimeError(f"{self.launcher.function} returned error code {status}")


def load_native(artifacts: Sequence[str]) -> Callable[..., Any]:
    """The callable for a build whose artifacts include a ``launcher.json``."""
    for item in artifacts:
        if item.endswith("launcher.json"):
            return NativeKernel(Launcher.load(Path(item)))
    raise NativeError("the build produced no launcher description (launcher.json); was the kernel compiled?")


# --- building ---------------------------------------------------------------------

_DIAGNOSTICS = (
    # nvcc / EDG front end: file.cu(12): error: message
    re.compile(
        r"^(?P<file>[^\s(][^(\n]*)\((?P<line>\d+)\): (?P<sev>(?:catastrophic )?error)[^:\n]*: (?P<msg>.*)$", re.M
    ),
    # clang (hipcc) and gcc: file.hip:12:5: error: message
    re.compile(r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?:\d+:)? (?P<sev>(?:fatal )?error): (?P<msg>.*)$", re.M),
)


def compiler_errors(output: str) -> list[dict[str, Any]]:
    """Errors with their file and line, in the order the compiler printed them."""
    found = []
    for pattern in _DIAGNOSTICS:
        for m in pattern.finditer(output):
            found.append((m.start(), {"file": m["file"].strip(), "line": int(m["line"]), "message": m["msg"].strip()}))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


def describe_failure(output: str, fallback: str) -> str:
    """``file:line: error: message`` for the first error (and how many there were), else ``fallback``."""
    errors = compiler_errors(output)
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
        return f"{first['file']}:{first['line']}: error: {first['message']}{more}"
    for line in output.splitlines():
        if "error" in line.lower():
            return f"{line.strip()} ({fallback})"
    return fallback


def _flags(value: Any) -> list[str]:
    if not value:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def split_entry(entry: str) -> tuple[str | None, str]:
    """``file.cu:launcher`` → (``file.cu``, ``launcher``); ``launcher`` → (None, ``launcher``)."""
    if ":" in entry:
        file, function = entry.rsplit(":", 1)
        return file, function
    return None, entry


def native_build(
    kernel: KernelConfig,
    build_dir: Path,
    *,
    compiler: str,
    command: Callable[[list[Path], Path, bool, list[str]], list[str]],
    env: dict[str, str],
    resources: Callable[[str], dict[str, Any]],
    library_suffix: str = ".so",
) -> CompileResult:
    """Shared by the CUDA and HIP backends: build a launcher library (harness) or an executable."""
    start = time.perf_counter()
    cwd = Path(kernel.working_dir or ".")
    if not kernel.source_files:
        return CompileResult(status=StageStatus.FAILED, message=f"kernel {kernel.id!r}: no source_files to compile")
    sources = [(cwd / s).resolve() for s in kernel.source_files]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        return CompileResult(status=StageStatus.FAILED, message=f"source file not found: {', '.join(missing)}")
    build_dir.mkdir(parents=True, exist_ok=True)
    launcher_info = None
    if kernel.uses_harness:
        if not kernel.entry:
            return CompileResult(
                status=StageStatus.FAILED,
                message=f"{compiler} kernels in the harness need 'entry': the extern \"C\" launcher to call",
            )
        file, function = split_entry(kernel.entry)
        candidates = [s for s in sources if file is None or s.name == Path(file).name]
        try:
            if kernel.options.get("argtypes"):
                params, where = params_from_argtypes(kernel.options["argtypes"]), None
                returns_status = bool(kernel.options.get("returns_status", False))
            else:
                where, params, returns_status = find_launcher(candidates, function)
        except (NativeError, OSError) as exc:
            return CompileResult(status=StageStatus.FAILED, message=f"entry {kernel.entry!r}: {exc}")
        output = build_dir / f"lib{kernel.id}{library_suffix}"
        launcher_info = Launcher(function, str(output), params, returns_status, str(where) if where else None)
    else:
        output = build_dir / str(kernel.options.get("binary") or kernel.id)
    argv = command(sources, output, kernel.uses_harness, _flags(kernel.options.get(f"{compiler}_flags")))
    timeout = float(kernel.options.get("compile_timeout_seconds", 600))
    outcome = run_command(argv, cwd=cwd, env=env, timeout_s=timeout, log_path=build_dir / "compile.log")
    found = resources(outcome.output)
    failure = None
    if not outcome.ok:
        failure = describe_failure(outcome.output, outcome.describe())
    elif not output.is_file():  # "built" means the artifact under test exists, not that the compiler exited 0
        failure = f"{compiler} exited 0 but did not write {output}"
    if failure is not None:
        return CompileResult(
            status=StageStatus.FAILED,
            command=argv,
            log=tail(outcome.output, 80),
            duration_s=time.perf_counter() - start,
            resources=found,
            message=failure,
        )
    artifacts = [str(output)]
    if launcher_info is not None:
        artifacts.append(str(launcher_info.save(build_dir / "launcher.json")))
    return CompileResult(
        status=StageStatus.PASSED,
        command=argv,
        log=tail(outcome.output, 80),
        artifacts=artifacts,
        duration_s=time.perf_counter() - start,
        resources=found,
    )
