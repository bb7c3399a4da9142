"""``magpie mcp``: the MCP server for AI agents, added to the command line by this plugin."""

from __future__ import annotations

import typer

from magpie_core.cli.kit import STATE, UsageError, handle_errors

TRANSPORTS = ("stdio", "streamable-http")

HELP = (
    "Serve magpie's tools over the Model Context Protocol (stdio by default). See docs/mcp.md.\n\n"
    "An MCP client is untrusted; the operator (you) decides what it may do:\n\n"
    "Roots: tool inputs may name only paths under --root (repeatable; or mcp.allowed_roots). Without one, "
    "the current directory is used and a warning names it; / is refused.\n\n"
    "Execution policy: by default only magpie's own harness runs (kernels in files under the roots, "
    "evaluated with entry/reference). Client-supplied compile/testcase/prof commands are refused unless you "
    "allow programs with --allow-commands PROG[,PROG] (resolved with this server's PATH). A kernel's env may "
    "set only a short allowlist of variables (CUDA_LAUNCH_BLOCKING, OMP_NUM_THREADS, ...) plus those you name "
    "with --allow-env VAR[,VAR] (patterns like VLLM_* work); backend options are typed and bounded.\n\n"
    "Network: streamable-http binds 127.0.0.1. Another address needs a bearer token (--auth-token-env VAR or "
    "--auth-token-file FILE; never on the command line) and the Host values clients use (--allowed-hosts); "
    "otherwise the server refuses to start; --tls-cert/--tls-key serve HTTPS (else a warning). "
    "benchmark targets only loopback servers or mcp.benchmark_hosts.\n\n"
    "Limits: --max-jobs jobs run at once (more wait in a queue); timeouts a client asks for are capped "
    "(mcp.max_timeout_s); every job has a wall-clock limit; old jobs are pruned.\n\n"
    "Long calls: progress notifications at least every 2 s; wait=false returns a job token that reaches the "
    "job from any session (the job outlives its session, up to its time limit).\n\n"
    "Audit: every tool call is appended to <output.directory>/mcp_audit.jsonl (--audit-log FILE)."
)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def mcp_command(
    transport: str = typer.Option("stdio", "--transport", help="stdio | streamable-http"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address for streamable-http (default: loopback only)"),
    port: int = typer.Option(8765, "--port", help="port for streamable-http"),
    root: list[str] = typer.Option(None, "--root", help="a folder agents may use (repeatable; default: CWD)"),
    allow_commands: list[str] = typer.Option(
        None, "--allow-commands", help="PROG[,PROG]: programs client-supplied commands may run (default: none)"
    ),
    allow_env: list[str] = typer.Option(
        None, "--allow-env", help="VAR[,VAR]: variables a kernel env may set beyond the allowlist (patterns: VLLM_*)"
    ),
    allowed_hosts: list[str] = typer.Option(
        None, "--allowed-hosts", help="HOST:PORT[,...]: Host header values accepted over HTTP (host:* any port)"
    ),
    allowed_origins: list[str] = typer.Option(
        None, "--allowed-origins", help="ORIGIN[,...]: Origin header values accepted over HTTP"
    ),
    auth_token_env: str = typer.Option(None, "--auth-token-env", help="environment variable with the bearer token"),
    auth_token_file: str = typer.Option(None, "--auth-token-file", help="file with the bearer token"),
    max_jobs: int = typer.Option(None, "--max-jobs", min=1, max=64, help="jobs running at once (default 2)"),
    tls_cert: str = typer.Option(None, "--tls-cert", help="PEM certificate: serve streamable-http over HTTPS"),
    tls_key: str = typer.Option(None, "--tls-key", help="PEM private key of --tls-cert (mode 600)"),
    audit_log: str = typer.Option(
        None, "--audit-log", help="JSON-lines log of every tool call (default: <output.directory>/mcp_audit.jsonl)"
    ),
) -> None:
    if transport not in TRANSPORTS:
        raise UsageError(f"unknown transport {transport!r}: use stdio or streamable-http")
    from magpie_mcp.network import ServeOptions
    from magpie_mcp.server import serve  # the MCP SDK takes ~1 s to import: only when serving

    options = ServeOptions(
        transport=transport,
        host=host,
        port=port,
        roots=_split(root),
        allow_commands=_split(allow_commands),
        allow_env=_split(allow_env),
        allowed_hosts=_split(allowed_hosts),
        allowed_origins=_split(allowed_origins),
        auth_token_env=auth_token_env,
        auth_token_file=auth_token_file,
        max_jobs=max_jobs,
        tls_cert=tls_cert,
        tls_key=tls_key,
        audit_log=audit_log,
    )
    try:
        serve(options, framework=STATE.framework)
    except ValueError as exc:  # a refused setting: say why, exit 2, nothing listens
        raise UsageError(f"magpie mcp: {exc}") from exc


mcp_command.__doc__ = HELP


def add_mcp_command(cli: typer.Typer) -> None:
    """Add ``mcp`` to the root command line ``cli``."""
    cli.command("mcp", help=HELP)(handle_errors(mcp_command))
