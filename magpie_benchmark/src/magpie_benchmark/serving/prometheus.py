"""Read counters from a server's Prometheus text exposition (``GET /metrics``), engine-neutral.

A framework plugin names the counters (``magpie_benchmark.interfaces.ServingFramework.prefix_cache_counters``);
this module only fetches the page and sums a counter's samples over their labels (one per engine or
model). A counter ``name`` is also found under ``name_total``, the suffix the Python client appends.
"""

from __future__ import annotations

import math
import re

import httpx

#: one sample line: ``name{labels} value [timestamp]`` (labels optional; comments do not match)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{.*\})?\s+(\S+)")


def fetch(url: str, timeout_s: float = 10.0) -> str | None:
    """The page at ``url``; None when the server has none (or does not answer in time)."""
    try:
        with httpx.Client(timeout=timeout_s) as client:
            resp = client.get(url)
    except httpx.HTTPError:
        return None
    return resp.text if resp.status_code == 200 else None


def counter_sum(text: str, name: str) -> float | None:
    """The sum of every sample of counter ``name`` (or ``name_total``); None when the page has none."""
    names = {name, f"{name}_total"}
    total, found = 0.0, False
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or m.group(1) not in names:
            continue
        try:
            value = float(m.group(2))
        except ValueError:
            continue
        if math.isfinite(value):
            total += value
            found = True
    return total if found else None
