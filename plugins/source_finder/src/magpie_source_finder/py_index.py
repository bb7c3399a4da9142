"""Triton and Gluon kernels in Python files, read with :mod:`ast` so any decorator layout is found.

``@triton.jit``, ``@triton.jit(...)`` over several lines, ``@jit`` imported from triton, ``@tl.jit``,
``@gluon.jit``, and stacks under ``@triton.autotune(...)`` / ``@triton.heuristics(...)`` (or other
decorators) all mark a kernel. A ``repr=`` argument (Triton names the compiled kernel with it) is
followed to a string literal when it can be: ``make_matmul_repr("_matmul_ogs", ...)`` or a function
returning ``f"_finalize_matmul{suffix}_..."`` gives the prefix every launched name starts with.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_KERNEL_DECORATORS = {"jit", "autotune", "heuristics"}
_TRITON_ROOTS = {"triton", "tl", "gluon", "ttgl"}
_CHEAP_CHECK = re.compile(r"@\s*(?:[\w.]+\.)?(?:jit|autotune|heuristics)\b")
_FALLBACK = re.compile(r"^[ \t]*@(?:triton\.|tl\.|gluon\.)?jit\b[\s\S]*?^[ \t]*def[ \t]+(\w+)", re.M)


@dataclass
class PyKernel:
    name: str
    line: int
    decorators: list[str]
    repr_base: str | None = None  # the literal prefix of names made by a custom repr=
    custom_repr: bool = False


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _triton_names(tree: ast.Module) -> set[str]:
    """Bare names bound to Triton decorators by ``from triton import jit`` and the like."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("triton",):
            for alias in node.names:
                if alias.name in _KERNEL_DECORATORS:
                    out.add(alias.asname or alias.name)
    return out


def _is_kernel_decorator(dotted: str, bare: set[str]) -> bool:
    parts = dotted.split(".")
    if len(parts) == 1:
        return parts[0] in bare
    return parts[-1] in _KERNEL_DECORATORS and parts[0] in _TRITON_ROOTS | {"triton_lang"}


def _literal_prefix(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def _repr_base(node: ast.AST, tree: ast.Module) -> str | None:
    """The literal prefix of the names a ``repr=`` value produces, when the module says it."""
    if isinstance(node, ast.Call):
        return _literal_prefix(node.args[0]) if node.args else None
    if not isinstance(node, ast.Name):
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
            return _repr_base(stmt.value, tree) if isinstance(stmt.value, ast.Call) else None
        if isinstance(stmt, ast.FunctionDef) and stmt.name == node.id:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Return):
                    return _literal_prefix(sub.value)
    return None


def _kernel_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, bare: set[str]) -> PyKernel | None:
    names = [_dotted(d) for d in fn.decorator_list]
    if not any(_is_kernel_decorator(n, bare) for n in names):
        return None
    kernel = PyKernel(fn.name, fn.lineno, names)
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _is_kernel_decorator(_dotted(d), bare):
            for kw in d.keywords:
                if kw.arg == "repr":
                    kernel.custom_repr = True
                    kernel.repr_base = _repr_base(kw.value, tree)
    return kernel


def scan_python(text: str) -> list[PyKernel]:
    """Every Triton/Gluon kernel defined in a Python source text."""
    if not _CHEAP_CHECK.search(text):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [PyKernel(m.group(1), text.count("\n", 0, m.start(1)) + 1, ["jit"]) for m in _FALLBACK.finditer(text)]
    bare = _triton_names(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kernel = _kernel_of(node, tree, bare)
            if kernel is not None:
                out.append(kernel)
    return out
