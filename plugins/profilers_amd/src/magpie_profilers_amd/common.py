"""Shared by the AMD profilers: CSV reading and grouping launches by kernel name."""

from __future__ import annotations

import csv
import io
from typing import Any


def read_csv(text: str) -> list[dict[str, str]]:
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]


def number(text: Any) -> float | None:
    try:
        return float(str(text).replace(",", "").strip())
    except (TypeError, ValueError):
        return None
