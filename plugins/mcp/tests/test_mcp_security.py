"""The MCP server against an untrusted client: each exploit of issue 16's "Why" list, from real MCP
client sessions (the SDK's stdio and streamable-HTTP clients), gets a clear refusal and the server
stays alive; plus auth and Host/Origin checks, session isolation, limits, resources and annotations.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from magpie_mcp.jobs import JobLimits, JobManager
from magpie_mcp.testing import (
    call,
    call_error,
    echo_runner,
    http_server,
    processes_mentioning,
    run_session,
    write_workspace,
)
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import DATA

KERNELS = DATA / "kernels"
TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
EVIL = ["sh", "-c", "head -2 /etc/passwd; id; touch ../x_outside_root"]
HANG = {"id": "h", "entry": "faulty.py:hangs", "reference": "faulty.py:reference"}
MODERN = "2026-07-28"
TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD (the root) with a trace directly in it; tests/data/kernels allowed too."""
    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", KERNELS])
    shutil.copy(TRACE, ws / TRACE.name)
    (ws / "evil.yaml").write_text(f"kernel:\n  id: e\n  testcase_command: {json.dumps(EVIL)}\n")
    return ws


def _inline(**kernel: Any) -> dict[str, Any]:
    return {"kernels": [{"id": "k", "entry": "faulty.py:good", **kernel}], "config_dir": str(KERNELS)}


