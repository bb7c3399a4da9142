"""How ``magpie mcp`` is exposed: the operator's start-up options, the HTTP security settings, and
the transports' run loops (stdio to the end of input, streamable HTTP with per-session jobs).

Binding streamable HTTP to anything but loopback needs BOTH a bearer token (from an environment
variable or a file, never the command line; checked by the SDK's bearer-auth middleware through a
:class:`StaticTokenVerifier`) AND the Host values clients will use (the SDK's DNS-rebinding
protection, ``TransportSecuritySettings``); otherwise the server refuses to start and says why.
With ``--tls-cert``/``--tls-key`` uvicorn serves HTTPS; without them a non-loopback address gets a warning.
"""

from __future__ import annotations

import hmac
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_mcp.config import McpConfig, mcp_config
from magpie_mcp.context import ToolContext
from magpie_mcp.trust import host_is_loopback

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken, TokenVerifier
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from magpie_core.config.defaults import FrameworkConfig

log = logging.getLogger("magpie.mcp")

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = [
    f"{scheme}://{host}:*" for scheme in ("http", "https") for host in ("127.0.0.1", "localhost", "[::1]")
]
MIN_TOKEN_CHARS = 16


@dataclass
class ServeOptions:
    """``magpie mcp``'s flags; each list or value given overrides the ``mcp:`` block's."""

    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    roots: list[str] = field(default_factory=list)
    allow_commands: list[str] = field(default_factory=list)
    allow_env: list[str] = field(default_factory=list)
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    auth_token_env: str | None = None
    auth_token_file: str | None = None
    max_jobs: int | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    audit_log: str | None = None

    def apply(self, config: McpConfig) -> McpConfig:
        updates: dict[str, Any] = {
            "allowed_roots": self.roots,
            "allow_commands": self.allow_commands,
            "allow_env": self.allow_env,
            "allowed_hosts": self.allowed_hosts,
            "allowed_origins": self.allowed_origins,
            "auth_token_env": self.auth_token_env,
            "auth_token_file": self.auth_token_file,
            "max_concurrent_jobs": self.max_jobs,
            "tls_cert": self.tls_cert,
            "tls_key": self.tls_key,
            "audit_log": self.audit_log,
        }
        return McpConfig.model_validate(config.model_dump() | {k: v for k, v in updates.items() if v})


def make_context(framework: FrameworkConfig, options: ServeOptions, cwd: Path | None = None) -> ToolContext:
    """The server's context: the ``mcp:`` block with the flags applied; warns when the roots default to CWD."""
    config = options.apply(mcp_config(framework))
    where = (cwd or Path.cwd()).resolve()
    if not config.allowed_roots:
        if where == Path(where.anchor):
            raise ValueError(
                f"no allowed roots and the current directory is {where}: give --root DIR (or mcp.allowed_roots)"
            )
        print(
            f"magpie mcp: warning: no --root given: agents may read and run kernels anywhere under the current "
            f"directory {where}",
            file=sys.stderr,
        )
    return ToolContext(framework, where, config)


# --- HTTP security ---------------------------------------------------------------------


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one shared bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token.encode()):
            return AccessToken(token="<bearer>", client_id="magpie-operator", scopes=[])
        return None


def read_token(config: McpConfig) -> str | None:
    """The bearer token from ``auth_token_env`` or ``auth_token_file``; None when neither is set."""
    if config.auth_token_env and config.auth_token_file:
        raise ValueError("give the token through --auth-token-env or --auth-token-file, not both")
    if config.auth_token_env:
        token = os.environ.get(config.auth_token_env, "").strip()
        where = f"environment variable {config.auth_token_env}"
    elif config.auth_token_file:
        path = Path(config.auth_token_file).expanduser()
        check_private(path)
        try:
            token = path.read_text().strip()
        except OSError as exc:
            raise ValueError(f"auth token file {path}: cannot read: {exc.strerror or exc}") from exc
        where = f"file {path}"
    else:
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"the auth token in {where} is missing or shorter than {MIN_TOKEN_CHARS} characters")
    return token


