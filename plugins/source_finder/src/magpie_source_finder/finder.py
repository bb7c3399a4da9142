"""Map kernel names to the source that defines them, offline, from local checkouts.

* Checkouts come from ``--kernel-source-repos PATH...`` and from the cache
  folder (``--repos-dir``, ``$MAGPIE_REPOS_DIR``, else ``~/.cache/magpie/repos``).
  Nothing is fetched unless ``clone`` is set, and then only the known upstreams
  below, with ``git clone --depth 1``. No system package is ever installed.
* Each checkout gets a symbol index (``@triton.jit`` functions, ``__global__``
  functions, CK kernel entry structs and other templates, Python functions)
  cached per checkout commit (or per content stamp when it is not a git
  checkout) in ``<cache>/index/``.
* A kernel resolves to ``exact`` (one definition of the right kind),
  ``probable`` (one definition found by a looser match), ``ambiguous``
  (several, listed) or ``unresolved`` (with the reason). A directory is never
  reported as a source file.
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

INDEX_VERSION = 2
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
    test_cmd: str = "pytest {test_file} -q -k {symbol}"


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
        test_cmd="",
    ),
    Upstream(
        "composable_kernel", "$CK_DIR", "https://github.com/ROCm/composable_kernel", ("include/ck_tile",), test_cmd=""
    ),
    Upstream(
        "flashinfer",
        "$FLASHINFER_DIR",
        "https://github.com/flashinfer-ai/flashinfer",
        ("flashinfer", "include/flashinfer"),
    ),
    Upstream(
        "flash-attention", "$FLASH_ATTN_DIR", "https://github.com/Dao-AILab/flash-attention", ("flash_attn", "csrc")
    ),
    Upstream("cutlass", "$CUTLASS_DIR", "https://github.com/NVIDIA/cutlass", ("include/cutlass",), test_cmd=""),
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
}

_TRITON_DEF = re.compile(r"^[ \t]*@(?:triton\.|tl\.)?jit\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def[ \t]+(\w+)", re.M)
_TRITON_DEC = re.compile(r"^[ \t]*@(?:triton\.)(?:jit|autotune|heuristics)\b", re.M)
_PY_DEF = re.compile(r"^[ \t]*def[ \t]+(\w+)[ \t]*\(", re.M)
_GLOBAL = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?(?:[\w:<>,\s*&]+?\s+)?"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\("
)
_TYPE_DEF = re.compile(
    r"^[ \t]*(?:template\s*<[^;{]*?>\s*)?(?:struct|class)\s+(?:CK_TILE_\w+\s+|alignas\(\d+\)\s+)?"
    r"(\w+)\b[^;{]*\{",
    re.M,
)
_NAMESPACE = re.compile(r"\bnamespace\s+(\w+)\s*\{")


@dataclass
class Symbol:
    name: str
    kind: str  # triton_jit | global | type | python
    file: str  # relative to the checkout
    line: int
    namespace: str = ""


@dataclass
class Checkout:
    path: Path
    name: str
    var: str
    url: str | None
    commit: str | None
    test_cmd: str = "pytest {test_file} -q -k {symbol}"
    symbols: dict[str, list[Symbol]] = field(default_factory=dict)
    test_files: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "var": self.var,
            "path": str(self.path),
            "commit": self.commit,
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


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _namespace_at(text: str, pos: int) -> str:
    names = [m.group(1) for m in _NAMESPACE.finditer(text, 0, pos)]
    return "::".join(names[-2:]) if names else ""


def scan_file(text: str, rel: str) -> list[Symbol]:
    out: list[Symbol] = []
    if rel.endswith(".py"):
        triton_names = set()
        if _TRITON_DEC.search(text):
            for m in _TRITON_DEF.finditer(text):
                triton_names.add(m.group(1))
                out.append(Symbol(m.group(1), "triton_jit", rel, _line_of(text, m.start(1))))
        for m in _PY_DEF.finditer(text):
            if m.group(1) not in triton_names:
                out.append(Symbol(m.group(1), "python", rel, _line_of(text, m.start(1))))
        return out
    if "__global__" in text:
        for m in _GLOBAL.finditer(text):
            out.append(Symbol(m.group(1), "global", rel, _line_of(text, m.start(1)), _namespace_at(text, m.start())))
    for m in _TYPE_DEF.finditer(text):
        out.append(Symbol(m.group(1), "type", rel, _line_of(text, m.start(1)), _namespace_at(text, m.start())))
    return out


def _stamp(path: Path, files: list[Path]) -> str:
    h = hashlib.sha256(str(path.resolve()).encode())
    for f in files:
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return "tree-" + h.hexdigest()[:16]


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.suffix in SOURCE_SUFFIXES:
                files.append(p)
    return files


def load_checkout(path: Path, cache_dir: Path) -> Checkout:
    """Identify a checkout and load (or build and cache) its symbol index."""
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
        test_cmd=up.test_cmd if up else "pytest {test_file} -q -k {symbol}",
    )
    files = None
    key = commit
    if key is None:
        files = _walk(path)
        key = _stamp(path, files)
    index_file = cache_dir / "index" / f"{name}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}-{key}.json"
    if index_file.is_file():
        try:
            data = json.loads(index_file.read_text())
            if data.get("version") == INDEX_VERSION:
                co.symbols = {k: [Symbol(**s) for s in v] for k, v in data["symbols"].items()}
                co.test_files = data["test_files"]
                return co
        except (OSError, ValueError, TypeError):
            pass  # rebuild a damaged cache entry
    for f in files if files is not None else _walk(path):
        try:
            if f.stat().st_size > MAX_FILE_BYTES:
                continue
            text = f.read_text(errors="replace")
        except OSError:
            continue
        rel = f.relative_to(path).as_posix()
        if _is_test(rel) and rel.endswith(".py"):
            co.test_files.append(rel)
        for sym in scan_file(text, rel):
            co.symbols.setdefault(sym.name, []).append(sym)
    index_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = index_file.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "version": INDEX_VERSION,
                "path": str(path),
                "commit": commit,
                "symbols": {k: [s.__dict__ for s in v] for k, v in co.symbols.items()},
                "test_files": co.test_files,
            }
        )
    )
    tmp.replace(index_file)
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


# -- resolution ----------------------------------------------------------------


def _candidate_names(parsed: dict[str, Any]) -> list[tuple[str, bool]]:
    """(symbol, exact?) pairs to look up, most specific first."""
    fn = parsed.get("function") or ""
    name = parsed.get("name") or ""
    out: list[tuple[str, bool]] = []
    base = name[:-3] if name.endswith(".kd") else name
    if re.fullmatch(r"[A-Za-z_]\w*", base) and not base.startswith("_Z"):
        out.append((base, True))
    if not fn or not re.fullmatch(r"[A-Za-z_]\w*", fn):
        return out
    if fn and re.fullmatch(r"[A-Za-z_]\w*", fn) and (fn, True) not in out:
        out.append((fn, True))
    for variant in (fn.lstrip("_"), f"{fn}_kernel", fn.removesuffix("_kernel"), f"_{fn}"):
        if variant and variant != fn and re.fullmatch(r"[A-Za-z_]\w*", variant):
            out.append((variant, False))
    return out


def _wanted_kinds(parsed: dict[str, Any]) -> tuple[str, ...]:
    kind = parsed.get("kind") or ""
    if kind == "triton_jit":
        return ("triton_jit",)
    if kind in ("ck_tile", "ck"):
        return ("type", "global")
    return ("global", "triton_jit", "type")


def _namespace_hint(parsed: dict[str, Any]) -> str:
    ns = (parsed.get("config") or {}).get("namespace") or ""
    return ns.split("::")[0] if ns else ""


def _unresolved(parsed: dict[str, Any], reason: str, notes: str = "") -> dict[str, Any]:
    return {
        "kind": parsed.get("kind") or parsed.get("family") or "",
        "category": parsed.get("category") or "",
        "source_resolution": "unresolved",
        "source_error": reason,
        "notes": notes,
    }


def _display(co: Checkout, sym: Symbol) -> str:
    return f"{co.var}/{sym.file}"


def _url(co: Checkout, sym: Symbol) -> str:
    if co.url and co.commit:
        return f"{co.url}/blob/{co.commit}/{sym.file}#L{sym.line}"
    return ""


def _test_for(co: Checkout, symbol: str, fn_stem: str) -> str | None:
    stem = fn_stem.strip("_").removesuffix("_kernel")
    named = [t for t in co.test_files if stem and stem.split("_")[0] in Path(t).name]
    pattern = re.compile(r"\b" + re.escape(symbol) + r"\b")
    for t in named + [t for t in co.test_files if t not in named]:
        try:
            text = (co.path / t).read_text(errors="replace")
        except OSError:
            continue
        if pattern.search(text) or (stem and stem in text and t in named):
            return t
    return None


_REF_DEF = re.compile(r"^def\s+((?:ref|reference|torch|naive|native)_\w+|\w+_(?:ref|reference|torch|naive))\s*\(", re.M)


def _why_unresolvable(parsed: dict[str, Any], checkouts: list[Checkout]) -> str | None:
    """Why no checkout can hold this kernel's source (generated, closed, no symbol...), or None."""
    kind = parsed.get("kind") or ""
    if not checkouts:
        return "no source checkouts: pass --kernel-source-repos PATH... or --clone"
    if kind == "inductor":
        return (
            "generated by TorchInductor at run time; its source is in the run's inductor "
            "cache (TORCHINDUCTOR_CACHE_DIR), not in a checkout"
        )
    if kind == "tensile_gemm":
        return "Tensile/hipBLASLt solution generated from library logic files; no source symbol"
    if kind in ("library_gemm", "cudnn", "blit") or parsed.get("family") in ("cublas", "cublaslt", "cudnn", "nccl"):
        return f"closed-source or runtime library kernel ({parsed.get('family')})"
    if not _candidate_names(parsed):
        return "the name carries no source symbol (runtime memory activity or unparsed name)"
    return None


