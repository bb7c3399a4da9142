"""The audit log (issue 31): every tool call of a real client session, one JSON line each, with the policy's
decision and reason, secrets redacted and large values cut; clients cannot read it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from magpie_mcp.audit import REDACTED, audit_session, redact
from magpie_mcp.testing import call, call_error, run_session, write_workspace
from mcp import ClientSession

from tests.conftest import DATA

KERNELS = DATA / "kernels"


def test_every_tool_call_is_audited_without_secrets(tmp_path: Path):
    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])
    audit = ws / "results" / "mcp_audit.jsonl"
    secret = "hunter2-not-for-logs"

    async def scenario(s: ClientSession) -> None:
        await call(s, "list_plugins")
        inline = {"config_dir": str(KERNELS), "kernels": [{"id": "k", "entry": "faulty.py:good"}]}
        env = {"CXX": "/tmp/evil", "HF_TOKEN": secret}
        msg = await call_error(s, "analyze", {**inline, "kernels": [{**inline["kernels"][0], "env": env}]})
        assert "env: CXX is not a variable a client may set" in msg
        await call_error(s, "analyze", {**inline, "kernels": [{"id": "y" * 100_000, "entry": "faulty.py:good"}]})
        await call_error(s, "hardware_spec", {"device_id": "zero"})  # refused by the SDK's schema check
        await call_error(s, "job_status", {"job_id": "mjt_" + "z" * 43})
        unknown = await s.call_tool("no_such_tool", {})  # refused by the SDK: no tool of ours runs
        assert unknown.is_error
        # the log is the operator's: no tool reads it
        msg = await call_error(s, "get_benchmark_result", {"path": str(audit)})
        assert "audit log" in msg

    run_session(ws, scenario)
    assert stat.S_IMODE(audit.stat().st_mode) == 0o600
    text = audit.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["tool"] for r in records] == [
        "list_plugins",
        "analyze",
        "analyze",
        "hardware_spec",
        "job_status",
        "no_such_tool",
        "get_benchmark_result",
    ]
    ok, env, big, schema, token, unknown, private = records
    assert (ok["decision"], ok["outcome"], ok["session"]) == ("allowed", "ok", "local")
    assert ok["duration_s"] >= 0 and ok["time"].endswith("+00:00")
    assert (env["decision"], env["outcome"]) == ("refused", "error")
    assert "env: CXX is not a variable" in env["reason"]
    assert env["arguments"]["kernels"][0]["env"] == {"CXX": "/tmp/evil", "HF_TOKEN": REDACTED}
    assert secret not in text
    assert big["decision"] == "refused" and "100000 characters" in big["reason"]
    assert big["arguments"]["kernels"][0]["id"].endswith("...<99800 more chars>") and len(text) < 20_000
    assert schema["decision"] == "refused" and "device_id" in schema["reason"]
    assert token["arguments"] == {"job_id": REDACTED} and token["outcome"] == "error"
    assert unknown["decision"] == "refused" and "no_such_tool" in unknown["reason"]
    assert private["decision"] == "refused" and "audit log" in private["reason"]


def test_redaction_rules():
    value = {"auth_token": "abc", "password": "p", "api_key": "k", "note": "uses SECRETVALUE inside", "n": 3}
    kept = redact(value, secrets=["SECRETVALUE"])
    hidden = {"auth_token": REDACTED, "password": REDACTED, "api_key": REDACTED}
    assert kept == {**hidden, "note": f"uses {REDACTED} inside", "n": 3}
    assert redact(list(range(30)))[-1] == "<10 more items>"
    deep = redact({"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}})
    assert deep["a"]["b"]["c"]["d"]["e"]["f"] == "<dict nested too deep>"
    assert audit_session("http:abc") != "http:abc" and audit_session("local") == "local"
