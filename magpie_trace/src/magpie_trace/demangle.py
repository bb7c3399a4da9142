"""C++ symbol demangling through libraries, never by pattern-matching mangled text.

Tried in order: ``cpp_demangle`` (a full Itanium demangler; knows newer
manglings such as ``DF16b`` for bfloat16) and ``cxxfilt`` (libstdc++'s
``__cxa_demangle``). Symbols neither can read (e.g. C++20 constrained
template parameters, ``Tn``) fall back to :func:`leading_names`, which walks
the Itanium ``<nested-name>`` grammar just far enough to return the
namespace and function names; callers mark such results as lower confidence.

:func:`demangle_names` demangles a batch the way compilers' own reports spell names: through a
``c++filt``-compatible program when one is installed (``c++filt``, ``llvm-cxxfilt``, ``cu++filt``),
else through :func:`demangle`. It is the one demangler of magpie: kernel backends call it for their
compile reports.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType


@lru_cache(maxsize=1)
def _cpp_demangle() -> ModuleType | None:
    """cpp_demangle, imported on the first mangled name."""
    try:
        import cpp_demangle
    except ImportError:  # pragma: no cover
        return None
    return cpp_demangle


@lru_cache(maxsize=1)
def _cxxfilt() -> ModuleType | None:
    """cxxfilt, imported only for a name cpp_demangle cannot read: importing it loads libstdc++ through ctypes
    after two ``ldconfig -p`` runs (``ctypes.util.find_library``), ~10 ms a ``magpie gap`` run need not pay."""
    try:
        import cxxfilt
    except ImportError:  # pragma: no cover
        return None
    return cxxfilt


__all__ = ["demangle", "demangle_names", "is_mangled", "leading_names"]

#: the ``c++filt``-compatible programs :func:`demangle_names` looks for by default, in order
DEMANGLER_TOOLS = ("c++filt", "llvm-cxxfilt")


def is_mangled(name: str) -> bool:
    """Whether ``name`` is an Itanium-mangled C++ symbol (``_Z...``)."""
    return name.startswith("_Z") and len(name) > 3


@lru_cache(maxsize=65536)
def demangle(name: str) -> str | None:
    """The demangled form of an Itanium-mangled ``name``; ``None`` when no library can read it."""
    if not is_mangled(name):
        return None
    symbol = name[:-3] if name.endswith(".kd") else name
    cpp_demangle = _cpp_demangle()
    if cpp_demangle is not None:
        try:
            return str(cpp_demangle.demangle(symbol))
        except Exception:
            pass
    cxxfilt = _cxxfilt()
    if cxxfilt is not None:
        try:
            return str(cxxfilt.demangle(symbol, external_only=False))
        except Exception:
            pass
    return None


def leading_names(name: str) -> list[str]:
    """The ``<source-name>`` components of a mangled symbol's leading nested name.

    ``_ZN7sgl_hip10activation18act_and_mul_kernelI...`` gives
    ``["sgl_hip", "activation", "act_and_mul_kernel"]``. Reads only the
    length-prefixed identifiers (``St`` for ``std``, ``L`` for internal
    linkage) and stops at the first template, substitution or other production.
    """
    if not is_mangled(name):
        return []
    i = 2
    out: list[str] = []
    nested = i < len(name) and name[i] == "N"
    if nested:
        i += 1
        while i < len(name) and name[i] in "rVKRO":  # cv / ref qualifiers
            i += 1
    while i < len(name):
        if name.startswith("St", i):
            out.append("std")
            i += 2
            continue
        if name[i] == "L":
            i += 1
            continue
        if not name[i].isdigit():
            break
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        length = int(name[i:j])
        ident = name[j : j + length]
        if len(ident) != length:
            break
        out.append("(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident)
        i = j + length
        if not nested:
            break
    return out


def _find_tool(tools: Sequence[str | Path]) -> str | None:
    for tool in tools:
        if isinstance(tool, Path) or "/" in tool:
            if Path(tool).is_file():
                return str(tool)
        elif found := shutil.which(tool):
            return found
    return None


def demangle_names(names: Sequence[str], tools: Sequence[str | Path] = DEMANGLER_TOOLS) -> dict[str, str]:
    """Each of ``names`` -> its demangled form, or the name itself where it cannot be demangled.

    ``tools``: ``c++filt``-compatible programs, each a name looked up on ``PATH`` or a path, tried in order;
    the first one found demangles the whole batch in one call. Without one (or when it cannot run), each
    name goes through :func:`demangle`.
    """
    names = list(names)
    tool = _find_tool(tools) if names else None
    if tool is not None:
        try:
            out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            pass
        else:
            lines = out.splitlines()
            return {n: (lines[i] if i < len(lines) and lines[i] else n) for i, n in enumerate(names)}
    return {n: demangle(n) or n for n in names}
