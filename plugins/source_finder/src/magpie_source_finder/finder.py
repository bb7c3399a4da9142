"""Map kernel names to the source that defines them, offline, from local checkouts.

* Checkouts come from ``--kernel-source-repos PATH...`` and from the cache
  folder (``--repos-dir``, ``$MAGPIE_REPOS_DIR``, else ``~/.cache/magpie/repos``).
  Nothing is fetched unless ``clone`` is set, and then only the known upstreams
  below, with ``git clone --depth 1``. No system package is ever installed.
* Each checkout gets a symbol index (Triton/Gluon kernels read with ``ast``;
  ``__global__`` kernels and class templates with their namespace/class scope and
  template arity) cached per checkout commit (plus a hash of uncommitted changes),
  or per content hash when it is not a git checkout, in ``<cache>/index/``.
* Resolution (:mod:`magpie_source_finder.resolve`): ``exact`` only when name,
  scope and template arity all match one definition (in the library the trace
  points to, when copies exist); ``probable`` / ``ambiguous`` list every candidate
  and why; ``unresolved`` says why. A directory is never reported as a source file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_source_finder.cxx_index import scan_cxx
from magpie_source_finder.py_index import scan_python
from magpie_source_finder.resolve import resolve

INDEX_VERSION = 3
#: AMD Magpie's source columns, in its CSV order
SOURCE_COLUMNS = [
    "kind",
    "category",
    "source_repo",
    "source_file",
    "upstream_url",
    "test_file",
    "test_cmd",
    "baseline_ref_file",
    "baseline_ref_symbol",
    "baseline_ref_kind",
    "triton_ref_file",
    "triton_ref_symbol",
    "notes",
    "source_resolution",
    "source_error",
]
SOURCE_SUFFIXES = {".py", ".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".hpp", ".h", ".inl"}
SKIP_DIRS = {
    ".git",
    "build",
    "dist",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    "third_party",
    "3rdparty",
    ".tox",
    ".mypy_cache",
    "site-packages",
}
MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class Upstream:
    name: str
    var: str
    url: str
    markers: tuple[str, ...]  # relative paths that identify a checkout of this project


#: projects the finder knows: how to recognise a checkout, its path variable, and its public upstream
UPSTREAMS: tuple[Upstream, ...] = (
    Upstream("vllm", "$VLLM_DIR", "https://github.com/vllm-project/vllm", ("vllm/__init__.py", "csrc")),
    Upstream("sglang", "$SGLANG_DIR", "https://github.com/sgl-project/sglang", ("python/sglang", "sgl-kernel")),
    Upstream("aiter", "$AITER_DIR", "https://github.com/ROCm/aiter", ("aiter/__init__.py", "csrc")),
    Upstream("pytorch", "$PYTORCH_DIR", "https://github.com/pytorch/pytorch", ("aten/src/ATen", "torch")),
    Upstream("triton", "$TRITON_DIR", "https://github.com/triton-lang/triton", ("python/triton",)),
    Upstream(
        "rocm-libraries",
        "$ROCM_LIBRARIES_DIR",
        "https://github.com/ROCm/rocm-libraries",
        ("projects/composablekernel",),
    ),
    Upstream("composable_kernel", "$CK_DIR", "https://github.com/ROCm/composable_kernel", ("include/ck_tile",)),
    Upstream(
        "flashinfer",
        "$FLASHINFER_DIR",
        "https://github.com/flashinfer-ai/flashinfer",
        ("flashinfer", "include/flashinfer"),
    ),
    Upstream(
        "flash-attention", "$FLASH_ATTN_DIR", "https://github.com/Dao-AILab/flash-attention", ("flash_attn", "csrc")
    ),
    Upstream("cutlass", "$CUTLASS_DIR", "https://github.com/NVIDIA/cutlass", ("include/cutlass",)),
)
#: kernel families -> the projects worth cloning for them (used only with clone=True)
FAMILY_UPSTREAMS = {
    "vllm": ["vllm"],
    "sglang": ["sglang"],
    "aiter": ["aiter"],
    "aten": ["pytorch"],
    "inductor": [],
    "triton": ["triton", "vllm", "sglang", "aiter"],
    "ck_tile": ["composable_kernel"],
    "ck": ["composable_kernel"],
    "flashinfer": ["flashinfer"],
    "flash_attention": ["flash-attention"],
    "cutlass": ["cutlass"],
    "hip_cpp": ["vllm", "aiter"],
    "cuda_cpp": ["vllm", "flashinfer"],
    "tensorrt_llm": ["flashinfer"],
}


@dataclass
class Symbol:
    name: str
    kind: str  # triton_jit | global | type
    file: str  # relative to the checkout
    line: int
    namespace: str = ""  # enclosing namespaces and classes, "::"-joined; "(anonymous namespace)" kept
    arity: list[int] | None = None  # [min, max] template parameters (max -1: a pack); None: not a template
    repr_base: str | None = None  # Triton: literal prefix of names made by a custom repr=
    custom_repr: bool = False


@dataclass
class Checkout:
    path: Path
    name: str
    var: str
    url: str | None
    commit: str | None
    symbols: dict[str, list[Symbol]] = field(default_factory=dict)
    test_files: list[str] = field(default_factory=list)
    py_files: list[str] = field(default_factory=list)
    key: str = ""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "var": self.var,
            "path": str(self.path),
            "commit": self.commit,
            "index_key": self.key,
            "upstream": self.url,
            "symbols": sum(len(v) for v in self.symbols.values()),
        }


def _git(path: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def checkout_commit(path: Path) -> str | None:
    """The commit of ``path`` when it is the root of a git checkout (not a folder inside another repo)."""
    top = _git(path, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != path.resolve():
        return None
    return _git(path, "rev-parse", "HEAD")


def identify(path: Path) -> Upstream | None:
    for up in UPSTREAMS:
        if all((path / m).exists() for m in up.markers):
            return up
    return None


def _is_test(rel: str) -> bool:
    parts = rel.split("/")
    base = parts[-1]
    return (
        base.startswith("test_")
        or base.endswith(("_test.py", "_test.cpp", "_test.cu"))
        or any(p in ("tests", "test", "op_tests") for p in parts[:-1])
    )


def scan_file(text: str, rel: str) -> list[Symbol]:
    """The kernels (and, in C++, class templates) a source file defines."""
    if rel.endswith(".py"):
        return [
            Symbol(k.name, "triton_jit", rel, k.line, repr_base=k.repr_base, custom_repr=k.custom_repr)
            for k in scan_python(text)
        ]
    if "__global__" not in text and "struct" not in text and "class" not in text:
        return []
    return [
        Symbol(d.name, d.kind, rel, d.line, "::".join(d.scope), list(d.arity) if d.arity else None)
        for d in scan_cxx(text)
        if d.kind in ("global", "type")
    ]


def _content_hash(path: Path, files: list[Path]) -> str:
    """A hash of every source file's path and content: the index key of a folder that is not a git checkout."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        try:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        except OSError:
            h.update(b"unreadable")
    return "tree-" + h.hexdigest()[:16]


