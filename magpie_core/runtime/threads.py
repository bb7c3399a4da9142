"""A thread pool that keeps input order, isolates failures and reports each item as it ends: for execution environments
whose items each start their own process (local subprocess workers, ``docker run``), where threads are enough."""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Sequence
from typing import Any


def _isolated(call: Callable[[Any], Any], item: Any) -> Any:
    try:
        return call(item)
    except Exception as exc:  # one item's failure is its result, not the run's
        return exc


def map_in_threads(
    call: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    workers: int,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``call`` on each item, ``workers`` at a time; an exception is that item's result.

    Interrupted (``KeyboardInterrupt`` in the waiting thread), items not started yet are cancelled and
    the interrupt goes on at once: the running items end when their processes are stopped."""
    results: list[Any] = [None] * len(items)
    pool = cf.ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = {pool.submit(_isolated, call, item): i for i, item in enumerate(items)}
        for future in cf.as_completed(futures):
            index = futures[future]
            results[index] = future.result()
            if on_result is not None:
                on_result(index, results[index])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results
