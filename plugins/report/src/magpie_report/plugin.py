"""Entry point: renders report pages (the section hook's wrapper), the core modes' sections, ``magpie report``.

Imports stay inside the hooks: this module is loaded by every ``magpie`` command.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from magpie_core import hookimpl


@hookimpl(wrapper=True)
def magpie_report_sections(page: Any) -> Generator[None, list[Any], list[Any]]:
    """Hand every plugin the kit, add the core modes' sections first, write the page when it has a target."""
    from magpie_report.kit import Kit

    if page.kit is None:
        page.kit = Kit()
    others = yield
    from magpie_report.core_sections import sections_for

    results: list[Any] = [sections_for(page), *reversed(others or [])]
    if page.output is not None:
        from magpie_report.pages import write_single

        page.written = write_single(page, results)
    return results


@hookimpl
def magpie_register_commands(cli: Any) -> None:
    from magpie_report.cli import register

    register(cli)
