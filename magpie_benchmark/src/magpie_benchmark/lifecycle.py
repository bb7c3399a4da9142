"""``server_lifecycle`` in the benchmark pipeline: reuse or start the persistent server, and finish it.

The record keeping and the safety rules live in :mod:`magpie_benchmark.serving.persistent`; this module
decides, for one run, whether to reuse, start or stop, and says so in the report's ``server`` block.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from magpie_benchmark.serving import persistent as ps


def _where(config: Any, framework: Any) -> tuple[str, int, str]:
    port = config.port or ps.DEFAULT_PORT
    base_url = f"http://{config.host}:{port}"
    return base_url, port, base_url + framework.readiness_path


def acquire(
    config: Any,
    framework: Any,
    *,
    lease_gpus: Callable[[], Any],
    start: Callable[[Any, Any], Any],
    handle_type: Callable[..., Any],
) -> tuple[Any, Any, dict[str, Any]]:
    """(server handle, GPU lease or None, lifecycle info) for this run."""
    lc = config.server_lifecycle
    base_url, port, ready = _where(config, framework)
    path = ps.record_path(lc.pid_dir, config.framework, config.host, port)
    wanted = ps.reuse_settings(config.model_copy(update={"port": port}))
    info: dict[str, Any] = {"record": str(path), "cleanup": lc.cleanup, "port": port}
    record = ps.read_record(path)
    if record is not None and ps.owns_process(record) and ps.healthy(ready):
        bad = ps.mismatches(record, wanted)
        if bad and not lc.force_reuse:
            raise ps.LifecycleError(
                f"the persistent server at {base_url} was started with other settings ({'; '.join(bad)}); "
                "use the same settings, set server_lifecycle.force_reuse: true, or stop it with cleanup: true"
            )
        info.update(reused=True, pid=record.pid, mismatches_ignored=bad, log=record.data.get("log"))
        return handle_type(base_url, None, {"persistent": info}), None, info
    if record is not None:
        info["stale_record"] = ps.stop_recorded(record, config.stop_grace_s)
    if ps.healthy(ready):
        if not lc.force_reuse:
            raise ps.LifecycleError(
                f"{base_url} already answers, but magpie has no record of starting that server ({path}); "
                "magpie never adopts or stops a server it did not start: stop it, pick another PORT, or "
                "use --base-url / envs.BENCHMARK_BASE_URL for a client-only run (force_reuse: true uses it as is)"
            )
        info.update(reused=True, adopted=False, note="not started by magpie: used as is, never stopped")
        return handle_type(base_url, None, {"persistent": info}), None, info
    lease = lease_gpus()
    run_config = config.model_copy(update={"port": port, "server_ready_timeout_s": lc.server_ready_timeout_s})
    handle = start(run_config, lease)
    proc = handle.process
    ps.write_record(
        path,
        {
            "pid": proc.pid,
            "start_ticks": ps.start_ticks(proc.pid),
            "argv": proc.argv,
            "stop_argv": proc.stop_argv,
            "log": str(proc.log_path),
            "base_url": base_url,
            "settings": wanted,
            "started_at": time.time(),
        },
    )
    info.update(reused=False, pid=proc.pid, log=str(proc.log_path))
    handle.info["persistent"] = info
    return handle, lease, info


def finish(config: Any, handle: Any, info: dict[str, Any]) -> None:
    """After the run: stop the server and remove its record (``cleanup: true``), or leave it running."""
    path = ps.record_path(config.server_lifecycle.pid_dir, config.framework, config.host, info["port"])
    if not config.server_lifecycle.cleanup:
        info["left_running"] = True  # the next run reuses it; a run with cleanup: true stops it
        return
    if info.get("adopted") is False:
        info["stopped"] = "not started by magpie: left running"
    elif handle.process is not None:
        info["exit_code"] = handle.process.stop(config.stop_grace_s)
        info["stopped"] = "stopped"
        path.unlink(missing_ok=True)
    else:
        record = ps.read_record(path)
        info["stopped"] = ps.stop_recorded(record, config.stop_grace_s) if record else "no record"
