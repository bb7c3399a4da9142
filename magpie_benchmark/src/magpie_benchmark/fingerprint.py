"""The identity of a benchmark run: what it measured (``workload``) and what it measured it on (``system``).

``benchmark_report.json`` carries ``fingerprint`` with two groups:

* ``workload`` — must match for two runs to be compared: the prompts (a hash of every prompt sent,
  per load point, and their token lengths), sampling (output lengths, ``ignore_eos``, extra request
  fields), the load (concurrency, rate, burstiness, request counts), SLOs, the model (id and
  revision), the tokenizer, the hardware (GPU models and count, clocks where the vendor plugin
  reports them, CPU model) and magpie's version;
* ``system`` — the system under test, which a compare is about (listed, never blocking): serving
  framework and engine version, server arguments and environment (secrets removed), container image
  and digest, run mode, whether a profiler was attached, GPU driver.

Nothing here may fail a run: every probe has a short timeout and records ``unknown`` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from magpie_core import __version__

FINGERPRINT_VERSION = 1
#: names of settings whose values are never recorded (environment keys, ``--flag`` names)
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API[_-]?KEY|ACCESS[_-]?KEY|CREDENTIAL|AUTH|PRIVATE", re.IGNORECASE)
REDACTED = "<redacted>"
#: files of a local model folder hashed whole for its revision (weights: names and sizes only)
MODEL_META_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "merges.txt")


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the values of secret-looking keys replaced."""
    return {k: (REDACTED if SECRET_NAME.search(k) else str(v)) for k, v in sorted(env.items())}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value after (or in) a secret-looking ``--flag`` replaced."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif arg.startswith("-") and SECRET_NAME.search(arg.split("=", 1)[0]):
            out.append(f"{arg.split('=', 1)[0]}={REDACTED}" if "=" in arg else arg)
            hide_next = "=" not in arg
        else:
            out.append(arg)
    return out


def prompt_digest(requests: Sequence[Any]) -> dict[str, Any]:
    """Hash and token lengths of the prompts one load point sent (``SampleRequest`` objects)."""
    h = hashlib.sha256()
    for r in requests:
        h.update(json.dumps([r.prompt, r.expected_output_len], sort_keys=True).encode())
    lens = [int(r.prompt_len) for r in requests]
    outs = [int(r.expected_output_len) for r in requests]
    return {
        "sha256": h.hexdigest(),
        "count": len(lens),
        "input_tokens": _lengths(lens),
        "output_tokens": _lengths(outs),
    }


