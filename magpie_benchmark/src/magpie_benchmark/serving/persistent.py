"""A server kept alive across magpie runs (AMD Magpie's ``server_lifecycle``).

A run that starts the server writes a record ``<pid_dir>/<framework>_<host>_<port>.json``: its
pid (the leader of its own process group) and its start time, argv, stop command (a container's), log and the
settings that must match for reuse. A later run with the same host and port:

* finds the record, the process alive with the recorded argv, and the readiness URL healthy ->
  reuses it (client only: no GPU selection, no server start);
* finds settings that differ -> stops with an error naming them (``force_reuse: true`` skips that);
* finds no record but something answering on the port -> stops with an error: magpie never adopts,
  and never stops, a server it did not start;
* finds a stale record (process gone, or not healthy) -> removes it and starts a new server.

``cleanup: true`` stops the recorded server after the run (its stop command, then SIGTERM and
SIGKILL to its process group, after checking the pid is still that process) and removes
the record. Otherwise the server is left running and the report says where.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger("magpie.serving")

DEFAULT_PID_DIR = Path("~/.cache/magpie/server")
#: AMD Magpie's scripts serve on this port when ``PORT`` is not given
DEFAULT_PORT = 8888


class LifecycleError(RuntimeError):
    """The persistent server cannot be reused or started as asked."""


@dataclass
class Record:
    path: Path
    data: dict[str, Any]

    @property
    def pid(self) -> int:
        return int(self.data["pid"])


def record_path(pid_dir: str | None, framework: str, host: str, port: int) -> Path:
    base = Path(pid_dir).expanduser() if pid_dir else DEFAULT_PID_DIR.expanduser()
    safe_host = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    return base / f"{framework}_{safe_host}_{port}.json"


def reuse_settings(config: Any) -> dict[str, Any]:
    """The settings a reused server must share with this run (AMD Magpie's compatibility gate)."""
    envs = config.envs
    return {
        "framework": config.framework,
        "model": config.model,
        "tp": envs.get("TP"),
        "max_model_len": config.max_model_len or envs.get("MAX_MODEL_LEN"),
        "extra_args": {k: envs[k] for k in sorted(envs) if k.startswith("EXTRA_") and k.endswith("_ARGS")},
        "server_args": list(config.server_args),
        "run_mode": config.run_mode,
        "docker_image": config.docker_image if config.run_mode == "docker" else None,
        "port": config.port,
    }


def read_record(path: Path) -> Record | None:
    try:
        return Record(path, json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("unreadable server record %s (%s): treated as stale", path, exc)
        return Record(path, {"pid": -1})


def write_record(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the pid, it names one process for good.

    None when no such process runs (a zombie counts as gone). A title the server sets for itself
    does not change it, unlike its command line.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; comm may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def owns_process(record: Record) -> bool:
    """The recorded pid is alive and is the very process magpie started (not a reused pid)."""
    if record.pid <= 0:
        return False
    ticks = start_ticks(record.pid)
    return ticks is not None and ticks == record.data.get("start_ticks")


def healthy(url: str, timeout_s: float = 5.0) -> bool:
    try:
        with httpx.Client(timeout=timeout_s) as client:
            return client.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def mismatches(record: Record, wanted: dict[str, Any]) -> list[str]:
    have = record.data.get("settings") or {}
    return [f"{k}: server has {have.get(k)!r}, this run wants {v!r}" for k, v in wanted.items() if have.get(k) != v]


def stop_recorded(record: Record, grace_s: float) -> str:
    """Stop the recorded server if it is still the process magpie started; remove the record."""
    import subprocess

    outcome = "already gone"
    if owns_process(record):
        stop_argv = record.data.get("stop_argv")
        if stop_argv:
            try:
                subprocess.run(stop_argv, timeout=grace_s, capture_output=True, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("stop command failed: %s", exc)
        outcome = _signal_group(record.pid, grace_s)
    elif record.pid > 0 and start_ticks(record.pid) is not None:
        outcome = f"pid {record.pid} is now another process: left alone"
    record.path.unlink(missing_ok=True)
    return outcome


def _signal_group(pgid: int, grace_s: float) -> str:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return "already gone"
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and start_ticks(pgid) is not None:
        time.sleep(0.2)
    try:
        os.killpg(pgid, signal.SIGKILL)  # children that outlived the leader are still in the group
    except (ProcessLookupError, PermissionError):
        pass
    return "stopped"
