"""Plugin discovery and the registry of named components.

Plugins are found through ``importlib.metadata`` entry points in the
``magpie`` group. ``MAGPIE_PLUGINS`` (a comma list of entry-point or
distribution names; set but empty means none) restricts what loads. A plugin
that fails to import or to register is reported once as a warning naming its
distribution and the error; everything else keeps working.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import warnings
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any

import pluggy

from magpie_core import hookspecs
from magpie_core.interfaces import component_names

ENTRY_POINT_GROUP = "magpie"

#: kind -> the hook that registers components of that kind
KIND_HOOKS: dict[str, str] = {
    "kernel_backend": "magpie_register_kernel_backends",
    "serving_framework": "magpie_register_serving_frameworks",
    "profiler": "magpie_register_profilers",
    "trace_analyzer": "magpie_register_trace_analyzers",
    "kernel_name_parser": "magpie_register_kernel_name_parsers",
    "environment": "magpie_register_environments",
    "timer": "magpie_register_timers",
    "mcp_tool": "magpie_register_mcp_tools",
}


class PluginWarning(UserWarning):
    """A plugin could not be loaded or could not register; the rest still works."""


class PluginConflictError(RuntimeError):
    """Two plugins claim the same component name within one kind."""


class UnknownComponentError(LookupError):
    """No installed plugin provides the requested component."""


@dataclass
class PluginInfo:
    """One entry point of the ``magpie`` group and what became of it."""

    name: str
    module: str
    distribution: str
    version: str
    status: str = "loaded"  # loaded | failed | disabled
    error: str | None = None
    hooks: list[str] = field(default_factory=list)
    components: dict[str, list[str]] = field(default_factory=dict)

    @property
    def kinds(self) -> list[str]:
        return sorted(self.components)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "kinds": self.kinds,
            "hooks": self.hooks,
            "components": self.components,
        }


@dataclass
class Registered:
    component: Any
    plugin: str
    distribution: str


def _allowed_names() -> set[str] | None:
    raw = os.environ.get("MAGPIE_PLUGINS")
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class PluginManager:
    """Loads plugins and holds every registered component, by kind and name."""

    def __init__(self, entry_points: list[md.EntryPoint] | None = None) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self._components: dict[str, dict[str, Registered]] = {kind: {} for kind in KIND_HOOKS}
        self._load_entry_points(
            entry_points if entry_points is not None else list(md.entry_points(group=ENTRY_POINT_GROUP))
        )
        self._collect_components()

    # -- discovery -----------------------------------------------------------

    def _load_entry_points(self, entry_points: list[md.EntryPoint]) -> None:
        allowed = _allowed_names()
        for ep in sorted(entry_points, key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "unknown"
            info = PluginInfo(
                name=ep.name,
                module=ep.value,
                distribution=dist,
                version=ep.dist.version if ep.dist else "",
            )
            if ep.name in self.plugins:
                other = self.plugins[ep.name].distribution
                raise PluginConflictError(f"plugin name {ep.name!r} is declared by both {other!r} and {dist!r}")
            self.plugins[ep.name] = info
            if allowed is not None and ep.name not in allowed and dist not in allowed:
                info.status = "disabled"
                continue
            try:
                module = ep.load()
                self.register_module(module, ep.name)
            except Exception as exc:  # a broken plugin must not take the others down
                self._fail(info, exc, "failed to load")

    def register_module(self, module: ModuleType | object, name: str) -> None:
        """Register an already-imported plugin object (used for tests and entry points)."""
        self.pm.register(module, name=name)
        info = self.plugins.setdefault(
            name, PluginInfo(name=name, module=getattr(module, "__name__", name), distribution="", version="")
        )
        info.hooks = sorted(impl.name for impl in self.pm.get_hookcallers(module) or [])

    def _fail(self, info: PluginInfo, exc: BaseException, what: str) -> None:
        info.status = "failed"
        info.error = _short_error(exc)
        warnings.warn(
            f"magpie plugin {info.name!r} from distribution {info.distribution!r} {what}: {info.error}",
            PluginWarning,
            stacklevel=2,
        )

    # -- registration ----------------------------------------------------------

    def _collect_components(self) -> None:
        for kind, hook_name in KIND_HOOKS.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                info = self.plugins[impl.plugin_name]
                if info.status != "loaded":
                    continue
                staged: list[tuple[str, Any]] = []
                try:
                    impl.function(register=lambda c, _s=staged, _k=kind: _s.append((_k, c)))
                    for _, component in staged:
                        self._add(kind, component, info)
                except PluginConflictError:
                    raise
                except Exception as exc:
                    self._fail(info, exc, f"failed in {hook_name}")
                    self._drop(info)

    def _add(self, kind: str, component: Any, info: PluginInfo) -> None:
        names = component_names(kind, component)
        table = self._components[kind]
        for name in names:
            if name in table:
                other = table[name]
                raise PluginConflictError(
                    f"{kind.replace('_', ' ')} {name!r} is registered by plugin {other.plugin!r} "
                    f"({other.distribution}) and by plugin {info.name!r} ({info.distribution}); "
                    "uninstall one or restrict loading with MAGPIE_PLUGINS"
                )
        for name in names:
            table[name] = Registered(component, info.name, info.distribution)
        info.components.setdefault(kind, []).extend(names)

    def _drop(self, info: PluginInfo) -> None:
        """Forget everything a plugin registered before it failed."""
        for table in self._components.values():
            for name in [n for n, r in table.items() if r.plugin == info.name]:
                del table[name]
        info.components.clear()
        module = self.pm.get_plugin(info.name)
        if module is not None:
            self.pm.unregister(module)

    # -- lookup ----------------------------------------------------------------

    def components(self, kind: str) -> dict[str, Any]:
        """Every component of ``kind``, by name."""
        return {name: reg.component for name, reg in self._components[kind].items()}

    def get(self, kind: str, name: str) -> Any:
        """The component ``name`` of ``kind``, or an error that says what is installed."""
        table = self._components[kind]
        if name in table:
            return table[name].component
        known = ", ".join(sorted(table)) or "none"
        raise UnknownComponentError(
            f"no {kind.replace('_', ' ')} named {name!r} is installed (installed: {known}); "
            "install the plugin that provides it, or check MAGPIE_PLUGINS"
        )

    def owner(self, kind: str, name: str) -> Registered:
        return self._components[kind][name]

    def detect_gpus(self) -> list[Any]:
        gpus: list[Any] = []
        for impl in self.pm.hook.magpie_detect_gpus.get_hookimpls():
            try:
                gpus.extend(impl.function() or [])
            except Exception as exc:
                info = self.plugins[impl.plugin_name]
                warnings.warn(
                    f"magpie plugin {info.name!r} ({info.distribution}) could not list GPUs: {_short_error(exc)}",
                    PluginWarning,
                    stacklevel=2,
                )
        return gpus


@cache
def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loaded on first use."""
    return PluginManager()
