"""Writing the page: one HTML file with plotly.js embedded once, the figure specs as JSON, and print styles.

No network: the only script is plotly.js, read from the installed ``plotly`` package and inlined.
``window.magpieReport`` tells a browser (and the tests) how many figures were drawn and which failed.
"""

from __future__ import annotations

import datetime as dt
import html
import importlib.util
import json
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from magpie_report.kit import Figure, Html, Section, Table

CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#dde1e8; --good:#1a9850; --bad:#d73027; --warn:#f39c12; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif;
       color: var(--fg); margin: 0; background: #f6f7f9; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
header.top { background: #1d2330; color: #fff; padding: 14px 24px; }
header.top h1 { margin: 0; font-size: 20px; }
header.top .sub { color: #c5cbd6; font-size: 12px; word-break: break-all; }
nav.toc { font-size: 13px; margin: 10px 0 6px; } nav.toc a { margin-right: 14px; color: #2c5d9e; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
section h2 { font-size: 17px; margin: 2px 0 8px; } section h3 { font-size: 14px; margin: 12px 0 4px; }
h2.run { margin: 28px 0 0; font-size: 19px; border-bottom: 2px solid #1d2330; }
.summary, .note, .detail { color: var(--muted); font-size: 12.5px; }
.banner { padding: 10px 14px; border-radius: 5px; font-weight: 600; font-size: 15px; margin: 4px 0 10px;
          background: #eef1f5; border-left: 6px solid #7f7f7f; }
.banner.good { background: #e8f5ec; border-color: var(--good); }
.banner.bad { background: #fbe9e7; border-color: var(--bad); }
.banner.warn { background: #fff4e0; border-color: var(--warn); }
.metrics { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0; }
.metric { border: 1px solid var(--line); border-radius: 5px; padding: 6px 10px; min-width: 120px; }
.metric .label { color: var(--muted); font-size: 11.5px; } .metric .value { font-size: 16px; font-weight: 600; }
.fig { width: 100%; min-height: 120px; }
.tablewrap { overflow-x: auto; } table { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 8px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.good td:first-child { border-left: 4px solid var(--good); }
tr.bad td:first-child { border-left: 4px solid var(--bad); }
tr.warn td:first-child { border-left: 4px solid var(--warn); }
td { max-width: 560px; word-break: break-word; } ul.bad li { color: var(--bad); }
@media print {
  body { background: #fff; } header.top { background: #fff; color: #000; border-bottom: 2px solid #000; }
  header.top .sub { color: #333; } nav.toc, .modebar-container { display: none !important; }
  section { break-inside: avoid; border: none; padding: 4px 0; } .fig { break-inside: avoid; }
  main { max-width: none; padding: 0; } .tablewrap { overflow: visible; }
  table { font-size: 9.5px; } td { word-break: normal; overflow-wrap: anywhere; } th, td { padding: 2px 4px; }
}
"""

SCRIPT = """
(function () {
  var state = window.magpieReport = {figures: 0, drawn: 0, failed: [], done: false};
  var figs = Array.prototype.slice.call(document.querySelectorAll('div.fig'));
  state.figures = figs.length;
  var config = {responsive: true, displaylogo: false, scrollZoom: false,
                modeBarButtonsToRemove: ['select2d', 'lasso2d']};
  var jobs = figs.map(function (div) {
    var spec = JSON.parse(document.getElementById(div.id + '-spec').textContent);
    return Plotly.newPlot(div, spec.data, spec.layout, config)
      .then(function () { state.drawn += 1; })
      .catch(function (err) { state.failed.push(div.id + ': ' + err); console.error(err); });
  });
  Promise.all(jobs).then(function () { state.done = true; });
  window.addEventListener('beforeprint', function () {
    figs.forEach(function (d) { Plotly.relayout(d, {width: 680}); });
  });
  window.addEventListener('afterprint', function () {
    figs.forEach(function (d) { Plotly.relayout(d, {width: null, autosize: true}); });
  });
})();
"""


def plotly_js() -> str:
    """plotly.js as the installed ``plotly`` package ships it (read, not imported: the page needs only the file)."""
    return _plotly_js_path().read_text(encoding="utf-8")


def _plotly_js_path() -> Path:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly package is not installed (pip install plotly)")
    return Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"


def _plotly_js_utf8() -> bytes:
    """The bytes :func:`plotly_js` would encode back: as read, with the line ends text mode would translate."""
    data = _plotly_js_path().read_bytes()
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _write_plotly_js(out: BinaryIO) -> None:
    """Write the bytes :func:`_plotly_js_utf8` returns, from a memory map of the file when it has no ``\\r``: not
    read into a 5 MB bytes object first (~2.5 ms of every page written)."""
    with _plotly_js_path().open("rb") as src:
        try:
            mapped = mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # an empty file, or a file system that cannot map it
            mapped = None
        if mapped is not None:
            with mapped:
                if mapped.find(b"\r") == -1:
                    out.write(mapped)
                    return
    out.write(_plotly_js_utf8())


def _json(data: object) -> str:
    """JSON that is safe inside a <script> element."""
    text = json.dumps(data, allow_nan=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _cell(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:,.3f}" if abs(value) < 1e6 else f"{value:,.0f}"
        return f"<td class='num'>{text}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td class='num'>{value:,}</td>"
    return f"<td>{html.escape('' if value is None else str(value))}</td>"


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = []
    for i, row in enumerate(t.rows):
        tone = t.tones[i] if i < len(t.tones) and t.tones[i] else ""
        body.append(f"<tr class='{tone}'>" + "".join(_cell(v) for v in row) + "</tr>")
    title = f"<h3>{html.escape(t.title)}</h3>" if t.title else ""
    note = f"<div class='note'>{html.escape(t.note)}</div>" if t.note else ""
    return f"{title}<div class='tablewrap'><table><tr>{head}</tr>{''.join(body)}</table></div>{note}"


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"fig{self.n}"


def _figure(f: Figure, ids: _Counter) -> str:
    fid = ids.next()
    marks = "" if f.marks is None else f" data-marks='{f.marks}'"
    note = f"<div class='note'>{html.escape(f.note)}</div>" if f.note else ""
    spec = _json({"data": f.data, "layout": f.layout})
    return (
        f"<div class='fig' id='{fid}' data-traces='{len(f.data)}'{marks} data-title='{html.escape(f.title)}'></div>"
        f"<script type='application/json' id='{fid}-spec'>{spec}</script>{note}"
    )


def _item(item: Figure | Table | Html, ids: _Counter) -> str:
    if isinstance(item, Figure):
        return _figure(item, ids)
    if isinstance(item, Table):
        return _table(item)
    return item.markup


def _section(s: Section, ids: _Counter, anchor: str) -> str:
    summary = f"<div class='summary'>{html.escape(s.summary)}</div>" if s.summary else ""
    body = "".join(_item(i, ids) for i in s.items)
    return f"<section id='{anchor}'><h2>{html.escape(s.title)}</h2>{summary}{body}</section>"


@dataclass
class RunBlock:
    """One run's part of a page: a heading (several runs on one page) and its sections."""

    heading: str
    subtitle: str
    sections: list[Section]


def page_html(title: str, subtitle: str, blocks: Sequence[RunBlock]) -> str:
    """The whole page."""
    head, tail = _page_around_plotly(title, subtitle, blocks)
    return head + plotly_js() + tail


def _page_around_plotly(title: str, subtitle: str, blocks: Sequence[RunBlock]) -> tuple[str, str]:
    """The page before and after the plotly.js text (most of the page's bytes)."""
    from magpie_core import __version__

    ids = _Counter()
    toc, body = [], []
    for b, block in enumerate(blocks):
        if len(blocks) > 1:
            body.append(f"<h2 class='run' id='run{b}'>{html.escape(block.heading)}</h2>")
            body.append(f"<div class='summary'>{html.escape(block.subtitle)}</div>")
        for i, s in enumerate(block.sections):
            anchor = f"s{b}-{i}"
            toc.append(f"<a href='#{anchor}'>{html.escape(s.title)}</a>")
            body.append(_section(s, ids, anchor))
    if not body:
        body.append(
            "<section><h2>Nothing to show</h2><p>No installed plugin drew a section for this run.</p></section>"
        )
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header class='top'><h1>{html.escape(title)}</h1><div class='sub'>{html.escape(subtitle)} · "
        f"magpie {html.escape(__version__)} · {stamp}</div></header><main>"
        f"<nav class='toc'>{''.join(toc)}</nav>{''.join(body)}</main><script>",
        f"</script><script>{SCRIPT}</script></body></html>\n",
    )


def write_page(path: Path, title: str, subtitle: str, blocks: Sequence[RunBlock]) -> Path:
    """Write the page atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if os.linesep == "\n":
        # plotly.js (~5 MB, not ASCII) goes from file to file as bytes, written in place between the page's head
        # and tail: decoding it, copying it into the page string (or joining the three) and encoding it again
        # cost a `magpie gap` run ~40 ms; the bytes written are the same
        head, tail = _page_around_plotly(title, subtitle, blocks)
        with tmp.open("wb") as out:
            out.write(head.encode())
            _write_plotly_js(out)
            out.write(tail.encode())
    else:  # text mode writes other line ends there
        tmp.write_text(page_html(title, subtitle, blocks), encoding="utf-8")
    tmp.replace(path)
    return path