def _dirty_hash(path: Path) -> str:
    """A hash of the uncommitted changes to source files of a git checkout ("" when it is clean)."""
    status = _git(path, "status", "--porcelain", "--untracked-files=all") or ""
    changed = sorted(
        line[3:].split(" -> ")[-1] for line in status.splitlines() if Path(line[3:]).suffix in SOURCE_SUFFIXES
    )
    if not changed:
        return ""
    h = hashlib.sha256()
    for rel in changed:
        f = path / rel
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest() if f.is_file() else b"deleted")
    return "-dirty-" + h.hexdigest()[:12]


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.suffix in SOURCE_SUFFIXES:
                files.append(p)
    return files


def _read_index(co: Checkout, index_file: Path) -> bool:
    try:
        data = json.loads(index_file.read_text())
        if data.get("version") != INDEX_VERSION:
            return False
        co.symbols = {k: [Symbol(**s) for s in v] for k, v in data["symbols"].items()}
        co.test_files, co.py_files = data["test_files"], data["py_files"]
        return True
    except (OSError, ValueError, TypeError, KeyError):
        return False  # rebuild a damaged or older cache entry


_SIMPLE_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Z_][A-Z0-9_]*)[ \t]+([A-Za-z_]\w*)[ \t]*$", re.M)


def _build_index(co: Checkout, files: list[Path]) -> None:
    defines: dict[str, set[str]] = {}  # object-like macros naming an identifier: namespace FLASH_NAMESPACE {
    for f in files:
        try:
            if f.stat().st_size > MAX_FILE_BYTES:
                continue
            text = f.read_text(errors="replace")
        except OSError:
            continue
        rel = f.relative_to(co.path).as_posix()
        if rel.endswith(".py"):
            (co.test_files if _is_test(rel) else co.py_files).append(rel)
        elif "#define" in text:
            for m in _SIMPLE_DEFINE.finditer(text):
                defines.setdefault(m.group(1), set()).add(m.group(2))
        for sym in scan_file(text, rel):
            co.symbols.setdefault(sym.name, []).append(sym)
    _expand_namespace_macros(co, {k: next(iter(v)) for k, v in defines.items() if len(v) == 1})


