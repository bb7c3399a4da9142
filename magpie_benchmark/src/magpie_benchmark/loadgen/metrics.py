"""Serving metrics, defined as the common serving benchmark defines them.

For each successful request with ``n`` output tokens:

* TTFT: first choice chunk minus send time;
* E2EL: last choice chunk minus send time;
* TPOT: ``(E2EL - TTFT) / (n - 1)`` when ``n > 1`` (requests with one token
  have no TPOT; for goodput their TPOT counts as 0);
* ITL: the gaps between consecutive choice chunks, pooled over all requests.

Throughputs divide by the run's duration (first dispatch to last completion):
requests/s of completed requests, output tokens/s, and (input + output)
tokens/s. Goodput is completed requests/s meeting every given SLO
(``metric <= slo``). Statistics use numpy: mean, median, population std,
and linear-interpolation percentiles.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import numpy as np

from magpie_benchmark.loadgen.client import RequestResult

PERCENTILES = (90.0, 95.0, 99.0)


def summarize(values_s: Sequence[float], percentiles: Sequence[float] = PERCENTILES) -> dict[str, float]:
    """mean/median/std/min/max and percentiles in milliseconds (all 0 for no values)."""
    arr = np.asarray(values_s if len(values_s) else [0.0], dtype=float) * 1000.0
    out = {
        "mean_ms": float(np.mean(arr)),
        "median_ms": float(np.median(arr)),
        "std_ms": float(np.std(arr)),
        "min_ms": float(np.min(arr)),
        "max_ms": float(np.max(arr)),
    }
    for p in percentiles:
        out[f"p{p:g}_ms"] = float(np.percentile(arr, p))
    out["count"] = len(values_s)
    return out


def output_tokens(result: RequestResult, tokenizer: Any | None) -> tuple[int, str]:
    """Output tokens of a successful request and how they were counted."""
    if result.output_tokens:
        return result.output_tokens, "usage"
    if tokenizer is not None:
        return len(tokenizer.encode(result.generated_text, add_special_tokens=False)), "tokenizer"
    return max(result.chunks, 1), "chunks"


def compute_metrics(
    results: Sequence[RequestResult],
    duration_s: float,
    *,
    tokenizer: Any | None = None,
    slo_ms: dict[str, float] | None = None,
    percentiles: Sequence[float] = PERCENTILES,
) -> dict[str, Any]:
    """Aggregate metrics of one load point."""
    ttfts: list[float] = []
    tpots: list[float] = []
    all_tpots: list[float] = []
    itls: list[float] = []
    e2els: list[float] = []
    total_input = 0
    total_output = 0
    methods: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    error_examples: dict[str, str] = {}
    completed = 0
    for r in results:
        if not r.success:
            kind = r.error_kind or "error"
            errors[kind] += 1
            error_examples.setdefault(kind, (r.error or "")[:300])
            continue
        n_out, method = output_tokens(r, tokenizer)
        r.token_count_method, r.counted_output_tokens = method, n_out
        methods[method] += 1
        completed += 1
        total_input += r.prompt_len
        total_output += n_out
        tpot = 0.0
        if n_out > 1:
            tpot = (r.latency - r.ttft) / (n_out - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        ttfts.append(r.ttft)
        itls.extend(r.itl)
        e2els.append(r.latency)
    good = 0
    slo = {k: v for k, v in (slo_ms or {}).items() if v is not None}
    if slo:
        per_metric = {"ttft_ms": ttfts, "tpot_ms": all_tpots, "e2el_ms": e2els}
        columns = [(per_metric[k], v / 1000.0) for k, v in slo.items()]
        for i in range(completed):
            if all(values[i] <= limit for values, limit in columns):
                good += 1
    dur = duration_s if duration_s > 0 else float("nan")
    return {
        "completed": completed,
        "failed": len(results) - completed,
        "failure_reasons": dict(errors),
        "failure_examples": error_examples,
        "duration_s": duration_s,
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": completed / dur,
        "request_goodput": (good / dur) if slo else None,
        "output_throughput": total_output / dur,
        "total_token_throughput": (total_input + total_output) / dur,
        "token_count_methods": dict(methods),
        "ttft": summarize(ttfts, percentiles),
        "tpot": summarize(tpots, percentiles),
        "itl": summarize(itls, percentiles),
        "e2el": summarize(e2els, percentiles),
    }
