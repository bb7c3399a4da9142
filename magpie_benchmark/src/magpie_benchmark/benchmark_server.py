"""The server a benchmark run drives, for the run's whole length: the framework plugin's command line, run here or in a
container (``run_mode`` local / docker) on GPUs leased for the run, reached (``external``) or kept between runs
(``server_lifecycle``); probed before any load; stopped and its GPUs released afterwards, whatever happened.

The engine-neutral pieces (processes, containers, GPU leases, the persistent server's records) are
:mod:`magpie_benchmark.serving`'s; this module puts them together for one run.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from magpie_benchmark import lifecycle
from magpie_benchmark.amd_magpie import is_secret, server_envs
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.loadgen.probe import ProbeFailed, probe_server
from magpie_benchmark.loadgen.runner import run_in_loop
from magpie_benchmark.serving.docker import container_name, docker_command, stop_command, vendor_for
from magpie_benchmark.serving.gpu_leases import GpuLease, select_gpus
from magpie_benchmark.serving.server import ServerError, ServerProcess, free_port
from magpie_core.runtime.interrupts import GRACE_S as INTERRUPT_GRACE_S
from magpie_core.runtime.workspace import Workspace

if TYPE_CHECKING:
    from magpie_benchmark.report import BenchmarkReport

log = logging.getLogger("magpie.benchmark")


@dataclass
class ServerHandle:
    """The server the load goes to: its URL, its process when this run started it (None: external or kept), and
    what the report's ``server`` block says of it."""

    base_url: str
    process: ServerProcess | None
    info: dict[str, Any]


@dataclass
class Held:
    """What a run holds and gives back whatever happens: its GPUs, its server, a kept server's lifecycle info."""

    lease: GpuLease | None = None
    handle: ServerHandle | None = None
    kept: dict[str, Any] | None = None


def serving_framework(name: str | None) -> Any:
    """The installed serving framework plugin ``name``; :class:`UnknownComponentError` naming what is installed."""
    from magpie_core.plugins import get_plugin_manager

    if not name:
        from magpie_core.plugins import UnknownComponentError

        raise UnknownComponentError("no framework given: set benchmark.framework or pass it as the FRAMEWORK argument")
    return get_plugin_manager().get("serving_framework", name)


def framework_or_none(config: BenchmarkConfig) -> Any | None:
    """The config's framework plugin, or None when none is named or installed (an external server's run)."""
    from magpie_core.plugins import UnknownComponentError

    try:
        return serving_framework(config.framework) if config.framework else None
    except UnknownComponentError:
        return None


def detect_gpus() -> list[Any]:
    """This machine's GPUs, as the vendor plugins report them."""
    from magpie_core.plugins import get_plugin_manager

    return get_plugin_manager().detect_gpus()


def served_model(base_url: str, fallback: str, timeout_s: float = 10.0) -> str:
    """The first model ``/v1/models`` lists (``fallback`` if it cannot say within ``timeout_s``)."""
    try:
        with httpx.Client(timeout=timeout_s) as client:
            data = client.get(base_url + "/v1/models").json().get("data") or []
        return str(data[0]["id"]) if data else fallback
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        return fallback


def server_argv(config: BenchmarkConfig, framework: Any, host: str, port: int, profile_dir: Path | None) -> list[str]:
    """The engine's command line: the plugin's, its profiler flags when profiling, then ``server_args``."""
    argv = list(framework.server_command(config, host, port))
    if profile_dir is not None:
        argv += framework.profiler_args(config, profile_dir)
    return argv + list(config.server_args)


def probe(config: BenchmarkConfig, base_url: str, report: BenchmarkReport) -> str:
    """Check that the server answers before any load (:mod:`magpie_benchmark.loadgen.probe`); the model name to
    send. Its timings go to ``report.server["probe"]``; :class:`ProbeFailed`, logged at once, when it does not."""
    load = config.load
    # the user's timeout bounds every wait, the probe's too (a silent server held `--timeout 5` for 35 s)
    step_s = min(load.probe_timeout_s, config.timeout_seconds)
    log.info("probing %s (each step at most %g s)", base_url, step_s)
    try:
        found = run_in_loop(
            lambda: probe_server(
                base_url,
                config.served_model_name,
                config.model,
                load.endpoint,
                step_s,
                ignore_eos=load.ignore_eos,
                extra_body=load.extra_body or None,
            )
        )
    except ProbeFailed as exc:
        log.error("the server is not answering: %s", exc)
        raise
    report.server["probe"] = found.as_dict()
    for note in found.notes:
        log.warning(note)
    return config.served_model_name or found.listed_model or config.model