def merge_digests(digests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One digest for the prompts of several repeats of a load point."""
    if len(digests) == 1:
        return digests[0]
    h = hashlib.sha256("".join(d["sha256"] for d in digests).encode()).hexdigest()
    return {"sha256": h, "repeats": len(digests), "per_repeat": [{k: v for k, v in d.items()} for d in digests]}


def _lengths(values: Sequence[int]) -> dict[str, Any]:
    if not values:
        return {"total": 0}
    return {"total": sum(values), "min": min(values), "max": max(values), "mean": round(sum(values) / len(values), 3)}


def _file_hash(paths: Sequence[Path]) -> str | None:
    h = hashlib.sha256()
    found = False
    for p in paths:
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes())
            found = True
    return h.hexdigest()[:16] if found else None


def model_identity(config: Any) -> dict[str, Any]:
    """Model id and revision: a local folder's metadata hash and weight names/sizes, else the pinned revision."""
    pinned = config.framework_options.get("revision") or _flag_value(config.server_args, "--revision")
    path = Path(config.model) if config.model else None
    if path is not None and path.is_dir():
        h = hashlib.sha256((_file_hash([path / f for f in MODEL_META_FILES]) or "").encode())
        for f in sorted(path.iterdir()):
            if f.is_file() and f.suffix in (".safetensors", ".bin", ".pt", ".gguf"):
                h.update(f"{f.name}:{f.stat().st_size}".encode())
        return {"id": path.name, "revision": pinned or f"local:{h.hexdigest()[:16]}"}
    return {"id": config.model or None, "revision": pinned or "unpinned"}


def tokenizer_identity(config: Any, tokenizer: Any) -> dict[str, Any]:
    name = config.tokenizer or config.model or None
    folder = Path(name) if name else None
    out: dict[str, Any] = {"name": folder.name if folder is not None and folder.is_dir() else name}
    if folder is not None and folder.is_dir():
        out["hash"] = _file_hash([folder / f for f in TOKENIZER_FILES])
    out["vocab_size"] = getattr(tokenizer, "vocab_size", None)
    out["loaded"] = tokenizer is not None
    return out


def _flag_value(argv: Sequence[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def engine_version(framework: Any, base_url: str) -> str | None:
    """The engine's version from its server (the framework's ``version_path``), or None."""
    path = getattr(framework, "version_path", None)
    if not path:
        return None
    try:
        with httpx.Client(timeout=5.0) as client:
            data = client.get(base_url + path).json()
        return str(data.get("version")) if isinstance(data, dict) and data.get("version") else None
    except (httpx.HTTPError, ValueError):
        return None


def image_digest(image: str | None) -> dict[str, Any] | None:
    """The container image and its repo digest (``unknown`` with the reason when it cannot be read)."""
    if not image:
        return None
    try:
        out = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .RepoDigests}} {{.Id}}", image],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"name": image, "digest": f"unknown ({type(exc).__name__})"}
    if out.returncode != 0:
        return {"name": image, "digest": f"unknown ({out.stderr.strip()[:120]})"}
    digests, _, image_id = out.stdout.strip().partition(" ")
    try:
        repo = json.loads(digests) or []
    except ValueError:
        repo = []
    return {"name": image, "digest": repo[0] if repo else image_id or "unknown"}


def hardware(report: Any, gpus: Sequence[Any]) -> dict[str, Any]:
    """GPU models, count and clocks (what the vendor plugins report) of the run's devices, and the CPU."""
    devices = set((report.gpus or {}).get("devices") or [])
    used = [g for g in gpus if getattr(g, "index", None) in devices] if devices else []
    extra = [getattr(g, "model_extra", None) or {} for g in used]
    return {
        "gpu_count": len(used),
        "gpu_models": sorted({str(getattr(g, "name", "")) for g in used}),
        "gpu_clocks": [e.get("clocks") for e in extra] if any(e.get("clocks") for e in extra) else "unknown",
        "cpu": {"model": _cpu_model(), "count": os.cpu_count(), "machine": platform.machine()},
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


#: keys of a report's load point that define its load (``prompts`` is the first repeat's digest)
POINT_KEYS = ("concurrency", "request_rate", "burstiness", "input_len", "output_len", "range_ratio", "num_prompts")


def benchmark_fingerprint(
    config: Any,
    report: Any,
    *,
    framework: Any | None,
    tokenizer: Any,
    gpus: Sequence[Any],
    engine: str | None,
) -> dict[str, Any]:
    """``fingerprint`` of a benchmark report (see the module docstring)."""
    points = [{**{k: p.get(k) for k in POINT_KEYS}, "prompts": p.get("prompts")} for p in report.points]
    dataset = config.dataset
    workload = {
        "model": model_identity(config),
        "tokenizer": tokenizer_identity(config, tokenizer),
        "dataset": {
            "name": dataset.name,
            "seed": dataset.seed,
            "prefix_len": dataset.prefix_len,
            "file": _file_hash([Path(dataset.path)]) if dataset.path else None,
        },
        "sampling": {
            "endpoint": config.load.endpoint,
            "ignore_eos": config.load.ignore_eos,
            "extra_body": json.dumps(config.load.extra_body, sort_keys=True, default=str),
        },
        "load": {"points": points},
        "slo": config.slo.model_dump(),
        "hardware": hardware(report, gpus),
        "magpie_version": __version__,
    }
    if dataset.name == "trace":  # replay timing is part of the workload (the prompts digest holds the texts)
        workload["load"]["trace"] = config.load.trace.model_dump()
    return {"version": FINGERPRINT_VERSION, "workload": workload, "system": _system(config, report, framework, engine)}


def _system(config: Any, report: Any, framework: Any | None, engine: str | None) -> dict[str, Any]:
    external = config.run_mode == "external"
    args: Any = "unknown (external server)"
    env: Any = "unknown (external server)"
    if framework is not None and not external:
        args = redact_argv([*framework.server_command(config, config.host, 0), *config.server_args])
        env = redact_env({**framework.server_env(config, None), **config.server_env})
    used = set((report.gpus or {}).get("devices") or [])
    return {
        "framework": config.framework,
        "engine_version": engine or "unknown",
        "run_mode": config.run_mode,
        "precision": config.precision,
        "server_args": args,
        "server_env": env,
        "image": image_digest(config.docker_image) if config.run_mode == "docker" else None,
        "profiler_attached": bool(report.profiling_enabled and not external),
        "gpu_devices": sorted(used),
    }
