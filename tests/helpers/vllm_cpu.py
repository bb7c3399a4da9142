"""A real vLLM CPU server with the tiny Llama, shared by the tests that need one (see the root conftest).

The server is started exactly as ``magpie benchmark vllm`` would start it (the vllm plugin's argv and
environment, magpie's ``ServerProcess``), bound to 127.0.0.1, and stopped with its process group.
Prefix caching is off: several runs against one server send the same prompts, and a cache would make
the later runs faster for a reason that is not the change under test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = os.environ.get("MAGPIE_VLLM_PYTHON") or str(ROOT / ".venv-vllm" / "bin" / "python")
SERVER_ARGS = ["--no-enable-prefix-caching"]
#: a profile small enough to analyse in seconds: no Python stacks, no key-averages table at stop
LEAN_PROFILER = {"torch_profiler_with_stack": False, "torch_profiler_dump_cuda_time_total": False}


def make_tiny_llama(out: Path) -> Path:
    if not Path(VLLM_PYTHON).exists():
        raise RuntimeError(f"no vLLM python at {VLLM_PYTHON}: run scripts/setup_vllm_cpu.sh (or MAGPIE_VLLM_PYTHON)")
    helper = ROOT / "tests" / "helpers" / "make_tiny_llama.py"
    subprocess.run([VLLM_PYTHON, str(helper), str(out)], check=True, capture_output=True, timeout=300)
    return out


def benchmark_block(model: Path, **overrides: Any) -> dict[str, Any]:
    """The ``benchmark:`` block every test run shares: tiny Llama, concurrency 8, short prompts."""
    block: dict[str, Any] = {
        "framework": "vllm",
        "model": str(model),
        "precision": "bf16",
        "run_mode": "local",
        "run_kind": "measurement",
        "server_python": VLLM_PYTHON,
        "max_model_len": 1024,
        "server_env": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
        "server_args": list(SERVER_ARGS),
        "framework_options": {"enforce_eager": True},
        "envs": {"TP": 1, "CONC": 8, "ISL": 64, "OSL": 16, "RANDOM_RANGE_RATIO": 0.0, "NUM_PROMPTS": 16},
        "load": {"warmup_requests": 2, "progress": False},
        "server_ready_timeout_s": 600,
        "stop_grace_s": 10,
    }
    block.update(overrides)
    return block


@contextmanager
def running_vllm(
    model: Path, log_dir: Path, extra_args: list[str] | None = None, trace_dir: Path | None = None
) -> Iterator[str]:
    """A vLLM CPU server for the ``with`` block; yields its base URL. With ``trace_dir``: the torch profiler
    is configured (idle until ``POST /start_profile``) and writes there, as a profiled magpie run sets it up."""
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.serving.server import ServerProcess, free_port

    from magpie_core.plugins import get_plugin_manager

    block = benchmark_block(model, server_args=[*SERVER_ARGS, *(extra_args or [])])
    block["framework_options"] = {**block["framework_options"], "profiler_config": LEAN_PROFILER}
    config = BenchmarkConfig.model_validate(block)
    framework = get_plugin_manager().get("serving_framework", "vllm")
    port = free_port("127.0.0.1")
    argv = [*framework.server_command(config, "127.0.0.1", port), *config.server_args]
    if trace_dir is not None:
        argv += framework.profiler_args(config, trace_dir)
    env = {**os.environ, **framework.server_env(config, trace_dir), **config.server_env}
    proc = ServerProcess(argv, env, log_dir / f"vllm_{port}.log")
    proc.start()
    try:
        url = f"http://127.0.0.1:{port}"
        proc.wait_ready(url + framework.readiness_path, 600)
        yield url
    finally:
        proc.stop(10)


def run_benchmark_cli(block: dict[str, Any], out_dir: Path, *args: str) -> Path:
    """``magpie benchmark -b <block> -o out_dir ARGS``; the report's path (asserts the run succeeded)."""
    import json
    import sys

    import yaml

    out_dir.mkdir(parents=True, exist_ok=True)
    config = out_dir / "bench.yaml"
    config.write_text(yaml.safe_dump({"benchmark": block}))
    argv = [sys.executable, "-m", "magpie_core", "benchmark", "-b", str(config), "-o", str(out_dir), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    found = sorted(out_dir.glob("benchmark_*/benchmark_report.json"))
    assert done.returncode == 0 and found, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(found[-1].read_text())["success"], found[-1]
    return found[-1]


def run_interleaved_cli(base: dict[str, Any], new: dict[str, Any], out_dir: Path, *args: str) -> list[Path]:
    """``magpie benchmark --interleave BASE.yaml NEW.yaml -o out_dir ARGS``: the two sides' merged reports
    (asserts both measured; the comparison is in the run folder's comparison.json)."""
    import sys

    import yaml

    out_dir.mkdir(parents=True, exist_ok=True)
    configs = []
    for name, block in (("base", base), ("new", new)):
        configs.append(out_dir / f"{name}.yaml")
        configs[-1].write_text(yaml.safe_dump({"benchmark": block}))
    argv = [sys.executable, "-m", "magpie_core", "benchmark", "--interleave", *map(str, configs), "-o", str(out_dir)]
    done = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=1200)
    folders = sorted(out_dir.glob("interleave_*"))
    assert done.returncode in (0, 1) and folders, done.stdout[-3000:] + done.stderr[-3000:]
    reports = [folders[-1] / side / "benchmark_report.json" for side in ("base", "new")]
    assert all(r.is_file() for r in reports), done.stdout[-3000:] + done.stderr[-3000:]
    return reports
