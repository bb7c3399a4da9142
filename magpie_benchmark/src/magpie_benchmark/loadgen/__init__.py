"""The engine-neutral streaming load generator behind ``magpie benchmark``.

:mod:`~magpie_benchmark.loadgen.datasets` makes requests, :mod:`~magpie_benchmark.loadgen.runner`
sends them at a rate and concurrency, :mod:`~magpie_benchmark.loadgen.metrics` turns the
per-request timings into serving metrics.
"""

from magpie_benchmark.loadgen.client import RequestResult
from magpie_benchmark.loadgen.datasets import SampleRequest, jsonl_requests, random_requests, sharegpt_requests
from magpie_benchmark.loadgen.metrics import compute_metrics, summarize
from magpie_benchmark.loadgen.runner import LoadResult, LoadSpec, arrival_offsets, run_load, run_load_async

__all__ = [
    "LoadResult",
    "LoadSpec",
    "RequestResult",
    "SampleRequest",
    "arrival_offsets",
    "compute_metrics",
    "jsonl_requests",
    "random_requests",
    "run_load",
    "run_load_async",
    "sharegpt_requests",
    "summarize",
]
