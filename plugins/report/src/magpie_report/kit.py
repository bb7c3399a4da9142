"""The section and figure helper handed to every plugin through ``page.kit``.

Figures are plotly figure specs (``data`` traces and a ``layout``, plotly's own JSON schema), drawn
by plotly.js in the page; tables and banners are plain HTML. Plugins build their sections with
these pieces only, so every report looks and prints the same.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: verdict and status colours, shared by every section (colour-blind safe pairs)
TONES = {
    "FASTER": "#1a9850",
    "SLOWER": "#d73027",
    "SAME": "#7f7f7f",
    "UNSTABLE": "#f39c12",
    "BASELINE": "#2c7fb8",
    "passed": "#1a9850",
    "failed": "#d73027",
    "error": "#d73027",
    "not_run": "#f39c12",
    "skipped": "#7f7f7f",
    "compute": "#d95f02",
    "memory": "#1b9e77",
}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


@dataclass
class Figure:
    """A plotly figure: ``data`` (traces) and ``layout``; ``marks`` is how many marks it should show."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]
    title: str = ""
    note: str = ""
    #: how many point marks (bars, markers) plotly.js should draw: the browser tests count them
    marks: int | None = None


def expected_points(traces: list[dict[str, Any]]) -> int | None:
    """Bars and markers the traces draw (plotly's ``.point`` elements); None when that is not countable."""
    total = 0
    for t in traces:
        kind, mode = t.get("type", "scatter"), t.get("mode", "markers")
        if kind == "bar":
            total += sum(1 for v in t.get("x" if t.get("orientation") == "h" else "y") or [] if v is not None)
        elif kind == "scatter" and "markers" in mode:
            total += sum(
                1 for x, y in zip(t.get("x") or [], t.get("y") or [], strict=False) if x is not None and y is not None
            )
        elif kind == "box":
            if t.get("boxpoints") != "all":
                return None
            total += len(t.get("x") or t.get("y") or [])
        elif kind not in ("heatmap", "scatter"):
            return None
    return total


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    title: str = ""
    tones: list[str | None] = field(default_factory=list)
    note: str = ""


@dataclass
class Html:
    """A piece of trusted markup made by the kit (banner, metric cards, paragraph)."""

    markup: str


Item = Figure | Table | Html


@dataclass
class Section:
    title: str
    items: list[Item]
    summary: str = ""


