"""The core's call point for ``report.html``: ask the installed plugins to render the report of a run.

The core draws nothing and imports no plotting library. A report plugin (``magpie-report``)
implements :func:`~magpie_core.hookspecs.magpie_report_sections` as a pluggy wrapper: it puts its
section/figure helper on ``page.kit``, lets every plugin contribute sections for the modes it
knows, and writes the page to ``page.output``. With no such plugin installed nothing happens."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_core.plugins import PluginManager, get_plugin_manager

HOOK = "magpie_report_sections"
REPORT_FILE = "report.html"

log = logging.getLogger("magpie.report")


@dataclass
class ReportPage:
    """One run's report, as the section hook sees it."""

    kind: str
    report: dict[str, Any]
    workspace: Path | None = None
    #: where the page goes (None: only collect sections, e.g. for a page of several runs)
    output: Path | None = None
    #: the report plugin's helper (set by it before the other plugins are asked)
    kit: Any = None
    #: set by the report plugin once the page is written
    written: Path | None = None
    #: the run this one is compared with (``magpie report A B``: A for B), for before/after sections
    before: ReportPage | None = None
    notes: list[str] = field(default_factory=list)


def renderer_installed(manager: PluginManager | None = None) -> bool:
    """Whether a loaded plugin renders report pages (implements the section hook as a wrapper)."""
    manager = manager or get_plugin_manager()
    return any(impl.wrapper or impl.hookwrapper for impl in getattr(manager.pm.hook, HOOK).get_hookimpls())


def collect(page: ReportPage, manager: PluginManager | None = None) -> list[Any]:
    """Every section the plugins contribute for ``page`` (a plugin that raises is warned about and skipped)."""
    manager = manager or get_plugin_manager()
    results = manager.call(HOOK, lambda: {"page": page}, fatal=False)
    return [s for r in reversed(results or []) for s in (r if isinstance(r, list) else [r]) if s is not None]


def write_report_html(kind: str, report: Any, workspace: Path | str | None, output: Path | None = None) -> Path | None:
    """Write ``report.html`` for one run into its workspace (or ``output``); the path, or None when no report
    plugin is installed or rendering failed (logged: a report page never costs a run its results)."""
    manager = get_plugin_manager()
    if not renderer_installed(manager):
        return None
    data = report.model_dump(mode="json") if hasattr(report, "model_dump") else dict(report)
    folder = Path(workspace) if workspace is not None else None
    target = output or (folder / REPORT_FILE if folder is not None else None)
    if target is None:
        return None
    page = ReportPage(kind=kind, report=data, workspace=folder, output=target)
    try:
        collect(page, manager)
    except Exception as exc:  # a broken renderer must not lose what was measured
        log.warning("report.html not written: %s: %s", type(exc).__name__, exc)
        return None
    return page.written
