"""The audit log: one JSON line per MCP tool call, appended to a file in the server's workspace.

Who (the session, hashed), what (the tool and its arguments, secrets redacted and large values cut), when,
the policy's decision (``allowed``, or ``refused`` with the reason the client was given), how long it took
and how it ended. The file is the operator's: it is created mode 600 and no tool reads it
(:meth:`ToolContext.check_path <magpie_mcp.context.ToolContext.check_path>` refuses its path).

Every ``tools/call`` is recorded, including the ones the SDK refuses before a tool runs (an unknown tool, a
schema violation): the record is written by a server middleware (:class:`AuditMiddleware`), which sees every
request; the tool wrapper (:func:`magpie_mcp.server.bind_tool`) notes in :data:`AUDIT_CALL` that the tool ran
and whether the policy refused the call.

What never reaches the file: the bearer token (removed wherever it appears), values of arguments whose names
look secret (``*token*``, ``*secret*``, ``*password*``, ``*key*``, ...), job tokens (``mjt_...``: they grant
access to a job), raw MCP session ids (with a bearer token they would let a reader act in that session).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from magpie_mcp.jobs import LOCAL_OWNER, SESSIONLESS, TOKEN_PREFIX, session_owner

log = logging.getLogger("magpie.mcp")

#: the audit record of the tool call in progress (set by :class:`AuditMiddleware`, filled by the tool wrapper)
AUDIT_CALL: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("magpie_mcp_audit", default=None)

REDACTED = "<redacted>"
#: argument names whose values are secrets
SECRET_NAME = re.compile(r"token|secret|passw|api_?key|private_?key|credential|authorization|cookie", re.IGNORECASE)
#: longest string kept, items kept of a list, keys of a mapping, levels of nesting
MAX_CHARS = 200
MAX_ITEMS = 20
MAX_DEPTH = 6
#: longest error message kept
MAX_ERROR_CHARS = 1000


def redact(value: Any, name: str = "", secrets: Iterable[str] = (), depth: int = 0) -> Any:
    """``value`` (a tool call's arguments) as the audit log keeps it: secret-looking names and job tokens
    replaced by :data:`REDACTED`, ``secrets`` removed from every string, long strings, lists and mappings cut
    (saying how much was left out), nesting beyond :data:`MAX_DEPTH` summarized."""
    if name and SECRET_NAME.search(name) and value not in (None, "", [], {}):
        return REDACTED
    if isinstance(value, str):
        for secret in secrets:
            if secret:
                value = value.replace(secret, REDACTED)
        if value.startswith(TOKEN_PREFIX):
            return REDACTED
        return value if len(value) <= MAX_CHARS else f"{value[:MAX_CHARS]}...<{len(value) - MAX_CHARS} more chars>"
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth >= MAX_DEPTH:
        return f"<{type(value).__name__} nested too deep>"
    if isinstance(value, dict):
        items = list(value.items())
        kept = {str(k)[:MAX_CHARS]: redact(v, str(k), secrets, depth + 1) for k, v in items[:MAX_ITEMS]}
        if len(items) > MAX_ITEMS:
            kept["..."] = f"<{len(items) - MAX_ITEMS} more keys>"
        return kept
    if isinstance(value, list | tuple):
        kept_items = [redact(v, name, secrets, depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            kept_items.append(f"<{len(value) - MAX_ITEMS} more items>")
        return kept_items
    return redact(str(value), name, secrets, depth)


def audit_session(owner: str) -> str:
    """The session as the log names it: an HTTP session id hashed (it is a credential next to the bearer
    token), stdio as ``local``, a sessionless HTTP request as ``request``."""
    if owner == LOCAL_OWNER:
        return owner
    if owner.startswith(SESSIONLESS):
        return "request"
    kind, _, session = owner.partition(":")
    return f"{kind}:{hashlib.sha256(session.encode()).hexdigest()[:16]}"


class AuditLog:
    """Appends audit records to ``path`` (JSON lines, mode 600); ``path`` None: records are dropped."""

    def __init__(self, path: Path | None, secrets: Iterable[str] = ()) -> None:
        self.path = path
        self.secrets = [s for s in secrets if s]
        self._lock = threading.Lock()

    def add_secret(self, secret: str | None) -> None:
        """A value never to be written (the bearer token)."""
        if secret:
            self.secrets.append(secret)

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record``; a failure is logged on the server and never fails the call."""
        if self.path is None:
            return
        line = json.dumps(record, default=str, ensure_ascii=False)
        for secret in self.secrets:  # belt and braces: arguments are redacted already, errors too
            line = line.replace(secret, REDACTED)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, (line + "\n").encode())
                finally:
                    os.close(fd)
        except OSError as exc:
            log.warning("audit log %s: cannot write: %s", self.path, exc)

    def record(
        self,
        *,
        session: str,
        tool: str,
        arguments: Any,
        decision: str,
        reason: str | None,
        started: float,
        outcome: str,
        error: str | None,
        job_id: str | None,
    ) -> None:
        """Write one tool call's record (``started``: its ``time.monotonic()``)."""
        self.write(
            {
                "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
                "session": session,
                "tool": redact(tool),
                "arguments": redact(arguments, secrets=self.secrets),
                "decision": decision,
                "reason": _cut(reason),
                "duration_s": round(time.monotonic() - started, 3),
                "outcome": outcome,
                "error": _cut(error),
                "job_id": job_id,
            }
        )


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}...<{len(text) - MAX_ERROR_CHARS} more chars>"


