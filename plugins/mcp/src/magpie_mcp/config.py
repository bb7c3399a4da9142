"""The ``mcp:`` block of the framework config (``config.yaml``), owned by this plugin.

Every setting is the server operator's: a client can never widen one. ``magpie mcp`` flags
override the block (``--root``, ``--allow-commands``, ``--allow-env``, ``--allowed-hosts``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from magpie_core.config.common import StrictModel
from magpie_core.interfaces import ConfigBlock

if TYPE_CHECKING:
    from magpie_core.config.defaults import FrameworkConfig


class McpConfig(StrictModel):
    """``mcp:`` in ``config.yaml``: what the MCP server lets an agent touch."""

    allowed_roots: list[str] = Field(
        default_factory=list,
        description="folders tool inputs may name (default: the server's CWD, with a warning; never /)",
    )
    allow_commands: list[str] = Field(
        default_factory=list,
        description="programs client-supplied compile/testcase/prof commands may run (names resolved with the "
        "server's PATH, or paths); empty: only magpie's own harness runs",
    )
    allow_env: list[str] = Field(
        default_factory=list,
        description="environment variables a client may set besides the built-in list (names or shell patterns "
        "such as VLLM_*)",
    )
    allow_backend_options: bool = Field(
        False,
        description="let clients pass any backend options (compiler flags, torch.compile options dicts); "
        "default: only the typed, bounded ones",
    )
    ray_addresses: list[str] = Field(
        default_factory=list, description="Ray clusters a kernel file's ray_config may connect to (default: local)"
    )
    job_env: list[str] = Field(
        default_factory=list,
        description="server environment variables job processes keep besides the built-in list (names or patterns)",
    )
    allowed_modules: list[str] = Field(
        default_factory=lambda: ["torch", "numpy", "math", "operator"],
        description="packages entry/reference may name as module:function (files under the roots always may)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="HTTP Host header values accepted (host:port, host:* for any port)"
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="HTTP Origin header values accepted (http://host:port, http://host:*)"
    )
    auth_token_env: str | None = Field(None, description="environment variable holding the bearer token")
    auth_token_file: str | None = Field(None, description="file holding the bearer token")
    tls_cert: str | None = Field(None, description="PEM certificate (chain) for HTTPS on streamable HTTP")
    tls_key: str | None = Field(None, description="PEM private key for HTTPS (a file only its owner can read)")
    audit_log: str | None = Field(
        "mcp_audit.jsonl",
        description="JSON-lines file of every tool call (relative to output.directory; null: none); clients "
        "cannot read it",
    )
    benchmark_hosts: list[str] = Field(
        default_factory=list, description="hosts benchmark base_url may name besides loopback"
    )
    max_concurrent_jobs: int = Field(2, ge=1, le=64, description="jobs running at once; more wait in a queue")
    max_queued_jobs: int = Field(32, ge=0, le=10_000, description="jobs waiting; beyond this a call is refused")
    max_session_jobs: int = Field(
        2, ge=1, le=64, description="jobs one MCP session may have running at once (fairness between sessions)"
    )
    max_session_queued: int = Field(
        16, ge=0, le=10_000, description="jobs one MCP session may have waiting; beyond this its call is refused"
    )
    max_result_bytes: int = Field(
        64 * 2**20, ge=2**10, description="largest job report kept (bytes); a larger one fails the job"
    )
    max_job_seconds: float = Field(
        6 * 3600, gt=0, le=7 * 24 * 3600, description="wall-clock limit of any job (every kind)"
    )
    max_timeout_s: float = Field(
        3600, gt=0, le=7 * 24 * 3600, description="largest timeout a client may ask for (every *timeout* field)"
    )
    keep_jobs: int = Field(100, ge=1, description="finished jobs kept (their folders too); older ones are pruned")
    keep_days: float = Field(7, gt=0, description="finished jobs older than this are pruned with their folders")
    warm_job_process: bool = Field(
        True,
        description="after a kernel job, keep a job process with magpie and the backends' fork server imported "
        "for the next one",
    )


CONFIG_BLOCK = ConfigBlock(
    name="mcp",
    model=McpConfig,
    scopes=("framework",),
    description="the MCP server's execution policy, roots, network and job limits (docs/mcp.md)",
)


def mcp_config(framework: FrameworkConfig) -> McpConfig:
    """The validated ``mcp:`` block of ``framework``; the defaults when the file has none."""
    block = framework.plugin_block("mcp")
    return block if isinstance(block, McpConfig) else McpConfig()
