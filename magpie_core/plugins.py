"""The plugin manager: discovery, hook calls, and the registry of named components.

Plugins come from two places, as in pytest and llm: :data:`DEFAULT_PLUGINS`, the few modules that ship inside the core,
and every entry point of the ``magpie`` group (each first-party plugin is its own distribution). ``MAGPIE_PLUGINS`` (a
comma list of entry-point or distribution names; set but empty means none) restricts which entry points load, through
pluggy's own blocking.

Every hook is called through pluggy (``pm.hook.<name>(...)``). A plugin that fails to import, that implements a
``magpie_*`` function no hook knows (a misspelt hook: pluggy's ``check_pending``), or that raises inside a hook is
reported once as a warning naming its distribution and the error; it is then unregistered and everything else keeps
working.

The process-wide manager is :func:`get_plugin_manager`; code that needs another one (tests with ad-hoc plugins, an
embedding application) builds a :class:`PluginManager` and passes it, or installs it with :func:`use_plugin_manager`."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, ModuleType, TracebackType
from typing import Any

import pluggy

from magpie_core import hookspecs
from magpie_core.interfaces import component_names

ENTRY_POINT_GROUP = "magpie"
#: modules of hook specs that distributions add (``benchmark = "magpie_benchmark.hookspecs"``): their hooks, and
#: their component kinds in a ``KINDS`` dict (kind -> hook name); loaded whichever plugins ``MAGPIE_PLUGINS`` allows
HOOKSPECS_GROUP = "magpie.hookspecs"

#: Plugins that ship inside the core and always load (like pytest's and llm's default plugins).
#: ``MAGPIE_PLUGINS`` restricts them too, by their last name (``local``).
DEFAULT_PLUGINS: tuple[str, ...] = ("magpie_core.builtins.local",)

#: kind -> the hook that registers components of that kind (the core's; distributions add theirs: :meth:`add_kinds`)
KIND_HOOKS: dict[str, str] = {
    "kernel_backend": "magpie_register_kernel_backends",
    "profiler": "magpie_register_profilers",
    "trace_analyzer": "magpie_register_trace_analyzers",
    "source_finder": "magpie_register_source_finders",
    "kernel_name_parser": "magpie_register_kernel_name_parsers",
    "environment": "magpie_register_environments",
    "timer": "magpie_register_timers",
    "mcp_tool": "magpie_register_mcp_tools",
    "config_block": "magpie_register_config_blocks",
}


class PluginWarning(UserWarning):
    """A plugin could not be loaded or could not register; the rest still works."""


class PluginConflictError(RuntimeError):
    """Two plugins claim the same component name within one kind."""


class UnknownComponentError(LookupError):
    """No installed plugin provides the requested component."""


@dataclass
class PluginInfo:
    """One plugin (an entry point of the ``magpie`` group, or a default plugin) and what became of it."""

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


def allowed_names() -> set[str] | None:
    """The plugin and distribution names ``MAGPIE_PLUGINS`` allows (None: not set, everything loads)."""
    raw = os.environ.get("MAGPIE_PLUGINS")
    return None if raw is None else {part.strip() for part in raw.split(",") if part.strip()}


_ENTRY_POINTS: dict[tuple[str, ...], Any] = {}


def installed_entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of the installed distributions (``importlib.metadata``). Every group is
    read in one pass over the distributions, kept while ``sys.path`` stays the same: the ``magpie`` plugins
    and the ``magpie.commands`` of one command line cost one pass."""
    key = tuple(sys.path)
    if key not in _ENTRY_POINTS:
        _ENTRY_POINTS.clear()
        _ENTRY_POINTS[key] = importlib.metadata.entry_points()
    return list(_ENTRY_POINTS[key].select(group=group))


def _short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _core_version() -> str:
    from magpie_core import __version__

    return __version__


