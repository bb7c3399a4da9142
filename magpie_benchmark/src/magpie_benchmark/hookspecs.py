"""The benchmark's own hooks: its two component kinds, added to magpie's plugin manager by this distribution (its
``magpie.hookspecs`` entry point; the manager calls pluggy's ``add_hookspecs`` and reads :data:`KINDS`), not kept in
the core.

A serving framework or a benchmark check is registered as any component is::

    @hookimpl
    def magpie_register_serving_frameworks(register):
        register(MyEngine())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magpie_core.hookspecs import hookspec

if TYPE_CHECKING:
    from magpie_benchmark.interfaces import BenchmarkCheck, OfflineFramework, ServingFramework
    from magpie_core.hookspecs import Register

#: the benchmark's component kinds -> the hook that registers each
KINDS = {
    "serving_framework": "magpie_register_serving_frameworks",
    "benchmark_check": "magpie_register_benchmark_checks",
}


@hookspec
def magpie_register_serving_frameworks(register: Register[ServingFramework | OfflineFramework]) -> None:
    """Register LLM serving frameworks (:class:`~magpie_benchmark.interfaces.ServingFramework`).

    A framework builds the server command, its environment, the readiness check and the profiler control for
    ``magpie benchmark``; an :class:`~magpie_benchmark.interfaces.OfflineFramework` is one command that is the
    whole benchmark."""


@hookspec
def magpie_register_benchmark_checks(register: Register[BenchmarkCheck]) -> None:
    """Register benchmark checks (:class:`~magpie_benchmark.interfaces.BenchmarkCheck`).

    ``magpie benchmark`` runs every check a run asks for against the served model once the
    measurement is done (a quality gate such as lm-eval); each verdict lands in the report's
    ``checks``, and a failed one fails the run while the load metrics are kept.
    """
