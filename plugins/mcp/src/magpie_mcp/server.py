"""``magpie mcp``: magpie's tools for AI agents over the Model Context Protocol.

Built on the official ``mcp`` SDK (2.x, ``MCPServer``). The server has no tools
of its own: every tool, built-in or a third party's, is a plain typed function
registered through ``magpie_register_mcp_tools`` and added here the same way
(:func:`bind_tool`): its name is the tool name, its docstring the description,
its type hints the input and output schemas. A parameter annotated
:class:`~magpie_mcp.context.ToolContext` receives the server's context and is
not part of the input schema. A failure a caller can fix comes back as a tool
error (``isError``) with a message that names what is wrong.

Trust model: :mod:`magpie_mcp.trust` and ``docs/mcp.md``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from magpie_core import __version__
from magpie_core.config.framework import FrameworkConfig
from magpie_core.config.loader import ConfigError, ConfigErrors
from magpie_core.plugins import PluginConflictError, PluginManager, UnknownComponentError, get_plugin_manager
from magpie_mcp.context import CURRENT_REQUEST, ToolContext, ToolFailure

log = logging.getLogger("magpie.mcp")

INSTRUCTIONS = (
    "magpie measures GPU kernels and LLM serving honestly: correctness before speed, timings with "
    "confidence intervals. Start with hardware_spec and discover_kernels; run analyze or compare; "
    "ask suggest_optimizations about a report. Long runs: pass wait=false and poll job_status."
)

#: failures a caller can fix: reported as tool errors with their message
EXPECTED_ERRORS = (
    ToolFailure,
    ConfigError,
    ConfigErrors,
    ValidationError,
    ValueError,
    LookupError,
    PermissionError,
    OSError,
    PluginConflictError,
    NotImplementedError,
)

#: the hidden parameter through which an async tool's wrapper receives the SDK's request context
REQUEST_PARAM = "magpie_request_context"

TRANSPORTS = ("stdio", "streamable-http")


def _as_tool_error(exc: Exception) -> ToolError:
    if isinstance(exc, KeyError | UnknownComponentError) and exc.args:
        return ToolError(str(exc.args[0]))
    return ToolError(str(exc))


def _is(annotation: Any, cls: type) -> bool:
    """``annotation`` is ``cls`` (or a subclass), possibly inside ``Annotated[...]``."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return inspect.isclass(annotation) and issubclass(annotation, cls)


def _target(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What to inspect: the function itself, or the ``__call__`` method of a callable object."""
    return fn if inspect.isfunction(fn) or inspect.ismethod(fn) else fn.__call__  # type: ignore[operator]


def _public_signature(fn: Callable[..., Any]) -> tuple[inspect.Signature, list[str], str | None]:
    """``fn``'s signature with resolved annotations and without its ToolContext parameters.

    Also returns the names of those parameters and of a parameter of the SDK's ``Context``, if any.
    """
    hints = typing.get_type_hints(_target(fn), include_extras=True)
    sig = inspect.signature(fn)
    injected = [name for name in sig.parameters if _is(hints.get(name), ToolContext)]
    request = next((name for name in sig.parameters if _is(hints.get(name), Context)), None)
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values() if p.name not in injected
    ]
    if request is None and inspect.iscoroutinefunction(_target(fn)):
        hidden = inspect.Parameter(REQUEST_PARAM, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context)
        params.append(hidden)
    public = sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))
    return public, injected, request


def bind_tool(fn: Callable[..., Any], context: ToolContext) -> Callable[..., Any]:
    """``fn`` as the server calls it: ``context`` passed to its ToolContext parameters, expected errors
    turned into tool errors (``isError``) that keep their message, and, for an async tool, the SDK's
    request context made available as ``context.request``.

    The wrapper carries the public signature (what the SDK builds the input schema from).
    """
    sig, injected, request_param = _public_signature(fn)
    bound = dict.fromkeys(injected, context)

    if inspect.iscoroutinefunction(_target(fn)):

        async def call_async(**kwargs: Any) -> Any:
            request = kwargs.get(request_param) if request_param else kwargs.pop(REQUEST_PARAM, None)
            token = CURRENT_REQUEST.set(request)
            try:
                return await fn(**kwargs, **bound)
            except ToolError:
                raise
            except EXPECTED_ERRORS as exc:
                raise _as_tool_error(exc) from exc
            finally:
                CURRENT_REQUEST.reset(token)

        wrapper: Callable[..., Any] = call_async
    else:

        def call_sync(**kwargs: Any) -> Any:
            try:
                return fn(**kwargs, **bound)
            except ToolError:
                raise
            except EXPECTED_ERRORS as exc:
                raise _as_tool_error(exc) from exc

        wrapper = call_sync
    functools.update_wrapper(wrapper, fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
    wrapper.__signature__ = sig  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()} | {
        "return": sig.return_annotation
    }
    return wrapper


def build_server(
    framework: FrameworkConfig | None = None, cwd: Path | None = None, *, manager: PluginManager | None = None
) -> tuple[MCPServer, ToolContext]:
    """The MCP server with every registered tool, and the one context its tools share."""
    context = ToolContext(framework or FrameworkConfig(), cwd or Path.cwd())
    server: MCPServer = MCPServer("magpie", version=__version__, instructions=INSTRUCTIONS)
    manager = manager or get_plugin_manager()
    for name, fn in manager.components("mcp_tool").items():
        try:
            server.add_tool(bind_tool(fn, context), name=name)
        except Exception as exc:  # a broken tool must not take the server down
            owner = manager.owner("mcp_tool", name)
            log.warning(
                "plugin %r (%s): MCP tool %r could not be added: %s", owner.plugin, owner.distribution, name, exc
            )
    return server, context


def serve(
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    framework: FrameworkConfig | None = None,
) -> None:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP)."""
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r} (use {' or '.join(TRANSPORTS)})")
    server, context = build_server(framework)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        context.jobs.shutdown()
