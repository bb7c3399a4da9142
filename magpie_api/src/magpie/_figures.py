"""The figures of a run's report.html, as objects a notebook shows.

They are not redrawn here: the report plugin and every plugin that contributes sections build them through the
core's section hook (:func:`magpie_core.report_pages.collect`, the call ``report.html`` is made from), so a
notebook shows exactly the page's figures. Each is a plotly figure spec (``data`` and ``layout``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["Figure", "collect_figures", "figure_name"]


@dataclass(frozen=True)
class Figure:
    """One report figure: its ``name`` (see :func:`figure_name`), title and plotly spec.

    In Jupyter it shows as a plotly figure (the ``application/vnd.plotly.v1+json`` output JupyterLab and VS Code
    draw), with an HTML fallback that loads plotly.js from its CDN; :meth:`to_plotly` gives a
    ``plotly.graph_objects.Figure`` to restyle or save.
    """

    name: str
    title: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]
    note: str = ""
    section: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The plotly spec: ``{"data": [...], "layout": {...}}``."""
        return {"data": self.data, "layout": self.layout}

    def to_plotly(self) -> go.Figure:
        import plotly.graph_objects as go

        return go.Figure(self.to_dict())

    def to_html(self, include_plotlyjs: bool | str = "cdn") -> str:
        """An HTML fragment that draws the figure (``include_plotlyjs=True`` inlines plotly.js: no network)."""
        import plotly.io as pio

        return pio.to_html(self.to_plotly(), include_plotlyjs=include_plotlyjs, full_html=False)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {
            "application/vnd.plotly.v1+json": self.to_dict(),
            "text/html": self.to_html(),
            "text/plain": repr(self),
        }

    def __repr__(self) -> str:
        return f"<magpie.Figure {self.name!r}: {self.title}>"


def figure_name(title: str) -> str:
    """A figure's name: its title in lower-case words joined by ``_``, numbers on their own left out, so that a
    name does not change with the data ("top 20 kernels by total time" -> ``top_kernels_by_total_time``,
    "roofline: decode_only on H200" -> ``roofline_decode_only_on_h200``)."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"\b\d+\b", " ", title.lower()))
    return "_".join(words) or "figure"


def collect_figures(kind: str, report: dict[str, Any], workspace: Path | None) -> list[Figure]:
    """Every figure the installed plugins draw for this report, in page order (empty without a report plugin)."""
    from magpie_core.report_pages import ReportPage, collect, renderer_installed

    if not renderer_installed():
        return []
    page = ReportPage(kind=kind, report=report, workspace=workspace, output=None)  # no output: nothing is written
    figures: list[Figure] = []
    for section in collect(page):
        for item in getattr(section, "items", []):
            # the kit's Figure (magpie_report.kit), read by its fields: this package does not import the plugin
            if hasattr(item, "data") and hasattr(item, "layout"):
                title = str(item.title or section.title)
                figures.append(
                    Figure(figure_name(title), title, item.data, item.layout, item.note or "", str(section.title))
                )
    return figures