Hit = tuple[Checkout, Symbol]


def _narrow(hits: list[Hit], hint: str, family: str) -> list[Hit]:
    """The definitions that fit the kernel's namespace, then its project (a family named after one)."""
    narrowed = hits
    if hint:
        by_ns = [(co, s) for co, s in hits if s.namespace.split("::")[0] == hint or co.name.startswith(hint)]
        narrowed = by_ns or hits
    if len(narrowed) > 1 and family in {u.name for u in UPSTREAMS if u.name != "triton"}:
        # a family named after a project (vllm, sglang, aiter...) says where it lives; "triton" does not
        by_repo = [(co, s) for co, s in narrowed if co.name == family]
        narrowed = by_repo or narrowed
    return narrowed


def _add_test_refs(row: dict[str, Any], co: Checkout, sym: Symbol, parsed: dict[str, Any]) -> None:
    """The test of the kernel, how to run it, and the reference implementation inside it."""
    test = _test_for(co, sym.name, parsed.get("function") or sym.name)
    if test:
        row["test_file"] = f"{co.var}/{test}"
        if co.test_cmd:
            row["test_cmd"] = f"cd {co.var} && " + co.test_cmd.format(test_file=test, symbol=sym.name.strip("_"))
        text = (co.path / test).read_text(errors="replace")
        ref = _REF_DEF.search(text)
        if ref:
            row.update(
                baseline_ref_file=f"{co.var}/{test}",
                baseline_ref_symbol=ref.group(1),
                baseline_ref_kind="inline_in_test",
            )
    row.setdefault("baseline_ref_kind", "none")


