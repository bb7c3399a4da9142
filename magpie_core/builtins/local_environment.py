"""The ``local`` execution environment: a thread pool on this machine.

Each item's function usually starts its own subprocess (kernel isolation),
so threads are enough to overlap them. With more than one worker, timings of
kernels that share a device interfere; the default is one worker.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterable
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import ExecutionEnvironment


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    try:
        return fn(item)
    except Exception as exc:  # one item's failure is its result, not the run's
        return exc


class LocalEnvironment(ExecutionEnvironment):
    name = "local"
    description = "run on this machine, up to --workers at a time"

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        *,
        workers: int = 1,
        gpus_per_item: float = 0,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        items = list(items)
        results: list[Any] = [None] * len(items)
        with cf.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {pool.submit(_call, fn, item): i for i, item in enumerate(items)}
            for future in cf.as_completed(futures):
                index = futures[future]
                results[index] = future.result()
                if on_result is not None:
                    on_result(index, results[index])
        return results


@hookimpl
def magpie_register_environments(register: Callable[[Any], None]) -> None:
    register(LocalEnvironment())
