"""Load flags of ``magpie benchmark`` named and meant as in the common serving benchmark client (``bench serve``).

``--num-prompts``, ``--request-rate`` (requests/s; ``inf`` sends all at time 0), ``--burstiness``
(gamma shape; 1 is Poisson), ``--dataset-name`` / ``--dataset-path``, ``--seed``, ``--endpoint``
(an API path such as ``/v1/completions``), ``--tokenizer``, ``--percentile-metrics`` (comma list of
ttft,tpot,itl,e2el), ``--metric-percentiles`` (comma list, default 99) and ``--goodput KEY:VALUE ...``
(SLOs in milliseconds over ttft, tpot, e2el); trace replay: ``--dataset-name trace|mooncake|multi_turn``
(AIPerf's dataset type names) with ``--dataset-path`` and ``--trace-time-scale``; waiting on the server:
``--request-timeout``, ``--request-deadline``, ``--probe-timeout``, ``--stall-timeout`` (seconds; magpie's
own, docs/benchmark.md "Waiting on the server"). Each becomes a key of the
benchmark config (``load.*``, ``dataset.*``, ``slo.*``, ``tokenizer``) and wins over the YAML.
"""

from __future__ import annotations

import math
from typing import Any

import typer

from magpie_core.cli.kit import UsageError

#: ``--dataset-name`` values magpie generates or reads -> ``dataset.name``
DATASET_NAMES = {
    "random": "random",
    "sharegpt": "sharegpt",
    "custom": "jsonl",
    "jsonl": "jsonl",
    "trace": "trace",
    "mooncake": "trace",
    "mooncake_trace": "trace",  # AIPerf's --custom-dataset-type name
    "multi_turn": "trace",
}
#: ``--dataset-name`` values that also say the trace's format -> ``load.trace.format``
TRACE_FORMATS = {"mooncake": "mooncake", "mooncake_trace": "mooncake", "multi_turn": "multi_turn"}
#: ``--endpoint`` API paths -> ``load.endpoint``
ENDPOINTS = {
    "/v1/completions": "completions",
    "/v1/chat/completions": "chat",
    "completions": "completions",
    "chat": "chat",
}
PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el")
GOODPUT_METRICS = ("ttft", "tpot", "e2el")


class LoadFlags:
    num_prompts = typer.Option(None, "--num-prompts", min=1, help="requests per load point")
    request_rate = typer.Option(
        None, "--request-rate", help="requests/s; inf sends every request at time 0 (default inf)"
    )
    burstiness = typer.Option(None, "--burstiness", help="gamma shape of arrivals; 1 is Poisson, <1 burstier")
    dataset_name = typer.Option(
        None,
        "--dataset-name",
        help="random | sharegpt | custom (JSONL with 'prompt') | trace / mooncake / multi_turn (replay a trace)",
    )
    dataset_path = typer.Option(None, "--dataset-path", help="file of the sharegpt / custom dataset or the trace")
    trace_time_scale = typer.Option(
        None, "--trace-time-scale", help="trace replay: multiply timestamps and delays (0.5: twice as fast)"
    )
    seed = typer.Option(None, "--seed", help="seed of prompt sampling and arrival times (default 0)")
    endpoint = typer.Option(None, "--endpoint", help="/v1/completions (default) or /v1/chat/completions")
    tokenizer = typer.Option(None, "--tokenizer", help="tokenizer name or path (default: the model's)")
    percentile_metrics = typer.Option(
        None, "--percentile-metrics", help="metrics whose percentiles are printed, e.g. ttft,tpot,itl"
    )
    metric_percentiles = typer.Option(None, "--metric-percentiles", help="percentiles to report, e.g. 50,90,99")
    goodput = typer.Option(None, "--goodput", help="SLO KEY:VALUE in ms (ttft, tpot, e2el); repeat for several")
    request_timeout = typer.Option(
        None, "--request-timeout", help="seconds a request may wait for any byte of its answer (default 600)"
    )
    request_deadline = typer.Option(
        None, "--request-deadline", help="seconds one request may take in all, streaming included (default 3600)"
    )
    probe_timeout = typer.Option(
        None, "--probe-timeout", help="seconds for /v1/models and for a 1-token request before the load (default 30)"
    )
    stall_timeout = typer.Option(
        None, "--stall-timeout", help="stop a point when no request got a byte for this many seconds (default 120)"
    )