def _add_triton_ref(row: dict[str, Any], sym: Symbol, parsed: dict[str, Any], checkouts: list[Checkout]) -> None:
    """For a non-Triton kernel: the one Triton kernel of the same stem, if exactly one exists."""
    if sym.kind == "triton_jit":
        return
    stem = (parsed.get("function") or sym.name).strip("_").removesuffix("_kernel")
    tri = [
        (c, s)
        for c in checkouts
        for name, ss in c.symbols.items()
        if stem and stem in name
        for s in ss
        if s.kind == "triton_jit"
    ]
    if len(tri) == 1:
        row.update(triton_ref_file=f"{tri[0][0].var}/{tri[0][1].file}", triton_ref_symbol=tri[0][1].name)


def resolve(parsed: dict[str, Any], checkouts: list[Checkout]) -> dict[str, Any]:
    """One row of AMD Magpie's 15 source columns (plus ``line`` and ``candidates``) for a parsed kernel."""
    why = _why_unresolvable(parsed, checkouts)
    if why is not None:
        return _unresolved(parsed, why)
    kind = parsed.get("kind") or ""
    wanted = _wanted_kinds(parsed)
    hint = _namespace_hint(parsed)
    family = parsed.get("family") or ""
    for symbol, exact_name in _candidate_names(parsed):
        hits = [(co, s) for co in checkouts for s in co.symbols.get(symbol, []) if s.kind in wanted]
        hits = [(co, s) for co, s in hits if (co.path / s.file).is_file()]  # never a directory or a stale entry
        if not hits:
            continue
        narrowed = _narrow(hits, hint, family)
        files = {(co.path, s.file) for co, s in narrowed}
        if len(files) > 1:
            cands = "; ".join(f"{_display(co, s)}:{s.line}" for co, s in narrowed[:8])
            return {
                **_unresolved(parsed, f"{len(narrowed)} definitions of {symbol!r}"),
                "source_resolution": "ambiguous",
                "notes": f"candidates: {cands}",
                "candidates": [{"file": _display(co, s), "line": s.line, "repo": co.name} for co, s in narrowed],
            }
        co, sym = narrowed[0]
        resolution = "exact" if exact_name and (len(hits) == len(narrowed) or hint) else "probable"
        row = {
            "kind": kind or family,
            "category": parsed.get("category") or "",
            "source_repo": co.name,
            "source_file": _display(co, sym),
            "line": sym.line,
            "upstream_url": _url(co, sym),
            "source_resolution": resolution,
            "source_error": "",
            "notes": "" if co.commit else "checkout is not a git repository: upstream_url omitted",
        }
        if not exact_name:
            row["notes"] = (row["notes"] + "; " if row["notes"] else "") + f"matched name variant {symbol!r}"
        _add_test_refs(row, co, sym, parsed)
        _add_triton_ref(row, sym, parsed, checkouts)
        return row
    searched = ", ".join(f"{c.name}@{(c.commit or 'worktree')[:12]}" for c in checkouts)
    names = ", ".join(s for s, _ in _candidate_names(parsed)) or "(no usable symbol in the kernel name)"
    return _unresolved(parsed, f"no definition of {names} ({', '.join(wanted)}) in {searched}")


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
    sources = {k["name"]: resolve(k["parsed"], checkouts) for k in kernels}
    return {
        "sources": sources,
        "repos": [c.describe() for c in checkouts],
        "errors": errors,
        "columns": list(SOURCE_COLUMNS),
    }
