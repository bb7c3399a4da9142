"""Kernel discovery: kernel sources and kernel configs in a folder.

How a source looks is the installed kernel backends' knowledge
(``KernelBackend.source_patterns``: file suffix -> regexes, a named group ``name``
captures kernel names). GPU C++ files that no installed backend claims are still
found by their ``__global__`` functions (:data:`GENERIC_GPU_SOURCES`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from magpie_mcp.models import ToolModel
from pydantic import Field

from magpie_core.config.kernel import KernelConfigFile
from magpie_core.config.loader import ConfigError, ConfigErrors, load_config
from magpie_core.plugins import get_plugin_manager

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox", ".mypy_cache"}
MAX_FILE_BYTES = 2_000_000

#: The fallback for GPU C++ files that no installed backend claims: suffix -> kernel type. Only
#: suffixes absent from every backend's ``source_patterns`` use it.
GENERIC_GPU_SOURCES = {".cu": "cuda", ".cuh": "cuda", ".hip": "hip", ".cpp": "hip", ".cc": "hip"}
GLOBAL_FN = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:[\w:<>,\s*&]+?\s+)?(?P<name>\w+)\s*\(")

#: suffix -> [(kernel type, compiled pattern)]
Rules = dict[str, list[tuple[str, re.Pattern[str]]]]


class DiscoveredSource(ToolModel):
    path: str
    kernel_types: list[str]
    kernels: list[str] = Field(default_factory=list, description="kernel function or class names found")


class DiscoveredConfig(ToolModel):
    path: str
    kernel_ids: list[str]
    kernel_types: list[str]


class InvalidConfig(ToolModel):
    path: str
    problem: str


class Discovery(ToolModel):
    root: str
    sources: list[DiscoveredSource] = Field(default_factory=list)
    configs: list[DiscoveredConfig] = Field(default_factory=list)
    invalid_configs: list[InvalidConfig] = Field(default_factory=list)
    truncated: bool = False


def _walk(root: Path, max_depth: int) -> Iterator[Path]:
    base_depth = len(root.parts)
    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).parts) - base_depth
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and depth < max_depth)
        for name in sorted(files):
            yield Path(folder) / name


def backend_rules() -> Rules:
    """suffix -> [(kernel type, compiled pattern)] from every installed kernel backend."""
    table: Rules = {}
    seen: set[int] = set()
    for kernel_type, backend in get_plugin_manager().components("kernel_backend").items():
        if id(backend) in seen:
            continue
        seen.add(id(backend))
        primary = (getattr(backend, "kernel_types", ()) or (kernel_type,))[0]
        for suffix, patterns in (getattr(backend, "source_patterns", None) or {}).items():
            for pattern in patterns or ("",):
                table.setdefault(suffix.lower(), []).append((primary, re.compile(pattern, re.MULTILINE)))
    return table


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(errors="replace")
    except OSError:
        return None


def match_source(path: Path, rules: Rules) -> DiscoveredSource | None:
    """What ``path`` is, by the backends' rules for its suffix (else the generic GPU C++ rule), or None."""
    suffix = path.suffix.lower()
    own = rules.get(suffix)
    generic = suffix in GENERIC_GPU_SOURCES and not own
    if not own and not generic:
        return None
    text = _read(path)
    if text is None:
        return None
    types: list[str] = []
    names: list[str] = []
    for kernel_type, pattern in own or []:
        matches = list(pattern.finditer(text)) if pattern.pattern else [None]
        if matches:
            if kernel_type not in types:
                types.append(kernel_type)
            names += [m.group("name") for m in matches if m is not None and "name" in m.re.groupindex]
    if generic and "__global__" in text:
        types.append(GENERIC_GPU_SOURCES[suffix])
        names += [m.group("name") for m in GLOBAL_FN.finditer(text)]
    if not types:
        return None
    return DiscoveredSource(path=str(path), kernel_types=types, kernels=list(dict.fromkeys(n for n in names if n)))


def discover_kernels(root: Path, *, max_depth: int = 6, max_results: int = 500) -> Discovery:
    """Kernel sources (by the installed backends' patterns) and kernel YAML configs under ``root``."""
    rules = backend_rules()
    found = Discovery(root=str(root))
    for path in _walk(root, max_depth):
        if len(found.sources) + len(found.configs) >= max_results:
            found.truncated = True
            break
        if path.suffix.lower() in (".yaml", ".yml"):
            _discover_config(path, found)
            continue
        source = match_source(path, rules)
        if source is not None:
            found.sources.append(source)
    return found


def _discover_config(path: Path, found: Discovery) -> None:
    try:
        head = path.read_text(errors="replace")[:MAX_FILE_BYTES]
    except OSError:
        return
    if not re.search(r"(?m)^(kernel|kernels):", head):
        return
    try:
        file = load_config(KernelConfigFile, path)
    except (ConfigError, ConfigErrors) as exc:
        found.invalid_configs.append(InvalidConfig(path=str(path), problem=str(exc)))
        return
    kernels = file.all_kernels()
    found.configs.append(
        DiscoveredConfig(
            path=str(path),
            kernel_ids=[k.id for k in kernels],
            kernel_types=list(dict.fromkeys(k.type for k in kernels)),
        )
    )