def _expand_namespace_macros(co: Checkout, defines: dict[str, str]) -> None:
    """``namespace FLASH_NAMESPACE {`` with ``#define FLASH_NAMESPACE flash`` in the checkout: scope ``flash``."""
    for syms in co.symbols.values():
        for s in syms:
            if s.namespace and any(p in defines for p in s.namespace.split("::")):
                s.namespace = "::".join(defines.get(p, p) for p in s.namespace.split("::"))


def _write_index(co: Checkout, index_file: Path) -> None:
    index_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = index_file.with_suffix(f".{os.getpid()}.tmp")
    payload = {
        "version": INDEX_VERSION,
        "path": str(co.path),
        "commit": co.commit,
        "key": co.key,
        "symbols": {k: [s.__dict__ for s in v] for k, v in co.symbols.items()},
        "test_files": co.test_files,
        "py_files": co.py_files,
    }
    tmp.write_text(json.dumps(payload))
    tmp.replace(index_file)


def load_checkout(path: Path, cache_dir: Path) -> Checkout:
    """Identify a checkout and load (or build and cache) its symbol index, keyed by commit (plus uncommitted
    changes) or, outside git, by a hash of the source files' content."""
    path = path.resolve()
    up = identify(path)
    commit = checkout_commit(path)
    name = up.name if up else path.name
    var = up.var if up else "$" + re.sub(r"\W+", "_", path.name).upper().strip("_") + "_DIR"
    co = Checkout(
        path=path,
        name=name,
        var=var,
        url=up.url if up else None,
        commit=commit,
    )
    files = None
    if commit is not None:
        co.key = commit + _dirty_hash(path)
    else:
        files = _walk(path)
        co.key = _content_hash(path, files)
    index_file = cache_dir / "index" / f"{name}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}-{co.key}.json"
    if index_file.is_file() and _read_index(co, index_file):
        return co
    _build_index(co, files if files is not None else _walk(path))
    _write_index(co, index_file)
    return co


def default_cache_dir(configured: str | None = None) -> Path:
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get("MAGPIE_REPOS_DIR")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "magpie" / "repos"


def clone_upstreams(names: list[str], cache_dir: Path) -> tuple[list[Path], list[str]]:
    """Shallow-clone known upstreams into the cache (only when asked). Returns (paths, errors)."""
    known = {u.name: u for u in UPSTREAMS}
    url_override = os.environ.get("MAGPIE_UPSTREAM_MIRROR")  # e.g. a local mirror folder: <mirror>/<name>
    paths, errors = [], []
    for name in names:
        up = known.get(name)
        if up is None:
            errors.append(f"clone: {name!r} is not a known upstream")
            continue
        dest = cache_dir / name
        if dest.is_dir():
            paths.append(dest)
            continue
        url = f"{url_override.rstrip('/')}/{name}" if url_override else up.url
        cache_dir.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(
                ["git", "clone", "--depth", "1", "--quiet", url, str(dest)],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"clone of {url} failed: {exc}")
            continue
        if proc.returncode != 0:
            errors.append(
                f"clone of {url} failed: "
                + (proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else str(proc.returncode))
            )
            continue
        paths.append(dest)
    return paths, errors


def find_sources(
    kernels: list[dict[str, Any]], repos: list[str], cache_dir: str | None = None, clone: bool = False
) -> dict[str, Any]:
    """Resolve every kernel; the summary the gap pipeline folds into its CSV and JSON."""
    cache = default_cache_dir(cache_dir)
    errors: list[str] = []
    paths: list[Path] = []
    for r in repos:
        p = Path(os.path.expandvars(r)).expanduser()
        if p.is_dir():
            paths.append(p)
        else:
            errors.append(f"kernel source repo not found: {r}")
    if clone:
        wanted = sorted({u for k in kernels for u in FAMILY_UPSTREAMS.get(k["parsed"].get("family", ""), [])})
        cloned, errs = clone_upstreams(wanted, cache)
        paths += [p for p in cloned if p not in paths]
        errors += errs
    if cache.is_dir():
        for sub in sorted(cache.iterdir()):
            if sub.is_dir() and sub.name != "index" and identify(sub) is not None and sub not in paths:
                paths.append(sub)
    checkouts = []
    seen: set[Path] = set()
    for p in paths:
        if p.resolve() in seen:
            continue
        seen.add(p.resolve())
        checkouts.append(load_checkout(p, cache))
    sources = {k["name"]: resolve(k["name"], k["parsed"], checkouts, k.get("context")) for k in kernels}
    return {
        "sources": sources,
        "repos": [c.describe() for c in checkouts],
        "errors": errors,
        "columns": list(SOURCE_COLUMNS),
    }