class PluginManager:
    """Loads plugins, calls hooks through pluggy, and holds every registered component by kind and name.

    ``entry_points``: those to load (default: the ``magpie`` group's, as ``importlib.metadata`` finds them; ``[]``
    for none). ``plugins``: extra ``(name, module_or_object)`` pairs registered in-process (a test, an embedding
    application). ``defaults``: load :data:`DEFAULT_PLUGINS`. ``lazy``: call a kind's registration hook when that
    kind is first looked up (:meth:`components`, :meth:`get`, :meth:`owner`; :attr:`plugins` collects every kind),
    so a command imports only the plugin modules that register what it uses (``magpie gap`` reads kernel-name
    parsers and config blocks, not MCP tools); a plugin failing in a kind's hook is reported when that kind is used."""

    def __init__(
        self,
        entry_points: Sequence[Any] | None = None,
        plugins: Sequence[tuple[str, ModuleType | object]] = (),
        *,
        specs: Sequence[ModuleType] | None = None,
        defaults: bool = True,
        lazy: bool = False,
    ) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.kind_hooks = dict(KIND_HOOKS)
        self._plugins: dict[str, PluginInfo] = {}
        self._components: dict[str, dict[str, Registered]] = {kind: {} for kind in KIND_HOOKS}
        self._collected: set[str] = set()  # kinds whose registration hooks were called
        self._ready: set[str] = set()  # kinds whose registration hooks have all returned
        # threads that ask for a kind at once (problems of `magpie kernelbench run`, each in a thread) wait
        # for its collection to finish instead of seeing it half done (a missing config block, say)
        self._collect_lock = threading.RLock()
        for module in specs if specs is not None else _installed_hookspecs():  # distributions' own hooks, kinds
            self.add_kinds(module)
        if defaults:
            self._load_defaults()
        found = entry_points if entry_points is not None else installed_entry_points(ENTRY_POINT_GROUP)
        self._load_entry_points(list(found))
        for name, plugin in plugins:
            self._register(plugin, PluginInfo(name, getattr(plugin, "__name__", name), "", ""))
        self._check_pending()
        if not lazy:
            self._collect_components()

    @property
    def plugins(self) -> dict[str, PluginInfo]:
        """Every plugin and what became of it, with the components of every kind collected."""
        self._collect_components()
        return self._plugins

    def add_kinds(self, specs: ModuleType) -> None:
        """A distribution's hook specs (pluggy's ``add_hookspecs``) and its component kinds (``specs.KINDS``)."""
        self.pm.add_hookspecs(specs)
        kinds = getattr(specs, "KINDS", {})
        self.kind_hooks |= kinds
        self._components |= {kind: {} for kind in kinds if kind not in self._components}

    def hook_names(self) -> list[str]:
        """Every hook a plugin may implement: the core's and those distributions added."""
        return sorted(name for name, caller in vars(self.pm.hook).items() if getattr(caller, "spec", None))

    def of_distribution(self, distribution: str) -> list[PluginInfo]:
        """The plugins of ``distribution``, whatever became of them (collects no component, unlike :attr:`plugins`)."""
        return [i for i in self._plugins.values() if i.distribution == distribution]

    def loaded_plugins(self) -> dict[str, PluginInfo]:
        """The plugins that loaded, by name (collects no component, unlike :attr:`plugins`)."""
        return {name: i for name, i in self._plugins.items() if i.status == "loaded"}

    # -- discovery -----------------------------------------------------------

    def _load_defaults(self) -> None:
        allowed = allowed_names()
        for module_name in DEFAULT_PLUGINS:
            info = PluginInfo(module_name.rsplit(".", 1)[-1], module_name, "magpie-core", _core_version())
            if allowed is not None and not {info.name, info.distribution} & allowed:
                self.pm.set_blocked(info.name)
                info.status = "disabled"
                self._plugins[info.name] = info
                continue
            self._register(importlib.import_module(module_name), info)

    def _load_entry_points(self, entry_points: list[Any]) -> None:
        allowed = allowed_names()
        for ep in sorted(entry_points, key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "unknown"
            info = PluginInfo(ep.name, ep.value, dist, ep.dist.version if ep.dist else "")
            if ep.name in self._plugins:
                other = self._plugins[ep.name].distribution
                raise PluginConflictError(f"plugin name {ep.name!r} is declared by both {other!r} and {dist!r}")
            if allowed is not None and ep.name not in allowed and dist not in allowed:
                self.pm.set_blocked(ep.name)
            if self.pm.is_blocked(ep.name):
                info.status = "disabled"
                self._plugins[ep.name] = info
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                self._plugins[ep.name] = info
                self._fail(info, exc, "failed to load")
                continue
            self._register(module, info)

    def _register(self, plugin: ModuleType | object, info: PluginInfo) -> None:
        self._plugins[info.name] = info
        try:
            self.pm.register(plugin, name=info.name)
        except Exception as exc:  # e.g. a hookimpl whose arguments the hook does not have
            self._fail(info, exc, "failed to register")
            return
        info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])

    def _check_pending(self) -> None:
        """A ``magpie_*`` function that matches no hook is a misspelt hook: fail that plugin, say which."""
        for name, plugin in list(self.pm.list_name_plugin()):
            unknown = [
                hook_name
                for hook_name in dir(plugin)
                if hook_name.startswith(f"{hookspecs.PROJECT}_")
                and self.pm.parse_hookimpl_opts(plugin, hook_name) is not None
                and getattr(getattr(self.pm.hook, hook_name, None), "spec", None) is None
            ]
            if unknown:
                info = self._plugins[name]
                error = pluggy.PluginValidationError(plugin, _unknown_hooks_message(unknown, self.hook_names()))
                self._fail(info, error, "is invalid")
                self._unregister(info)
        self.pm.check_pending()  # anything else pluggy finds wrong is a bug worth a traceback

    def _fail(self, info: PluginInfo, exc: BaseException, what: str) -> None:
        info.status = "failed"
        info.error = _short_error(exc)
        warnings.warn(
            f"magpie plugin {info.name!r} from distribution {info.distribution or 'unknown'!r} {what}: {info.error}",
            PluginWarning,
            stacklevel=2,
        )

    def _unregister(self, info: PluginInfo) -> None:
        """Forget a failed plugin and everything it registered."""
        for table in self._components.values():
            for name in [n for n, r in table.items() if r.plugin == info.name]:
                del table[name]
        info.components.clear()
        plugin = self.pm.get_plugin(info.name)
        if plugin is not None:
            self.pm.unregister(plugin)

    # -- hook calls ------------------------------------------------------------

    def call(
        self,
        hook_name: str,
        make_kwargs: Callable[[], dict[str, Any]],
        *,
        fatal: bool = True,
        only: Collection[str] | None = None,
    ) -> Any:
        """Call ``pm.hook.<hook_name>(**make_kwargs())`` so that one raising plugin fails alone; ``only``: ask just the
        plugins of these names (the others are left out as if skipped).

        The plugin whose implementation raised is found in the traceback. With ``fatal`` it is marked failed and
        unregistered (a plugin that cannot register is not half-installed); without, it is only warned about and skipped
        for this call. The call is then repeated, with fresh arguments, without it. Errors outside any plugin
        propagate."""
        skipped = [p for name, p in self.pm.list_name_plugin() if only is not None and name not in only]
        while True:
            caller = getattr(self.pm.hook, hook_name)
            if skipped:
                caller = self.pm.subset_hook_caller(hook_name, remove_plugins=skipped)
            try:
                return caller(**make_kwargs())
            except PluginConflictError:
                raise
            except Exception as exc:
                culprit = self._plugin_in_traceback(hook_name, exc.__traceback__)
                if culprit is None:
                    raise
                info = self._plugins[culprit]
                if fatal:
                    self._fail(info, exc, f"failed in {hook_name}")
                    self._unregister(info)
                else:
                    self._warn(info, exc, f"failed in {hook_name}")
                    skipped.append(self.pm.get_plugin(culprit))

    def _warn(self, info: PluginInfo, exc: BaseException, what: str) -> None:
        warnings.warn(
            f"magpie plugin {info.name!r} ({info.distribution or 'unknown'}) {what}: {_short_error(exc)}",
            PluginWarning,
            stacklevel=3,
        )

    def _impl_codes(self, hook_name: str) -> dict[CodeType, str]:
        caller = getattr(self.pm.hook, hook_name)
        return {impl.function.__code__: impl.plugin_name for impl in caller.get_hookimpls()}

    def _plugin_in_traceback(self, hook_name: str, tb: TracebackType | None) -> str | None:
        codes = self._impl_codes(hook_name)
        culprit = None
        while tb is not None:  # the innermost hook implementation on the way down raised
            culprit = codes.get(tb.tb_frame.f_code, culprit)
            tb = tb.tb_next
        return culprit

    # -- registration ----------------------------------------------------------

    def _collect_components(self) -> None:
        """Call every registration hook (each kind in turn, :meth:`_collect_kind`)."""
        for kind in self.kind_hooks:
            self._ensure(kind)

    def _ensure(self, kind: str) -> None:
        """Collect the components of ``kind`` unless done already."""
        if kind in self._ready or kind not in self.kind_hooks:
            return
        with self._collect_lock:
            if kind in self._collected:  # done meanwhile, or a hook of this thread asking for its own kind
                return
            self._collected.add(kind)
            self._collect_kind(kind)
            self._ready.add(kind)

    def _collect_kind(self, kind: str) -> None:
        """Call the registration hook of ``kind`` once per plugin, so each component is credited to its plugin: each
        call still goes through pluggy (a caller restricted to that plugin); a plugin that raises in it is failed and
        everything it registered is forgotten."""
        hook_name = self.kind_hooks[kind]
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            info = self._plugins[impl.plugin_name]
            if info.status != "loaded":
                continue
            staged: list[Any] = []
            try:
                self.hook_of(info.name, hook_name)(register=staged.append)
                for component in staged:
                    self._add(kind, component, info)
            except PluginConflictError:
                raise
            except Exception as exc:
                self._fail(info, exc, f"failed in {hook_name}")
                self._unregister(info)

    def hook_of(self, plugin_name: str, hook_name: str) -> Any:
        """The pluggy caller of ``hook_name`` restricted to one plugin."""
        others = [p for name, p in self.pm.list_name_plugin() if name != plugin_name]
        return self.pm.subset_hook_caller(hook_name, remove_plugins=others)

    def _add(self, kind: str, component: Any, info: PluginInfo) -> None:
        if info.status != "loaded":
            return
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

    def credit(self, kind: str, name: str, module: str) -> None:
        """Show ``name`` under the plugin whose package defines ``module`` (for things not in the registry,
        such as commands)."""
        package = module.split(".", 1)[0]
        for info in self._plugins.values():
            if info.status == "loaded" and info.module.split(".", 1)[0].split(":", 1)[0] == package:
                info.components.setdefault(kind, []).append(name)
                return

    # -- lookup ----------------------------------------------------------------

    def components(self, kind: str) -> dict[str, Any]:
        """Every component of ``kind``, by name."""
        self._ensure(kind)
        return {name: reg.component for name, reg in self._components.get(kind, {}).items()}

    def get(self, kind: str, name: str) -> Any:
        """The component ``name`` of ``kind``, or an error that says what is installed."""
        self._ensure(kind)
        table = self._components.get(kind, {})  # a kind no installed distribution added: none of it
        if name in table:
            return table[name].component
        known = ", ".join(sorted(table)) or "none"
        near = difflib.get_close_matches(str(name), list(table), n=1, cutoff=0.6)
        raise UnknownComponentError(
            f"no {kind.replace('_', ' ')} named {name!r} is installed"
            + (f" (did you mean {near[0]!r}?)" if near else "")
            + f" (installed: {known}); "
            "install the plugin that provides it, or check MAGPIE_PLUGINS"
        )

    def owner(self, kind: str, name: str) -> Registered:
        self._ensure(kind)
        return self._components[kind][name]

    def detect_gpus(self) -> list[Any]:
        """Every GPU the vendor plugins see; a plugin whose detection fails is warned about and skipped."""
        found = self.call("magpie_detect_gpus", dict, fatal=False)
        return [gpu for gpus in reversed(found) for gpu in (gpus or [])]  # pluggy calls the last-registered first

    def first(self, hook_name: str, **kwargs: Any) -> Any:
        """The first answer of a ``firstresult`` hook (vendor knowledge the core asks for), or None."""
        return self.call(hook_name, lambda: dict(kwargs), fatal=False)


def _installed_hookspecs() -> list[ModuleType]:
    """The hook-spec modules installed distributions declare (:data:`HOOKSPECS_GROUP`); one that fails to import is
    warned about, and its hooks stay unknown."""
    found = []
    for ep in sorted(installed_entry_points(HOOKSPECS_GROUP), key=lambda e: e.name):
        try:
            found.append(ep.load())
        except Exception as exc:  # a broken distribution must not take the others down
            warnings.warn(f"hook specs {ep.value!r} failed to load: {_short_error(exc)}", PluginWarning, stacklevel=2)
    return found


def _unknown_hooks_message(names: list[str], hooks: list[str]) -> str:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, hooks, n=1)
        parts.append(f"{name!r} is not a magpie hook" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return "; ".join(parts)


_DEFAULT: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loaded on first use."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PluginManager(lazy=True)
    return _DEFAULT


@contextmanager
def use_plugin_manager(manager: PluginManager) -> Iterator[PluginManager]:
    """Make ``manager`` the process-wide one for the duration (tests, embedding applications)."""
    global _DEFAULT
    previous, _DEFAULT = _DEFAULT, manager
    try:
        yield manager
    finally:
        _DEFAULT = previous
