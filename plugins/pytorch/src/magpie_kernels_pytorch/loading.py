"""Finding the callables a kernel config names.

``entry``, ``reference`` and ``get_inputs`` take ``module:attr``,
``path/to/file.py:attr`` or a bare ``attr`` (looked up in the entry's module).
Relative paths are resolved against the kernel's working dir, then the
config file's folder.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


class LoadError(ValueError):
    """A callable named in the kernel config cannot be found."""


def load_file(path: Path) -> ModuleType:
    key = "magpie_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    sys.path.insert(0, str(path.parent))  # sibling imports inside the user's file
    spec.loader.exec_module(module)
    return module


def load_module(spec: str, search_dirs: list[Path]) -> ModuleType:
    if spec.endswith(".py") or "/" in spec:
        for base in search_dirs:
            candidate = (base / spec).resolve()
            if candidate.is_file():
                return load_file(candidate)
        raise LoadError(f"file {spec!r} not found in {', '.join(str(d) for d in search_dirs)}")
    for base in search_dirs:
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise LoadError(f"cannot import module {spec!r}: {exc}") from exc


def resolve(ref: str, search_dirs: list[Path], default_module: ModuleType | None = None) -> Any:
    """The object ``ref`` names (``module:attr``, ``file.py:attr`` or bare ``attr``)."""
    if ":" in ref:
        module_spec, attr = ref.rsplit(":", 1)
        module = load_module(module_spec, search_dirs)
    elif default_module is not None:
        module, attr = default_module, ref
    else:
        raise LoadError(f"{ref!r}: expected 'module:name' or 'file.py:name'")
    try:
        return getattr(module, attr)
    except AttributeError:
        raise LoadError(f"{getattr(module, '__file__', module.__name__)} has no {attr!r}") from None


def module_of(ref: str, search_dirs: list[Path]) -> ModuleType | None:
    if ":" not in ref:
        return None
    return load_module(ref.rsplit(":", 1)[0], search_dirs)