def test_stdio_exploits_are_refused_and_the_server_stays_alive(workspace, tmp_path):
    logs: list[str] = []

    async def on_log(params: Any) -> None:
        logs.append(str(params.data))

    async def scenario(s: ClientSession) -> None:
        # 1. client-supplied commands: inline (testcase and compile) and in a kernel YAML under the root
        for field in ("testcase_command", "compile_command", "prof_command"):
            msg = await call_error(s, "analyze", _inline(**{field: EVIL}))
            assert f"{field}: this server runs only magpie's own harness" in msg and "--allow-commands" in msg
        msg = await call_error(s, "analyze", {"kernel_config": str(workspace / "evil.yaml")})
        assert "client-supplied commands are refused" in msg
        # AMD Magpie's argument names go through the same policy
        msg = await call_error(s, "analyze", {"kernel_path": str(KERNELS / "faulty.py"), "testcase_command": "id"})
        assert "client-supplied commands are refused" in msg
        # 2. env cannot change how programs or libraries are found
        for var in ("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "DYLD_INSERT_LIBRARIES"):
            msg = await call_error(s, "analyze", _inline(env={var: str(tmp_path)}))
            assert f"env: {var} is not a variable a client may set" in msg
        # a Python module outside the roots and the allowed packages
        msg = await call_error(s, "analyze", _inline(entry="os:system"))
        assert "module 'os' is neither a file under the allowed roots nor an allowed package" in msg
        # 6./7. absurd timeouts, in every place a client can put one
        for block in ("correctness", "performance"):
            for value in (1e9, 1e12):
                msg = await call_error(s, "analyze", {**_inline(), block: {"timeout_seconds": value}})
                # refused by the tool's argument schema (the config's own bound) or the server's maximum
                assert f"{block}.timeout_seconds" in msg and ("maximum timeout" in msg or "less than or equal" in msg)
        msg = await call_error(s, "gap_analysis", {"trace_path": TRACE.name, "timeout_s": 1e12})
        assert "above this server's maximum timeout" in msg
        # 9. benchmark load only to loopback (no link-local/metadata, no other hosts)
        for url in ("http://169.254.169.254/latest", "http://10.1.2.3:8000", "ftp://127.0.0.1/", "http://[fe80::1]:80"):
            args = {"framework": "vllm", "model": "m", "run_mode": "external", "base_url": url}
            msg = await call_error(s, "benchmark", args)
            assert "base_url" in msg and ("loopback" in msg or "only http(s)" in msg or "is not an http" in msg), msg
        # 5. gap_analysis with the trace directly in the root: output stays under the root, result is compact
        out = await call(s, "gap_analysis", {"trace_path": TRACE.name, "top_k": 5})
        assert Path(out["output_dir"]).is_relative_to(workspace) and not (workspace.parent / "gap_analysis").exists()
        assert len(out["top_kernels"]) == 5 and len(json.dumps(out)) < 8000, len(json.dumps(out))
        csv = next(f for f in out["files"] if f["name"] == "gap_analysis.csv")
        table = await s.read_resource(csv["uri"])
        assert table.contents[0].text.count("\n") > 5
        log = await s.read_resource(out["job"]["log_uri"])
        assert "[progress]" in log.contents[0].text
        # AMD Magpie's names: trace_dir, workspace_dir; ray_task_* map to the job tools
        again = await call(s, "gap_analysis", {"trace_dir": TRACE.name, "top_k": 2, "wait": False})
        status = await call(s, "ray_task_status", {"task_id": again["job"]["job_id"]})
        assert status["job_id"] == again["job"]["job_id"]
        done = await call(s, "ray_task_result", {"task_id": again["job"]["job_id"]})
        assert done["job"]["kind"] == "gap_analysis"
        # a kernel config is written only as YAML (never as a .py the harness could import)
        msg = await call_error(s, "create_kernel_config", {"kernels": [{"id": "x"}], "output_path": "evil.py"})
        assert "only to a .yaml or .yml file" in msg
        # the server is alive and answers normally after all of it
        assert (await call(s, "hardware_spec"))["host"]["cpu_count"] >= 1

    run_session(workspace, scenario, logging_callback=on_log)
    assert not (workspace.parent / "x_outside_root").exists() and not (workspace / "x_outside_root").exists()
    assert any("gap analysis of" in line for line in logs), "no MCP logging notifications for the job"


def test_operator_opt_in_allows_only_the_named_programs(workspace, tmp_path):
    (workspace / "evil").write_text("#!/bin/sh\ntouch pwned\n")
    (workspace / "evil").chmod(0o755)
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    async def scenario(s: ClientSession) -> None:
        ok = await call(
            s,
            "analyze",
            {
                "kernels": [
                    {"id": "a", "entry": "faulty.py:good", "reference": "faulty.py:reference"},
                    {"id": "b", "testcase_command": ["true"], "type": "pytorch"},
                ],
                "config_dir": str(KERNELS),
                "measure_performance": False,
            },
            progress_callback=on_progress,
        )
        assert ok["job"]["state"] == "succeeded" and ok["job"]["total"] == 2
        msg = await call_error(s, "analyze", _inline(testcase_command=["sh", "-c", "id"]))
        assert "program 'sh' is not allowed by this server (allowed: true" in msg
        msg = await call_error(s, "analyze", _inline(testcase_command=[str(workspace / "evil")]))
        assert "is not allowed by this server" in msg
        # the program is resolved with the server's PATH: a client PATH is still refused
        msg = await call_error(s, "analyze", _inline(testcase_command=["true"], env={"PATH": str(workspace)}))
        assert "env: PATH" in msg

    run_session(workspace, scenario, args=["--allow-commands", "true"])
    assert not (workspace / "pwned").exists() and not (KERNELS / "pwned").exists()
    # two steps: the total is the steps plus writing the report, and the last notification completes it
    assert progress[-1] == (3, 3), progress
    assert all(t in (1, 3) for _, t in progress), progress


def test_limits_queue_job_time_limit_and_no_orphans(workspace):
    config = workspace / "config.yaml"
    config.write_text(config.read_text() + "  max_concurrent_jobs: 1\n  max_queued_jobs: 1\n  max_job_seconds: 4\n")

    async def scenario(s: ClientSession) -> list[str]:
        first = await call(s, "analyze", {**_inline(), "kernels": [HANG], "wait": False})
        second = await call(s, "analyze", {**_inline(), "kernels": [HANG], "wait": False})
        assert first["job"]["state"] == "running" and second["job"]["state"] == "queued"
        assert "too many jobs" in await call_error(s, "analyze", {**_inline(), "kernels": [HANG], "wait": False})
        cancelled = await call(s, "job_cancel", {"job_id": second["job"]["job_id"]})
        assert cancelled["state"] == "cancelled"
        msg = await call_error(s, "job_result", {"job_id": first["job"]["job_id"], "wait_s": 60})
        assert "ran past its time limit of 4 s" in msg
        return [first["job"]["job_id"], second["job"]["job_id"]]

    ids = run_session(workspace, scenario)
    deadline = time.monotonic() + 15
    while any(processes_mentioning(i) for i in ids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(processes_mentioning(i) for i in ids), "a job process outlived its job"


def test_job_retention_prunes_old_jobs_and_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manager = JobManager(tmp_path / "jobs", tmp_path, JobLimits(max_concurrent=2, keep_jobs=2))
    try:
        jobs = [manager.start("echo", {"n": i}, echo_runner) for i in range(3)]
        for job in jobs:
            assert job.done.wait(60) and job.state == "succeeded", job.error
        manager.start("echo", {"n": 3}, echo_runner).done.wait(60)
        assert not jobs[0].folder.exists() and jobs[0].id not in manager.jobs
        assert jobs[2].folder.exists()
        with pytest.raises(KeyError) as err:
            manager.get(jobs[1].id, owner="http:other")
        assert jobs[1].id in str(err.value) and jobs[2].id not in str(err.value)
    finally:
        manager.shutdown()
    # a new server prunes folders left by the last one beyond keep_jobs
    JobManager(tmp_path / "jobs", tmp_path, JobLimits(keep_jobs=1))
    assert len([p for p in (tmp_path / "jobs").iterdir() if (p / "spec.json").exists()]) == 1


def test_stdio_end_of_input_answers_pending_calls_and_exits(workspace):
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    hang = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "analyze", "arguments": _inline()}}
    hang["params"]["arguments"]["kernels"] = [HANG]
    lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, hang]
    server = subprocess.Popen(
        [sys.executable, "-m", "magpie_core", "-c", str(workspace / "config.yaml"), "mcp"],
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None
    server.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
    server.stdin.flush()
    jobs = workspace / "results" / "mcp_jobs"
    deadline = time.monotonic() + 60
    while not any(jobs.glob("analyze_*/spec.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    out, _ = server.communicate(timeout=60)  # closes stdin: the end of input
    answers = {m.get("id"): m for m in map(json.loads, out.decode().splitlines())}
    assert server.returncode == 0
    assert "error" in answers[2], answers.get(2)
    job = next(jobs.glob("analyze_*")).name.split("_", 1)[1]
    assert not processes_mentioning(job)


def test_roots_default_warns_and_the_file_system_root_is_refused(run_magpie, tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "magpie_core", "mcp"], cwd="/", capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2 and "give --root DIR" in refused.stderr
    root = run_magpie(["mcp", "--root", "/"])
    assert root.returncode == 2 and "is the file system root" in root.stderr
    argv = [sys.executable, "-m", "magpie_core", "mcp"]
    warned = subprocess.run(argv, cwd=tmp_path, input="", capture_output=True, text=True, timeout=120)
    assert f"current directory {tmp_path}" in warned.stderr
    help_text = run_magpie(["mcp", "--help"]).stdout
    assert "--allow-commands" in help_text and "only magpie's own harness runs" in help_text


# --- streamable HTTP ---------------------------------------------------------------------------


def test_http_exposure_needs_a_token_and_allowed_hosts(run_magpie, tmp_path):
    bare = run_magpie(["mcp", "--transport", "streamable-http", "--host", "0.0.0.0", "--root", str(tmp_path)])
    assert bare.returncode == 2 and "not a loopback address" in bare.stderr
    assert "bearer token" in bare.stderr and "--allowed-hosts" in bare.stderr
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o644)
    argv = ["mcp", "--transport", "streamable-http", "--host", "0.0.0.0", "--auth-token-file", str(tmp_path / "token")]
    shared = run_magpie([*argv, "--root", str(tmp_path), "--allowed-hosts", "x:1"])
    assert shared.returncode == 2 and f"(mode 644); make it private: chmod 600 {tmp_path / 'token'}" in shared.stderr
    (tmp_path / "token").chmod(0o600)
    half = run_magpie([*argv, "--root", str(tmp_path)])
    assert half.returncode == 2 and "--allowed-hosts" in half.stderr and "bearer token" not in half.stderr
    (tmp_path / "short").write_text("abc")
    (tmp_path / "short").chmod(0o600)
    short = run_magpie([*argv[:-1], str(tmp_path / "short"), "--root", str(tmp_path), "--allowed-hosts", "x:1"])
    assert short.returncode == 2 and "shorter than 16 characters" in short.stderr


def test_plain_http_on_a_network_address_warns(tmp_path, capsys, monkeypatch):
    from magpie_mcp.config import McpConfig
    from magpie_mcp.network import ServeOptions, http_settings

    monkeypatch.setenv("MAGPIE_TEST_TOKEN", TOKEN)
    config = McpConfig(auth_token_env="MAGPIE_TEST_TOKEN", allowed_hosts=["mcp.example:8765"])
    http_settings(ServeOptions(transport="streamable-http", host="0.0.0.0"), config)
    assert "serving plain HTTP on 0.0.0.0" in capsys.readouterr().err
    http_settings(ServeOptions(transport="streamable-http", host="127.0.0.1"), config)
    assert "plain HTTP" not in capsys.readouterr().err


@pytest.fixture
def http_port(workspace):
    with http_server(workspace, ["--auth-token-env", "MAGPIE_TEST_TOKEN"], env={"MAGPIE_TEST_TOKEN": TOKEN}) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def _post(port: int, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", "/mcp", skip_host=True)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for key, value in {**base, **headers}.items():
        conn.putheader(key, value)
    conn.endheaders(body.encode())
    status = conn.getresponse().status
    conn.close()
    return status


def test_http_auth_host_origin_and_session_isolation(http_port, workspace):
    port = http_port
    good = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {TOKEN}"}
    assert _post(port, {"Host": f"127.0.0.1:{port}"}) == 401
    assert _post(port, {**good, "Authorization": "Bearer wrong-token-wrong-token"}) == 401
    assert _post(port, {**good, "Host": "evil.example"}) in (400, 421)
    assert _post(port, {**good, "Origin": "http://evil.example"}) == 403

    url = f"http://127.0.0.1:{port}/mcp"

    def client() -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)

    async def main() -> tuple[str, str]:
        async with (
            client() as http_a,
            streamable_http_client(url, http_client=http_a) as (read_a, write_a),
            ClientSession(read_a, write_a) as a,
        ):
            await a.initialize()
            started = await call(a, "analyze", {**_inline(), "kernels": [HANG], "wait": False})
            job_id = started["job"]["job_id"]
            async with (
                client() as http_b,
                streamable_http_client(url, http_client=http_b) as (read_b, write_b),
                ClientSession(read_b, write_b) as b,
            ):
                await b.initialize()
                assert (await call(b, "job_list"))["jobs"] == []
                for tool in ("job_status", "job_result", "job_cancel"):
                    msg = await call_error(b, tool, {"job_id": job_id})
                    assert "in this session" in msg
                msg = await call_error(b, "job_status", {"job_id": "nosuchjob"})
                assert job_id not in msg
                with pytest.raises(Exception, match=r"no job .* in this session"):
                    await b.read_resource(started["job"]["log_uri"])
                spec = str(Path(started["job"]["log_path"]).parent / "spec.json")
                msg = await call_error(b, "get_benchmark_result", {"path": spec})
                assert "in the server's job folders" in msg
            # a sessionless (2026-07-28) client sees no session's jobs; its own come back only by token
            async with client() as http_m, Client(streamable_http_client(url, http_client=http_m), mode=MODERN) as m:
                listed = await m.call_tool("job_list", {})
                assert listed.structured_content == {"jobs": []}
                status = await m.call_tool("job_status", {"job_id": job_id})
                assert status.is_error and "in this session" in status.content[0].text
            assert (await call(a, "job_status", {"job_id": job_id}))["state"] == "running"
            return job_id, started["job"]["job_token"]

    job_id, token = anyio.run(main)
    # session A ended (the client sent DELETE): its wait=false job runs on; its token stops it from a new session
    assert processes_mentioning(job_id), "a detached job ended with its session"

    async def stop() -> None:
        async with (
            client() as http_c,
            streamable_http_client(url, http_client=http_c) as (read, write),
            ClientSession(read, write) as c,
        ):
            await c.initialize()
            assert (await call(c, "job_cancel", {"job_id": token}))["state"] == "cancelled"

    anyio.run(stop)
    deadline = time.monotonic() + 30
    while processes_mentioning(job_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(job_id), "a cancelled job left processes"
    # the audit log has every call, and neither the bearer token, the job token nor a raw session id
    audit = (workspace / "results" / "mcp_audit.jsonl").read_text()
    records = [json.loads(line) for line in audit.splitlines()]
    assert TOKEN not in audit and token not in audit
    assert {r["tool"] for r in records} >= {"analyze", "job_list", "job_status", "job_cancel", "get_benchmark_result"}
    sessions = {r["session"] for r in records} - {"request"}
    assert all(s.startswith("http:") and len(s) == len("http:") + 16 for s in sessions), sessions
    cancel = next(r for r in records if r["tool"] == "job_cancel" and r["outcome"] == "ok")
    assert cancel["arguments"] == {"job_id": "<redacted>"} and cancel["outcome"] == "ok"


def test_tool_quality_annotations_titles_and_descriptions(workspace):
    async def scenario(s: ClientSession) -> None:
        tools = (await s.list_tools()).tools
        for tool in tools:
            assert tool.title and tool.annotations is not None, tool.name
            hints = tool.annotations
            assert None not in (hints.read_only_hint, hints.open_world_hint), tool.name
            missing = [p for p, v in tool.input_schema.get("properties", {}).items() if not v.get("description")]
            assert not missing, f"{tool.name}: parameters without a description: {missing}"
        by_name = {t.name: t for t in tools}
        assert by_name["job_list"].annotations.read_only_hint is True
        assert by_name["job_cancel"].annotations.destructive_hint is True
        assert by_name["benchmark"].annotations.open_world_hint is True
        templates = {t.uri_template for t in (await s.list_resource_templates()).resource_templates}
        assert "magpie://jobs/{job_id}/log" in templates and "magpie://jobs/{job_id}/files/{name}" in templates

    run_session(workspace, scenario)


def test_policy_refuses_code_choices_in_kernel_files(tmp_path):
    """What a kernel YAML can choose besides commands: compiler flags, output names, images, GPU settings."""
    from magpie_mcp.trust import TrustError, TrustPolicy

    from magpie_core.config.kernel import KernelConfigFile

    policy = TrustPolicy.from_roots([tmp_path], tmp_path)
    cases = {
        "options hipcc_flags": {"kernel": {"id": "k", "options": {"hipcc_flags": ["-B/tmp/evil"]}}},
        "options.binary": {"kernel": {"id": "k", "options": {"binary": "../../escape"}}},
        "scheduler.docker_image": {"kernel": {"id": "k"}, "scheduler": {"docker_image": "evil:latest"}},
        "gpu:": {"kernel": {"id": "k"}, "gpu": {"power_limit_watts": 10}},
        "latency.pythonpath": {"kernel": {"id": "k"}, "latency": {"pythonpath": ["/usr/lib"]}},
        "module 'subprocess'": {"kernel": {"id": "k", "entry": "subprocess:getoutput"}},
    }
    for expected, data in cases.items():
        with pytest.raises(TrustError, match=expected):
            policy.check_kernel_file(KernelConfigFile.model_validate(data), tmp_path)
    with pytest.raises(ValueError, match="file system root"):
        TrustPolicy.from_roots(["/"], tmp_path)


def test_client_paths_do_not_expand_server_variables(tmp_path, monkeypatch):
    from magpie_mcp.trust import TrustError, TrustPolicy

    monkeypatch.setenv("MAGPIE_TEST_SECRET", "hunter2-secret")
    policy = TrustPolicy.from_roots([tmp_path], tmp_path)
    with pytest.raises(TrustError) as err:
        policy.check_path("/$MAGPIE_TEST_SECRET/x", "kernel_config")
    assert "hunter2" not in str(err.value)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_with_the_operators_certificate(workspace, tmp_path, run_magpie, capsys, monkeypatch):
    import ssl

    from magpie_mcp.config import McpConfig
    from magpie_mcp.network import ServeOptions, http_settings

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert), "-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    tls = ["--tls-cert", str(cert), "--tls-key", str(key)]
    key.chmod(0o644)
    shared = run_magpie(["mcp", "--transport", "streamable-http", *tls, "--root", str(tmp_path)])
    assert shared.returncode == 2 and f"TLS private key {key} is readable" in shared.stderr
    half = run_magpie(["mcp", "--transport", "streamable-http", *tls[:2], "--root", str(tmp_path)])
    assert half.returncode == 2 and "TLS needs both --tls-cert FILE and --tls-key FILE" in half.stderr
    key.chmod(0o600)
    # a network address with TLS: no plain-HTTP warning
    monkeypatch.setenv("MAGPIE_TEST_TOKEN", TOKEN)
    config = McpConfig(
        auth_token_env="MAGPIE_TEST_TOKEN", allowed_hosts=["mcp.example:8765"], tls_cert=str(cert), tls_key=str(key)
    )
    http_settings(ServeOptions(transport="streamable-http", host="0.0.0.0"), config)
    assert "plain HTTP" not in capsys.readouterr().err

    with http_server(workspace, tls, scheme="https") as url:

        async def main() -> set[str]:
            trusted = httpx2.AsyncClient(verify=ssl.create_default_context(cafile=str(cert)), timeout=60)
            async with (
                trusted,
                streamable_http_client(url, http_client=trusted) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

        assert "analyze" in anyio.run(main)
        with pytest.raises((OSError, http.client.HTTPException)):  # the port speaks TLS only
            _post(int(url.rsplit(":", 1)[1].split("/")[0]), {})
    assert "streamable HTTP on https://127.0.0.1:" in (workspace / "http.stderr").read_text()
