"""What is wrong with a kernel's Python files before anything imports them: a syntax error, or an ``entry`` /
``reference`` naming a function or class the file does not define.

Both are the Python counterpart of a failed compile (KernelBench's ``compiled: false``), like a missing file: the
compile stage reports them with the file, line and nearest name, and the kernel is not loaded, checked or timed.
The check reads the file's top-level statements only; a file that can bind names in ways reading cannot follow
(``from x import *``, ``globals()``, a module ``__getattr__``) is left to the import, which reports what it finds.
"""

from __future__ import annotations

import ast
import difflib
import threading
from pathlib import Path

from magpie_core.config.kernel import KernelConfig

#: what a file may use to bind names that reading its statements does not show
_DYNAMIC = ("globals()", "__getattr__", "setattr(", "exec(", "vars()")
#: one parse at a time: CPython 3.11's parser raises SystemError ("AST constructor recursion depth mismatch") when
#: threads parse at once, and a compare compiles its kernels in threads
_PARSING = threading.Lock()


def problem(kernel: KernelConfig, search_dirs: list[Path]) -> str | None:
    """Why ``kernel``'s entry or reference cannot load, found by reading the files (None: no such problem seen)."""
    for field in ("entry", "reference"):
        ref = getattr(kernel, field)
        if not ref or ":" not in ref or not ref.rsplit(":", 1)[0].endswith(".py"):
            continue
        spec, name = ref.rsplit(":", 1)
        path = next((base / spec for base in search_dirs if (base / spec).is_file()), None)
        found = _file_problem(path, name) if path is not None else None  # a missing file: the preflight's
        if found:
            return f"{field}: {found}"
    return None


def _file_problem(path: Path, name: str) -> str | None:
    text = path.read_text(errors="replace")
    try:
        with _PARSING:
            tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        return f"{path}:{exc.lineno}: SyntaxError: {exc.msg}"
    except (ValueError, RecursionError, SystemError):  # null bytes, nesting too deep: the import will say
        return None
    if any(marker in text for marker in _DYNAMIC):
        return None
    names = _top_level_names(tree)
    if names is None or name in names:
        return None
    close = difflib.get_close_matches(name, sorted(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{path} defines no {name!r}{hint}"


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """Names the module binds outside its functions and classes (in if/try/with/for blocks too); None after
    ``import *``."""
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # what their bodies bind is theirs
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return names
