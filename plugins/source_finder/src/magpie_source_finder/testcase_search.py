"""The test that exercises a kernel, found by import and call search (never by name similarity).

From the kernel outwards: the functions that launch it (a C++ host function whose body names the kernel;
a Python function that launches a Triton kernel, ``kernel[grid](...)``), then the functions calling those,
two levels deep. A test file exercises the kernel when one of its test functions (or a helper it calls)
calls one of these names; a Python name must also be imported from its module (or its module imported),
so a same-named function elsewhere does not count. The command selects those test functions by node id.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from magpie_source_finder.cxx_index import launchers, scan_cxx

MAX_NODE_IDS = 4
MAX_LEVELS = 2
#: C++ launcher names too common to identify an op when a test calls them (``ClampPosition::run``)
GENERIC_NAMES = frozenset(
    {"run", "launch", "forward", "backward", "apply", "call", "main", "invoke", "dispatch", "execute", "impl", "kernel"}
)


@dataclass
class Entry:
    """A name whose call exercises the kernel, and the module that defines it (None: a C++ function,
    reached through a binding such as ``torch.ops._C.name`` or ``ops.name``)."""

    name: str
    module: str | None
    level: int


@dataclass
class TestHit:
    file: str
    tests: list[str] = field(default_factory=list)
    via: str = ""
    level: int = 0


def module_of(rel: str) -> str:
    """``python/triton_kernels/triton_kernels/matmul_ogs.py`` -> ``triton_kernels.matmul_ogs`` (from the
    innermost folder holding an ``__init__``-style package root: the last path part repeated, or the whole)."""
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for i, p in enumerate(parts[:-1]):
        if p in ("python", "src") and i + 1 < len(parts):
            parts = parts[i + 1 :]
            break
    for i in range(len(parts) - 1):
        if parts[i] == parts[i + 1]:  # python/triton_kernels/triton_kernels/... : the inner one is the package
            parts = parts[i + 1 :]
            break
    return ".".join(parts)


def _read(path: Path) -> str:
    """A file's text, cached while it is unchanged (the same files are searched for every kernel of a run)."""
    try:
        st = path.stat()
    except OSError:
        return ""
    return _read_cached(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8192)
def _read_cached(path: str, _mtime_ns: int, _size: int) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _parse(path: Path) -> ast.Module | None:
    """The file's syntax tree (cached like its text); None when it is not valid Python."""
    text = _read(path)
    return _parse_cached(text) if text else None


@lru_cache(maxsize=2048)
def _parse_cached(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _python_launchers(root: Path, py_files: list[str], name: str, def_file: str) -> list[tuple[str, str]]:
    """(function, file) pairs of non-test Python functions whose bodies use ``name``."""
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    out: list[tuple[str, str]] = []
    for rel in py_files:
        if not word.search(_read(root / rel)):
            continue
        tree = _parse(root / rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            is_fn = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != name
            if is_fn and any(_names_in(stmt, name) for stmt in node.body):
                out.append((node.name, rel))
    return out


def _names_in(node: ast.AST, name: str) -> bool:
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Name) and sub.id == name) or (isinstance(sub, ast.Attribute) and sub.attr == name):
            return True
    return False


def entries_for(root: Path, py_files: list[str], kernel: str, def_file: str, kind: str) -> list[Entry]:
    """The kernel and, level by level, the functions that launch it."""
    if kind == "triton_jit":
        found = [Entry(kernel, module_of(def_file), 0)]
        frontier = [(kernel, def_file)]
        for level in (1, 2)[:MAX_LEVELS]:
            nxt = []
            for name, _ in frontier:
                for fn, rel in _python_launchers(root, py_files, name, def_file):
                    if not fn.startswith("test") and all(e.name != fn for e in found):
                        found.append(Entry(fn, module_of(rel), level))
                        nxt.append((fn, rel))
            frontier = nxt[:8]
        return found
    text = _read(root / def_file)
    defs = scan_cxx(text)
    found = [Entry(kernel, None, 0)]
    frontier = [kernel]
    for level in (1, 2)[:MAX_LEVELS]:
        nxt = []
        for name in frontier:
            for fn in launchers(text, defs, name):
                if fn not in GENERIC_NAMES and all(e.name != fn for e in found):
                    found.append(Entry(fn, None, level))
                    nxt.append(fn)
        frontier = nxt
    return found


