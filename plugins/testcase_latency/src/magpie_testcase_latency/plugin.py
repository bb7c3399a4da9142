"""Entry point of magpie-testcase-latency: a testcase's ``MAGPIE_LATENCY_JSON`` lines as its kernel's timing.

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from typing import Any

from magpie_core import hookimpl


@hookimpl
def magpie_testcase_env(latency: dict[str, Any] | None) -> dict[str, str] | None:
    from magpie_testcase_latency.protocol import testcase_env

    return testcase_env(latency)


@hookimpl
def magpie_testcase_performance(output: str, latency: dict[str, Any] | None) -> Any:
    from magpie_testcase_latency.protocol import performance_from_output

    return performance_from_output(output, latency)