def check_private(path: Path, what: str = "auth token file") -> None:
    """A secret file others can read (the token, the TLS key) is a shared secret no more: refused, with the fix."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # the read below reports it
    if mode & 0o077:
        raise ValueError(
            f"{what} {path} is readable or writable by group or others (mode {mode & 0o777:o}); "
            f"make it private: chmod 600 {path}"
        )


def tls_files(config: McpConfig) -> tuple[Path, Path] | None:
    """The certificate and private key for HTTPS (both or neither; the key private); None without TLS."""
    if not config.tls_cert and not config.tls_key:
        return None
    if not (config.tls_cert and config.tls_key):
        raise ValueError("TLS needs both --tls-cert FILE and --tls-key FILE (PEM)")
    cert, key = Path(config.tls_cert).expanduser(), Path(config.tls_key).expanduser()
    for path, what in ((cert, "TLS certificate"), (key, "TLS private key")):
        if not path.is_file():
            raise ValueError(f"{what} {path}: no such file")
    check_private(key, "TLS private key")
    return cert, key


def warn_plain_http(host: str) -> None:
    """The bearer token and every tool call cross the network in clear on a non-loopback address."""
    print(
        f"magpie mcp: warning: serving plain HTTP on {host}, which is not a loopback address: the bearer token and "
        "tool calls travel unencrypted; put a TLS reverse proxy in front and bind 127.0.0.1 (docs/mcp.md)",
        file=sys.stderr,
    )


def http_settings(
    options: ServeOptions, config: McpConfig
) -> tuple[TransportSecuritySettings, tuple[AuthSettings, TokenVerifier] | None]:
    """Host/Origin checks and bearer auth for streamable HTTP; ``ValueError`` when the exposure is refused."""
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings

    token = read_token(config)
    tls = tls_files(config)
    loopback = host_is_loopback(options.host)
    if not loopback:
        missing = [
            what
            for what, ok in (
                ("a bearer token (--auth-token-env VAR or --auth-token-file FILE)", token),
                ("the Host values clients use (--allowed-hosts HOST:PORT[,...])", config.allowed_hosts),
            )
            if not ok
        ]
        if missing:
            raise ValueError(
                f"refusing to listen on {options.host}, which is not a loopback address: other machines could "
                f"run commands here; it needs {' and '.join(missing)}"
            )
        if tls is None:
            warn_plain_http(options.host)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*(LOOPBACK_HOSTS if loopback else []), *config.allowed_hosts],
        allowed_origins=[*(LOOPBACK_ORIGINS if loopback else []), *config.allowed_origins],
    )
    if token is None:
        return security, None
    base = server_url(options, config)
    settings = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False)
    return security, (settings, StaticTokenVerifier(token))


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def server_url(options: ServeOptions, config: McpConfig) -> str:
    """``http(s)://host:port``: https when the operator gave a certificate."""
    scheme = "https" if config.tls_cert else "http"
    return f"{scheme}://{_url_host(options.host)}:{options.port}"


# --- run loops -------------------------------------------------------------------------


def run_stdio(server: MCPServer, context: ToolContext) -> None:
    """Serve one client over stdin/stdout until the end of input.

    At the end of input the SDK answers every call still pending with an error ("Connection
    closed") and cancels it, which cancels its job (:meth:`ToolContext.follow`); jobs started with
    ``wait: false`` are cancelled when the server stops (``serve``'s ``finally``).
    """
    server.run("stdio")


def run_http(server: MCPServer, context: ToolContext, options: ServeOptions, security: Any) -> None:
    """Serve streamable HTTP (HTTPS with the operator's certificate); when a session ends (DELETE, idle
    timeout), the jobs its calls were waiting for are cancelled."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(transport_security=security, host=options.host)
    watch_sessions(server, context)
    tls = tls_files(context.config)
    ssl = {"ssl_certfile": str(tls[0]), "ssl_keyfile": str(tls[1])} if tls else {}
    config = uvicorn.Config(app, host=options.host, port=options.port, log_level="warning", **ssl)
    print(f"magpie mcp: streamable HTTP on {server_url(options, context.config)}/mcp", file=sys.stderr)
    anyio.run(uvicorn.Server(config).serve)


def watch_sessions(server: MCPServer, context: ToolContext) -> None:
    """Cancel the jobs a session's calls were waiting for when the SDK discards the session (jobs started
    with ``wait=false`` run on: their token reaches them from a new session).

    The SDK (2.x) has no public session-end hook; ``StreamableHTTPSessionManager._discard_session``
    is where every ending (client DELETE, idle timeout, crash) goes, so it is wrapped here. A test
    (``test_mcp_security.py``) fails when an SDK release changes that.
    """
    manager = server.session_manager
    original = manager._discard_session

    async def discard(session_id: str, transport: Any) -> None:
        import anyio.to_thread

        try:
            await original(session_id, transport)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(
                    context.job_manager.cancel_owner, f"http:{session_id}", "its MCP session ended"
                )

    manager._discard_session = discard  # type: ignore[method-assign]
