"""From a run's report (or several) to a written page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magpie_report.kit import Section
from magpie_report.render import RunBlock, write_page

TITLES = {
    "analyze": "magpie analyze",
    "compare": "magpie compare",
    "benchmark": "magpie benchmark",
    "gap": "magpie gap analysis",
    "inference": "magpie inference analysis",
}


def flatten(results: list[Any]) -> list[Section]:
    """Sections from hook results (a section, a list of them, or None per plugin)."""
    out: list[Section] = []
    for r in results:
        for s in r if isinstance(r, list) else [r]:
            if isinstance(s, Section):
                out.append(s)
    return out


def subtitle(page: Any) -> str:
    where = str(page.workspace) if page.workspace is not None else ""
    label = page.report.get("framework") or page.report.get("baseline_id") or ""
    return " · ".join(x for x in (str(label), where) if x)


def write_single(page: Any, results: list[Any]) -> Path:
    title = TITLES.get(page.kind, f"magpie {page.kind}")
    return write_page(Path(page.output), title, subtitle(page), [RunBlock(title, subtitle(page), flatten(results))])
