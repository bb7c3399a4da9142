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

import contextlib
import functools
import inspect
import logging
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from magpie_core import __version__
from magpie_core.config.defaults import FrameworkConfig
from magpie_core.config.loader import ConfigError, ConfigErrors
from magpie_core.plugins import PluginConflictError, PluginManager, UnknownComponentError, get_plugin_manager
from magpie_mcp.annotations import meta_of
from magpie_mcp.audit import AuditMiddleware, note_ran, note_refusal
from magpie_mcp.context import CURRENT_REQUEST, ToolContext, ToolFailure
from magpie_mcp.fields import MAX_TEXT_CHARS
from magpie_mcp.network import ServeOptions, http_settings, make_context, read_token, run_http, run_stdio
from magpie_mcp.resources import add_job_resources
from magpie_mcp.trust import check_size

log = logging.getLogger("magpie.mcp")

INSTRUCTIONS = (
    "magpie measures GPU kernels and LLM serving honestly: correctness before speed, timings with "
    "confidence intervals. Start with hardware_spec and discover_kernels; run analyze or compare; "
    "ask suggest_optimizations about a report. Long runs: calls send progress at least every 2 s; or pass "
    "wait=false and follow the job with job_status / job_result, from any session with its job_token."
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


def _as_tool_error(exc: Exception) -> ToolError:
    if isinstance(exc, KeyError | UnknownComponentError) and exc.args:
        return ToolError(str(exc.args[0]))
    return ToolError(str(exc))


def check_arguments(kwargs: dict[str, Any], request_param: str | None) -> None:
    """Every string a client sent is within the server's size limit (the error names the argument)."""
    for name, value in kwargs.items():
        if name not in (REQUEST_PARAM, request_param):
            check_size(value, name, MAX_TEXT_CHARS)


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
    if request is None:
        hidden = inspect.Parameter(REQUEST_PARAM, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context)
        params.append(hidden)
    public = sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))
    return public, injected, request


def bind_tool(fn: Callable[..., Any], context: ToolContext) -> Callable[..., Any]:
    """``fn`` as the server calls it: ``context`` passed to its ToolContext parameters, expected errors
    turned into tool errors (``isError``) that keep their message, and, for an async tool, the SDK's
    request context made available as ``context.request`` (sync and async tools alike).

    The wrapper carries the public signature (what the SDK builds the input schema from).
    """
    sig, injected, request_param = _public_signature(fn)
    bound = dict.fromkeys(injected, context)

    @contextlib.contextmanager
    def scope(kwargs: dict[str, Any]) -> Iterator[None]:
        """Around one call, sync or async: the request context, the size check, errors as tool errors,
        and the audit note (the tool ran; the policy refused it, with the reason)."""
        request = kwargs.get(request_param) if request_param else kwargs.pop(REQUEST_PARAM, None)
        token = CURRENT_REQUEST.set(request)
        note_ran()
        try:
            check_arguments(kwargs, request_param)
            yield
        except ToolError:
            raise
        except EXPECTED_ERRORS as exc:
            if isinstance(exc, PermissionError):  # TrustError: the execution policy said no
                note_refusal(str(exc))
            raise _as_tool_error(exc) from exc
        finally:
            CURRENT_REQUEST.reset(token)

    if inspect.iscoroutinefunction(_target(fn)):

        async def call_async(**kwargs: Any) -> Any:
            with scope(kwargs):
                return await fn(**kwargs, **bound)

        wrapper: Callable[..., Any] = call_async
    else:

        def call_sync(**kwargs: Any) -> Any:
            with scope(kwargs):
                return fn(**kwargs, **bound)

        wrapper = call_sync
    functools.update_wrapper(wrapper, fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
    wrapper.__signature__ = sig  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()} | {
        "return": sig.return_annotation
    }
    return wrapper


def tool_annotations(fn: Callable[..., Any], name: str) -> tuple[str, ToolAnnotations]:
    """The title and hints of a tool (:func:`magpie_mcp.annotations.tool_meta`); MCP's defaults when unmarked."""
    meta = meta_of(fn)
    if meta is None:
        return name.replace("_", " "), ToolAnnotations(title=name.replace("_", " "))
    hints = ToolAnnotations(
        title=meta.title,
        read_only_hint=meta.read_only,
        destructive_hint=meta.destructive,
        idempotent_hint=meta.idempotent,
        open_world_hint=meta.open_world,
    )
    return meta.title, hints


def build_server(
    framework: FrameworkConfig | None = None,
    cwd: Path | None = None,
    *,
    manager: PluginManager | None = None,
    context: ToolContext | None = None,
    auth: tuple[AuthSettings, TokenVerifier] | None = None,
) -> tuple[MCPServer, ToolContext]:
    """The MCP server with every registered tool and the job resources, and the one context its tools share."""
    context = context or ToolContext(framework or FrameworkConfig(), cwd or Path.cwd())
    settings, verifier = auth or (None, None)
    server: MCPServer = MCPServer(
        "magpie",
        version=__version__,
        instructions=INSTRUCTIONS,
        auth=settings,
        token_verifier=verifier,
        middleware=[AuditMiddleware(context.audit)],
    )
    manager = manager or get_plugin_manager()
    for name, fn in manager.components("mcp_tool").items():
        try:
            title, hints = tool_annotations(fn, name)
            server.add_tool(bind_tool(fn, context), name=name, title=title, annotations=hints)
        except Exception as exc:  # a broken tool must not take the server down
            owner = manager.owner("mcp_tool", name)
            log.warning(
                "plugin %r (%s): MCP tool %r could not be added: %s", owner.plugin, owner.distribution, name, exc
            )
    add_job_resources(server, context)
    return server, context


def serve(options: ServeOptions, framework: FrameworkConfig | None = None) -> None:
    """Run the server until the client goes away (stdio: end of input) or the process is stopped (HTTP).

    Checks the network settings first (:func:`magpie_mcp.network.http_settings`): a refused
    setting raises ``ValueError`` with the reason, before anything listens.
    """
    framework = framework or FrameworkConfig()
    context = make_context(framework, options)
    try:
        if options.transport == "stdio":
            server, _ = build_server(context=context)
            run_stdio(server, context)
        else:
            security, auth = http_settings(options, context.config)
            context.audit.add_secret(read_token(context.config))
            server, _ = build_server(context=context, auth=auth)
            run_http(server, context, options, security)
    finally:
        context.job_manager.shutdown()