def _choice(flag: str, value: str | None, table: dict[str, str]) -> str | None:
    if value is None:
        return None
    if value not in table:
        raise UsageError(f"{flag} {value!r}: choose one of {', '.join(table)}")
    return table[value]


def _rate(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        rate = float(value)
    except ValueError:
        raise UsageError(f"--request-rate {value!r}: give a number of requests/s or inf") from None
    if math.isnan(rate) or rate <= 0:
        raise UsageError(f"--request-rate {value!r}: must be above 0 (inf: all at once)")
    return rate


def _csv(flag: str, value: str | None, allowed: tuple[str, ...]) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise UsageError(f"{flag} {value!r}: names must be among {', '.join(allowed)}")
    return names


def _percentiles(value: str | None) -> list[float] | None:
    if value is None:
        return None
    try:
        out = [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--metric-percentiles {value!r}: give numbers such as 50,90,99") from None
    if not out or any(not 0 < p <= 100 for p in out):
        raise UsageError(f"--metric-percentiles {value!r}: each must be in (0, 100]")
    return out


def _goodput(pairs: list[str] | None) -> dict[str, float] | None:
    if not pairs:
        return None
    slo: dict[str, float] = {}
    for pair in pairs:
        key, sep, raw = pair.partition(":")
        try:
            ms = float(raw)
        except ValueError:
            ms = math.nan
        if not sep or key not in GOODPUT_METRICS or not ms > 0:
            raise UsageError(f"--goodput {pair!r}: give KEY:VALUE with KEY in ttft, tpot, e2el and VALUE ms > 0")
        slo[f"{key}_ms"] = ms
    return slo


def _positive(flag: str, value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise UsageError(f"{flag} {value!r}: must be above 0")
    return value


def load_patch(
    *,
    num_prompts: int | None = None,
    request_rate: str | None = None,
    burstiness: float | None = None,
    dataset_name: str | None = None,
    dataset_path: str | None = None,
    seed: int | None = None,
    endpoint: str | None = None,
    tokenizer: str | None = None,
    percentile_metrics: str | None = None,
    metric_percentiles: str | None = None,
    goodput: list[str] | None = None,
    trace_time_scale: float | None = None,
    request_timeout: float | None = None,
    request_deadline: float | None = None,
    probe_timeout: float | None = None,
    stall_timeout: float | None = None,
) -> dict[str, Any]:
    """The benchmark-config keys these flags set, as a nested patch (only flags that were given)."""
    rate = _rate(request_rate)
    load = {
        "num_prompts": num_prompts,
        "request_rate": None if rate is None or math.isinf(rate) else rate,
        "burstiness": _positive("--burstiness", burstiness),
        "endpoint": _choice("--endpoint", endpoint, ENDPOINTS),
        "percentile_metrics": _csv("--percentile-metrics", percentile_metrics, PERCENTILE_METRICS),
        "metric_percentiles": _percentiles(metric_percentiles),
        "request_timeout_s": _positive("--request-timeout", request_timeout),
        "request_deadline_s": _positive("--request-deadline", request_deadline),
        "probe_timeout_s": _positive("--probe-timeout", probe_timeout),
        "stall_timeout_s": _positive("--stall-timeout", stall_timeout),
    }
    trace = {
        "format": TRACE_FORMATS.get(dataset_name or ""),
        "time_scale": _positive("--trace-time-scale", trace_time_scale),
    }
    load["trace"] = {k: v for k, v in trace.items() if v is not None} or None
    dataset = {"name": _choice("--dataset-name", dataset_name, DATASET_NAMES), "path": dataset_path, "seed": seed}
    patch: dict[str, Any] = {
        "load": {k: v for k, v in load.items() if v is not None},
        "dataset": {k: v for k, v in dataset.items() if v is not None},
        "slo": _goodput(goodput) or {},
    }
    if rate is not None and math.isinf(rate):
        patch["load"]["request_rate"] = None  # inf: unlimited, as the config's None
    if tokenizer:
        patch["tokenizer"] = tokenizer
    return {k: v for k, v in patch.items() if v}
