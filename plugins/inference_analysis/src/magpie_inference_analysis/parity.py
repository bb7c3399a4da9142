"""Row-by-row comparison of magpie's ``unified_perf_summary.csv`` with TraceLens's.

Rows are matched on (op name, Input Dims, Input type, Input Strides, Concrete Inputs); a TraceLens row left
over then matches a left-over magpie row of the same op name and Input Dims. A matched row agrees on a
metric (GFLOPS, Data Moved (MB), Kernel Time (µs)_sum) when both are empty or within ``tol`` relative; the
``op category`` of matched rows is compared too (reported apart).
"""

from __future__ import annotations

import ast
import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRICS = ("GFLOPS", "Data Moved (MB)", "Kernel Time (µs)_sum")
KEY_COLUMNS = ("name", "Input Dims", "Input type", "Input Strides", "Concrete Inputs")


@dataclass
class Parity:
    reference_rows: int = 0
    matched: int = 0
    within: int = 0  # matched rows whose every metric agrees
    unmatched: list[dict[str, str]] = field(default_factory=list)  # reference rows with no magpie row
    differing: list[tuple[dict[str, str], dict[str, str], list[str]]] = field(default_factory=list)
    category_differs: list[tuple[str, str, str]] = field(default_factory=list)  # (op, TraceLens's, ours)

    @property
    def matched_pct(self) -> float:
        return 100.0 * self.matched / self.reference_rows if self.reference_rows else 100.0

    @property
    def within_pct(self) -> float:
        return 100.0 * self.within / self.matched if self.matched else 100.0

    def summary(self) -> str:
        return (
            f"{self.matched}/{self.reference_rows} rows matched ({self.matched_pct:.1f} %), "
            f"{self.within}/{self.matched} within tolerance ({self.within_pct:.1f} %)"
        )


def read_rows(path: Path) -> list[dict[str, str]]:
    with Path(path).open(newline="") as f:
        return list(csv.DictReader(f))


def _norm(text: str | None) -> Any:
    if not text:
        return ()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _key(row: dict[str, str], cols: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row.get("name", "") if c == "name" else repr(_norm(row.get(c))) for c in cols)


def _num(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def agrees(a: str | None, b: str | None, tol: float) -> bool:
    x, y = _num(a), _num(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= tol * max(abs(x), abs(y)) or abs(x - y) < 1e-12


def compare(ours: list[dict[str, str]], ref: list[dict[str, str]], tol: float = 0.01) -> Parity:
    """Match every reference row with one of ``ours`` and check the metrics."""
    res = Parity(reference_rows=len(ref))
    pairs: list[tuple[dict[str, str], dict[str, str]]] = []
    left = list(ref)
    for cols in (KEY_COLUMNS, ("name", "Input Dims")):
        pool: dict[tuple[Any, ...], list[dict[str, str]]] = {}
        taken = {id(p[1]) for p in pairs}
        for r in ours:
            if id(r) not in taken:
                pool.setdefault(_key(r, cols), []).append(r)
        still = []
        for r in left:
            cand = pool.get(_key(r, cols))
            if cand:
                pairs.append((r, cand.pop(0)))
            else:
                still.append(r)
        left = still
    res.unmatched = left
    res.matched = len(pairs)
    for r, o in pairs:
        if "op category" in r and r["op category"] != o.get("op category"):
            res.category_differs.append((r["name"], r["op category"], o.get("op category", "")))
        bad = [m for m in METRICS if not agrees(o.get(m), r.get(m), tol)]
        if bad:
            res.differing.append((r, o, bad))
        else:
            res.within += 1
    return res
