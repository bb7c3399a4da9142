"""Titles and behaviour hints of MCP tools (the MCP ``ToolAnnotations``), without importing the SDK.

A tool function is marked with :func:`tool_meta`; the server passes the title and the hints
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) to clients::

    @tool_meta("Count kernel sources", read_only=True, idempotent=True)
    def count_sources(tool: ToolContext, folder: str = ".") -> dict[str, int]: ...

A tool without a mark gets its name as title and the MCP defaults (not read-only, destructive,
open world): clients then ask before every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
ATTRIBUTE = "__magpie_tool__"


@dataclass(frozen=True)
class ToolMeta:
    title: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


def tool_meta(
    title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False, open_world: bool = False
) -> Callable[[F], F]:
    """Mark a tool function with its title and hints (see the module docstring)."""

    def mark(fn: F) -> F:
        setattr(fn, ATTRIBUTE, ToolMeta(title, read_only, destructive, idempotent, open_world))
        return fn

    return mark


def meta_of(fn: Callable[..., Any]) -> ToolMeta | None:
    return getattr(fn, ATTRIBUTE, None)