def _imports(tree: ast.Module) -> tuple[set[str], set[tuple[str, str]]]:
    """(modules a test file imports, (module, name) pairs of its ``from module import name``)."""
    modules: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                pairs.add((node.module, a.name))
                modules.add(f"{node.module}.{a.name}")  # the name may be a module itself
    return modules, pairs


def _calls(node: ast.AST) -> set[tuple[str, bool]]:
    """(name, through an attribute) of every call in ``node``: ``f(...)``, ``ops.f(...)``, ``kernel[grid](...)``."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Subscript):  # kernel[grid](...)
                f = f.value
            if isinstance(f, ast.Name):
                out.add((f.id, False))
            elif isinstance(f, ast.Attribute):
                out.add((f.attr, True))
    return out


def _entry_calls(node: ast.AST, usable: dict[str, Entry]) -> set[str]:
    """The entries ``node`` calls. A C++ function is reached from Python through an attribute (``torch.ops._C.f``,
    ``ops.f``, ``aiter.f``); a bare ``f(...)`` in a test is a Python function of that name, not the C++ one."""
    return {n for n, attr in _calls(node) if n in usable and (attr or usable[n].module is not None)}


def _usable(entry: Entry, modules: set[str], pairs: set[tuple[str, str]]) -> bool:
    """A Python entry counts only when the test imports its module, or the name from that module (or from a
    package above it, which re-exports it)."""
    if entry.module is None:
        return True
    mod = entry.module
    if mod in modules:
        return True
    return any(n == entry.name and (m == mod or mod.startswith(m + ".")) for m, n in pairs)


def _test_functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    out: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    out.append((f"{node.name}::{sub.name}", sub))
    return out


def _hit_in(rel: str, tree: ast.Module, entries: list[Entry]) -> TestHit | None:
    modules, pairs = _imports(tree)
    usable = {e.name: e for e in entries if _usable(e, modules, pairs)}
    if not usable:
        return None
    helpers = {  # module-level helpers of the test file that call an entry: calling them counts too
        n.name: n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test")
    }
    helper_via = {h: next(iter(_entry_calls(node, usable)), None) for h, node in helpers.items()}
    best: TestHit | None = None
    for test, node in _test_functions(tree):
        direct = _entry_calls(node, usable)
        via = min(direct, key=lambda n: usable[n].level) if direct else None
        if via is None:
            via = next((helper_via[c] for c, _ in _calls(node) if helper_via.get(c)), None)
        if via is None:
            continue
        level = usable[via].level
        if best is None or level < best.level:
            best = TestHit(rel, [test], via, level)
        elif level == best.level:
            best.tests.append(test)
    return best


def find_test(root: Path, test_files: list[str], entries: list[Entry]) -> TestHit | None:
    """The test file whose tests call the kernel, or its nearest launcher (fewest levels, then most tests)."""
    words = re.compile(r"\b(?:" + "|".join(re.escape(e.name) for e in entries) + r")\b")
    hits: list[TestHit] = []
    for rel in test_files:
        if not words.search(_read(root / rel)):
            continue
        tree = _parse(root / rel)
        if tree is None:
            continue
        hit = _hit_in(rel, tree, entries)
        if hit is not None:
            hits.append(hit)
    if not hits:
        return None
    return min(hits, key=lambda h: (h.level, -len(h.tests), h.file))


def command(hit: TestHit) -> str:
    """A pytest command selecting the hit's tests (node ids; ``-k`` when there are many)."""
    if len(hit.tests) <= MAX_NODE_IDS:
        ids = " ".join(f"{hit.file}::{t}" for t in hit.tests)
        return f"python -m pytest {ids} -q"
    names = " or ".join(t.split("::")[-1] for t in hit.tests)
    return f'python -m pytest {hit.file} -q -k "{names}"'
