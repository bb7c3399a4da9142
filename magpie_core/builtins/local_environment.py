"""The ``local`` execution environment: a thread pool on this machine.

Each item's function usually starts its own subprocess (kernel isolation),
so threads are enough to overlap them.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterable
from typing import Any

from magpie_core import hookimpl
from magpie_core.interfaces import ExecutionEnvironment


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
    ) -> list[Any]:
        items = list(items)
        if workers <= 1 or len(items) <= 1:
            return [fn(item) for item in items]
        with cf.ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, items))


@hookimpl
def magpie_register_environments(register: Callable[[Any], None]) -> None:
    register(LocalEnvironment())
