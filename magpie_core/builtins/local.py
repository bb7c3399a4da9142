"""The ``local`` execution environment: a thread pool on this machine.

Each item's function usually starts its own subprocess (kernel isolation), so threads are enough to overlap them. With
more than one worker, timings of kernels that share a device interfere; the default is one worker."""

from __future__ import annotations

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
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        from magpie_core.runtime.threads import map_in_threads  # concurrent.futures: not at plugin load (every command)

        return map_in_threads(fn, list(items), workers=workers, on_result=on_result)


@hookimpl
def magpie_register_environments(register: Callable[[Any], None]) -> None:
    register(LocalEnvironment())