def start_server(
    config: BenchmarkConfig, framework: Any, ws: Workspace, lease: GpuLease, profile_dir: Path | None
) -> ServerHandle:
    """Start the framework's server (here, or in a container for ``run_mode: docker``) on ``lease``'s GPUs and wait
    until it is ready; a server that never becomes ready is stopped before the error goes up."""
    host = config.host
    port = config.port or free_port(host)
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    argv = server_argv(config, framework, host, port, profile_dir)
    server_env = {**server_envs(config.envs), **framework.server_env(config, profile_dir), **config.server_env}
    server_env.update(lease.env())
    stop_argv = None
    if config.run_mode == "docker":
        image = config.docker_image or framework.default_image(config.gpu_arch)
        if not image:
            raise ServerError(
                f"no docker_image given and {framework.name!r} has no default for gpu_arch {config.gpu_arch!r}"
            )
        name = container_name(ws.path.name)
        mounts = [ws.path]
        if Path(config.model).exists():
            mounts.append(Path(config.model))
        argv = docker_command(
            image=image,
            inner_argv=argv,
            name=name,
            vendor=vendor_for(config.gpu_arch, lease.vendor),
            devices=lease.indices,
            env=server_env,
            mounts=mounts,
            hf_cache=config.hf_cache_path,
        )
        stop_argv = stop_command(name, int(config.stop_grace_s))
        # secrets travel by name (-e KEY): docker reads their values from its own environment
        env = {**os.environ, **{k: v for k, v in server_env.items() if is_secret(k)}}
    else:
        env = {**os.environ, **server_env}
    proc = ServerProcess(argv, env, ws.path / "server.log", stop_argv=stop_argv)
    info: dict[str, Any] = {"argv": argv, "env": sorted(server_env), "log": str(proc.log_path), "port": port}
    proc.start()
    base_url = f"http://{host}:{port}"
    info["pid"] = proc.pid
    try:
        info["ready_s"] = proc.wait_ready(base_url + framework.readiness_path, config.server_ready_timeout_s)
    except BaseException:
        proc.stop(grace_s=min(config.stop_grace_s, 5.0))  # a server that never became ready is not left behind
        raise
    log.info("server ready in %.1f s at %s", info["ready_s"], base_url)
    return ServerHandle(base_url, proc, info)


def server_for_run(
    config: BenchmarkConfig, framework: Any, ws: Workspace, report: BenchmarkReport, held: Held, diagnose: bool
) -> ServerHandle:
    """The server the load goes to: an external one, a kept one (``server_lifecycle``), or one started now."""
    if config.run_mode == "external":
        return _external_server(config, report, diagnose)
    if config.server_lifecycle and config.server_lifecycle.enabled:
        trace_dir = ws.path / "torch_trace" if diagnose else None
        handle, held.lease, held.kept = lifecycle.acquire(
            config,
            framework,
            lease_gpus=lambda: lease_gpus(config),
            start=lambda cfg, gpus: start_server(cfg, framework, ws, gpus, trace_dir),
            handle_type=ServerHandle,
        )
        report.gpus = held.lease.as_dict() if held.lease else {"how": "reused server"}
        return handle
    held.lease = lease_gpus(config)
    report.gpus = held.lease.as_dict()
    return start_server(config, framework, ws, held.lease, profiler_dir(ws, diagnose))


def give_back(config: BenchmarkConfig, report: BenchmarkReport, held: Held) -> None:
    """The server stopped (a kept one handed back to its lifecycle) and the GPUs released."""
    if held.kept is not None and held.handle is not None:
        lifecycle.finish(config, held.handle, held.kept)
    elif held.handle is not None and held.handle.process is not None:
        grace = min(config.stop_grace_s, INTERRUPT_GRACE_S) if report.interrupted else config.stop_grace_s
        report.server["exit_code"] = held.handle.process.stop(grace)
        report.server["stopped"] = True
    if held.lease is not None:
        held.lease.release()


def _external_server(config: BenchmarkConfig, report: BenchmarkReport, diagnose: bool) -> ServerHandle:
    if not config.base_url:
        raise ServerError("run_mode external needs base_url (--base-url)")
    if diagnose:
        report.errors.append("profiling an external server: its traces stay where that server writes them")
    return ServerHandle(config.base_url.rstrip("/"), None, {"external": True})


def lease_gpus(config: BenchmarkConfig) -> GpuLease:
    """The server's GPUs: pinned ones, or ``TP`` idle ones found by the vendor plugins."""
    gs = config.gpu_selection
    gpus = [] if gs.devices else detect_gpus()
    return select_gpus(
        gpus,
        gs.count or config.env_int("TP") or 1,
        pinned=gs.devices,
        candidates=gs.candidates,
        min_free_memory_gb=gs.min_free_memory_gb,
    )


def profiler_dir(ws: Workspace, diagnose: bool) -> Path | None:
    """Where a profiled server writes its traces (``torch_trace/``); None when the run is not profiled."""
    return ws.path / "torch_trace" if diagnose else None