class Kit:
    """What a plugin builds report sections with."""

    tones = TONES
    palette = PALETTE

    def __init__(self) -> None:
        self._colors: dict[str, str] = {}

    def color(self, key: str) -> str:
        """The same colour for the same key (a kernel category, a phase) in every figure of the page."""
        if key not in self._colors:
            self._colors[key] = PALETTE[len(self._colors) % len(PALETTE)]
        return self._colors[key]

    def section(self, title: str, *items: Item | None, summary: str = "") -> Section:
        return Section(title, [i for i in items if i is not None], summary)

    def figure(
        self,
        data: list[dict[str, Any]],
        layout: dict[str, Any] | None = None,
        *,
        title: str = "",
        note: str = "",
        height: int = 380,
        marks: int | None = None,
    ) -> Figure:
        base: dict[str, Any] = {"height": height, "margin": {"l": 60, "r": 20, "t": 40 if title else 20, "b": 50}}
        if title:
            base["title"] = {"text": title, "x": 0, "font": {"size": 15}}
        base.update(layout or {})
        traces = [clean(t) for t in data]
        return Figure(traces, clean(base), title, note, expected_points(traces) if marks is None else marks)

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        title: str = "",
        tones: Sequence[str | None] | None = None,
        note: str = "",
    ) -> Table:
        return Table(list(columns), [list(r) for r in rows], title, list(tones or []), note)

    def banner(self, text: str, tone: str = "neutral", detail: str = "") -> Html:
        extra = f"<div class='detail'>{html.escape(detail)}</div>" if detail else ""
        return Html(f"<div class='banner {html.escape(tone)}'>{html.escape(text)}{extra}</div>")

    def metrics(self, items: Iterable[tuple[str, Any]]) -> Html:
        cards = "".join(
            f"<div class='metric'><div class='label'>{html.escape(k)}</div><div class='value'>{html.escape(str(v))}"
            "</div></div>"
            for k, v in items
            if v not in (None, "")
        )
        return Html(f"<div class='metrics'>{cards}</div>")

    def text(self, text: str) -> Html:
        return Html(f"<p>{html.escape(text)}</p>")

    def bullets(self, lines: Iterable[str], tone: str = "") -> Html | None:
        items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
        return Html(f"<ul class='{html.escape(tone)}'>{items}</ul>") if items else None

    def before_after(
        self,
        before: dict[str, float],
        after: dict[str, float],
        *,
        title: str,
        unit: str = "ms",
        top: int = 20,
        labels: dict[str, str] | None = None,
        what: str = "kernel",
    ) -> tuple[Figure, Table]:
        """Two runs' totals per name (a kernel, an op): grouped bars before/after, largest changes first (a name
        missing from one run counts as 0 there), and the same rows as a table with the change."""
        names = sorted(set(before) | set(after), key=lambda n: -abs(after.get(n, 0.0) - before.get(n, 0.0)))[:top]
        ta, tb = [before.get(n, 0.0) for n in names], [after.get(n, 0.0) for n in names]
        ticks = [f"{i + 1}. {self.short((labels or {}).get(n, n), 48)}" for i, n in enumerate(names)]
        data = [
            {
                "type": "bar",
                "orientation": "h",
                "name": run,
                "y": ticks,
                "x": xs,
                "customdata": names,
                "hovertemplate": f"%{{customdata}}<br>%{{x:.3f}} {unit}<extra>{run}</extra>",
            }
            for run, xs in (("before", ta), ("after", tb))
        ]
        layout = {
            "barmode": "group",
            "yaxis": {"autorange": "reversed", "automargin": True},
            "xaxis": {"title": {"text": f"total time ({unit})"}},
        }
        fig = self.figure(data, layout, title=title, height=160 + 40 * len(names))
        rows = [[self.short(n, 70), x, y, y - x] for n, x, y in zip(names, ta, tb, strict=True)]
        return fig, self.table([what, f"before {unit}", f"after {unit}", f"change {unit}"], rows)

    # -- small shared calculations -----------------------------------------------------------

    @staticmethod
    def tone(key: str | None, default: str = "#1f77b4") -> str:
        return TONES.get(key or "", default)

    @staticmethod
    def ecdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
        """The empirical CDF of ``values``: sorted values and their cumulative share in percent."""
        xs = sorted(v for v in values if v is not None and math.isfinite(v))
        n = len(xs)
        return xs, [100.0 * (i + 1) / n for i in range(n)]

    @staticmethod
    def short(name: str, width: int = 60) -> str:
        return name if len(name) <= width else name[: width - 1] + "…"

    @staticmethod
    def resolve(path: str | None, workspace: Path | None) -> Path | None:
        """A file a report names: where it was written, else the same name in ``workspace`` (a moved folder)."""
        if not path:
            return None
        p = Path(path)
        if p.is_file():
            return p
        if workspace is not None:
            for candidate in (workspace / p.name, *workspace.glob(f"*/{p.name}")):
                if candidate.is_file():
                    return candidate
        return None


#: keys whose strings are our own plotly markup (``<br>``, ``%{x}``), not data
MARKUP_KEYS = frozenset({"hovertemplate", "texttemplate"})


def clean(value: Any, key: str = "") -> Any:
    """JSON-safe: NaN and infinities become None (plotly draws gaps), tuples become lists, and every string
    from data is entity-escaped: plotly.js reads tags in labels and hover text, so a kernel named
    ``f<int>`` or ``<img onerror=...>`` must reach it as text (it shows ``&lt;`` as ``<``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value if key in MARKUP_KEYS else html.escape(value, quote=False)
    if isinstance(value, dict):
        return {str(k): clean(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v, key) for v in value]
    return value