def note_refusal(reason: str) -> None:
    """The call in progress was refused by the server's policy (called by the tool wrapper)."""
    record = AUDIT_CALL.get()
    if record is not None:
        record.update(decision="refused", reason=reason)


def note_ran() -> None:
    """The tool function of the call in progress was reached (the SDK did not refuse the call first)."""
    record = AUDIT_CALL.get()
    if record is not None:
        record["ran"] = True


class AuditMiddleware:
    """A server middleware (the SDK's ``ServerMiddleware``) that writes an audit record for every
    ``tools/call`` request, whatever becomes of it."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call" or ctx.request_id is None:
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, dict) else {}
        note: dict[str, Any] = {"decision": "allowed", "reason": None, "ran": False}
        token = AUDIT_CALL.set(note)
        started = time.monotonic()
        outcome, error, job_id = "error", None, None
        try:
            result = await call_next(ctx)
            failed, error, job_id = _outcome(result)
            outcome = "error" if failed else "ok"
            if failed and not note["ran"] and note["decision"] == "allowed":
                # the SDK refused the call before any tool ran: unknown tool, arguments against the schema
                note.update(decision="refused", reason=error)
            return result
        except BaseException as exc:
            import anyio

            outcome = "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "error"
            error = error or f"{type(exc).__name__}: {exc}"
            if outcome == "error" and not note["ran"] and note["decision"] == "allowed":
                note.update(decision="refused", reason=error)  # a protocol error before any tool ran
            raise
        finally:
            AUDIT_CALL.reset(token)
            self.audit.record(
                session=audit_session(session_owner(getattr(ctx, "request", None))),
                tool=str(params.get("name", "")),
                arguments=params.get("arguments") or {},
                decision=note["decision"],
                reason=note["reason"],
                started=started,
                outcome=outcome,
                error=error,
                job_id=job_id,
            )


def _outcome(result: Any) -> tuple[bool, str | None, str | None]:
    """(is an error, the error text, the job id) of a ``tools/call`` result in its wire form."""
    data = result.model_dump(by_alias=True) if hasattr(result, "model_dump") else result
    if not isinstance(data, dict):
        return False, None, None
    if data.get("isError"):
        texts = [c.get("text", "") for c in data.get("content") or [] if isinstance(c, dict)]
        return True, " ".join(texts) or "error", None
    structured = data.get("structuredContent") or {}
    job = structured.get("job") if isinstance(structured, dict) else None
    job_id = job.get("job_id") if isinstance(job, dict) else structured.get("job_id")
    return False, None, job_id if isinstance(job_id, str) else None
