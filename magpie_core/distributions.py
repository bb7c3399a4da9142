"""Installed distributions' ``magpie`` entry points and versions, read the way ``importlib.metadata`` finds them.

Every ``magpie`` command discovers its plugins, and ``importlib.metadata`` (``entry_points(group=...)``) builds an
entry-point object for every group of every installed distribution, then parses the whole metadata file (with the
``email`` package) of each plugin's distribution for its name and version: ~10 ms of a ``magpie gap`` run, and ~15
ms more to import it with ``email`` and ``zipfile`` for a command that builds no pydantic model. Here the same
directories are listed in the same order (``sys.path``, then each folder's ``*.dist-info``/``*.egg-info`` children,
the first distribution of a name winning, as ``importlib.metadata``'s path finder does), only the files that name
the ``magpie`` group are parsed, and only the ``Name``/``Version`` header lines of those distributions are read.

Where discovery could differ (a zip or an egg on ``sys.path``, an import hook that finds distributions itself)
:func:`entry_points` and :func:`version` defer to ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Dist", "EntryPoint", "entry_points", "settle_pydantic_plugins", "version"]

_INFO_SUFFIXES = (".dist-info", ".egg-info")
#: ``importlib.metadata.EntryPoint.pattern``: ``module``, ``module:attr.attr``, optional ``[extras]``
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class Dist:
    """An installed distribution's name and version (``EntryPoint.dist`` of ``importlib.metadata``)."""

    name: str
    version: str


@dataclass(frozen=True)
class EntryPoint:
    """One entry point: what :class:`~magpie_core.plugins.PluginManager` uses of ``importlib.metadata``'s."""

    name: str
    value: str
    group: str
    dist: Dist | None = field(default=None, compare=False)

    def load(self) -> Any:
        """The module, or the object ``module:attr`` names, imported."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r}: cannot read {self.value!r}")
        target: Any = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            target = getattr(target, attr)
        return target


def _normalize(name: str) -> str:
    """``importlib.metadata.Prepared.normalize``."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _plain_path() -> bool:
    """Whether ``importlib.metadata`` would find distributions only as folders in ``sys.path`` directories."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and finder is not PathFinder:
            return False
    for entry in sys.path:
        if entry.lower().endswith(".egg") or (os.path.exists(entry or ".") and not os.path.isdir(entry or ".")):
            return False
    return True


def _info_dirs() -> list[str] | None:
    """Each distribution's metadata folder, the first one of each name, in ``importlib.metadata``'s order; None
    for a folder whose name ``importlib.metadata`` would read another way (an upper-case suffix). Listed again
    when ``sys.path`` or a folder's modification time changed (an install), as ``importlib.metadata`` does."""
    key = tuple((entry, _mtime(entry or ".")) for entry in sys.path)
    if _LISTED.get("key") != key:
        _LISTED["key"], _LISTED["dirs"] = key, _list_info_dirs()
    return _LISTED["dirs"]


_LISTED: dict[str, Any] = {}


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _list_info_dirs() -> list[str] | None:
    seen: set[str] = set()
    found: list[str] = []
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            continue
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(_INFO_SUFFIXES):
                if not child.endswith(_INFO_SUFFIXES):
                    return None
                by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
        for group in by_name.values():
            for child in group:
                stem = os.path.splitext(child)[0].partition("-")[0]
                key = _normalize(stem)
                if key not in seen:
                    seen.add(key)
                    found.append(os.path.join(root, child))
    return found


def _read(folder: str, name: str) -> str | None:
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _dist(folder: str) -> Dist:
    """Name and version from the metadata file's headers (``METADATA``, else ``PKG-INFO``)."""
    text = _read(folder, "METADATA") or _read(folder, "PKG-INFO") or ""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and not line[:1].isspace():
            headers.setdefault(key.strip().lower(), value.strip())
    return Dist(headers.get("name", ""), headers.get("version", ""))


def _group(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of section ``[group]`` of an ``entry_points.txt``."""
    out: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line.strip("[]") == group
        elif inside:
            name, sep, value = line.partition("=")
            if sep:
                out.append((name.strip(), value.strip()))
    return out


def entry_points(group: str) -> list[Any]:
    """Every entry point of ``group``, as ``importlib.metadata.entry_points(group=group)`` lists them."""
    folders = _info_dirs() if _plain_path() else None
    if folders is None:
        import importlib.metadata as md

        return list(md.entry_points(group=group))
    found: list[Any] = []
    for folder in folders:
        text = _read(folder, "entry_points.txt")
        if not text or f"[{group}]" not in text:
            continue
        pairs = _group(text, group)
        if pairs:
            dist = _dist(folder)
            found.extend(EntryPoint(name, value, group, dist) for name, value in pairs)
    return found


def version(distribution: str) -> str:
    """``importlib.metadata.version(distribution)``; raises ``importlib.metadata.PackageNotFoundError`` too."""
    folders = _info_dirs() if _plain_path() else None
    if folders is not None:
        wanted = _normalize(distribution)
        for folder in folders:
            if _normalize(os.path.splitext(os.path.basename(folder))[0].partition("-")[0]) == wanted:
                dist = _dist(folder)
                if dist.version:
                    return dist.version
                break
    import importlib.metadata as md

    return md.version(distribution)


def settle_pydantic_plugins() -> None:
    """Give pydantic the answer to its plugin lookup when no installed distribution has a ``pydantic`` entry point.

    At its first model build pydantic lists the entry points of every installed distribution with
    ``importlib.metadata`` (group ``pydantic``: its plugins), ~8 ms of a ``magpie gap`` run; the listing here
    is cached from plugin discovery. When it finds the group empty, pydantic's own lookup would too, and its
    cache of loaded plugins is set to that empty answer. That cache is private to pydantic: when the loader
    module lacks it (another pydantic version) or has already looked, nothing is done and pydantic looks itself.
    """
    import pydantic.plugin._loader as loader

    if getattr(loader, "_plugins", False) is not None or getattr(loader, "_loading_plugins", True):
        return
    if not entry_points("pydantic"):
        loader._plugins = {}
