"""Server command lines magpie builds from AMD Magpie's example configs, checked by the engine's own parser.

The configs are the vendored corpus (``tests/data/magpie_configs``, upstream commits in its MANIFEST.md).
Each command line is what :func:`magpie_benchmark.benchmark_server.server_argv` gives for a profiled run when
the config turns the torch profiler on (so ``--profiler-config`` is checked too), without the
``python -m <module>`` head. The check runs in a subprocess of the engine's python: the engines are
not installed in magpie's environment.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from magpie_benchmark.benchmark_server import server_argv, serving_framework
from magpie_benchmark.config import SERVER_STARTING_MODES
from magpie_benchmark.run_config import load_benchmark_config

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "magpie_configs" / "benchmarks"
PROFILE_DIR = Path("/tmp/magpie-profile")


def corpus_commands(framework: str) -> dict[str, list[str]]:
    """``{config file: engine argv}`` for every corpus config of ``framework`` whose server magpie starts."""
    commands: dict[str, list[str]] = {}
    for path in sorted(CORPUS.rglob("*.yaml")):
        config = load_benchmark_config(path)
        if config.framework != framework or config.base_url or config.run_mode not in SERVER_STARTING_MODES:
            continue
        profile_dir = PROFILE_DIR if config.profiler.torch_profiler.enabled else None
        argv = server_argv(config, serving_framework(framework), "127.0.0.1", 8000, profile_dir)
        commands[str(path.relative_to(CORPUS))] = argv[3:]  # drop "python -m <module>"
    return commands


def engine_python(env_var: str, venv: str) -> Path | None:
    """The engine's python: ``$<env_var>``, else ``<repo>/<venv>/bin/python``; None when neither exists."""
    python = Path(os.environ.get(env_var) or ROOT / venv / "bin" / "python")
    return python if python.exists() else None


def run_check(python: Path, script: Path, commands: dict[str, list[str]], timeout_s: float = 120) -> dict:
    """The JSON ``script`` prints after reading ``commands`` on stdin, run by the engine's ``python``."""
    done = subprocess.run(
        [str(python), str(script)],
        input=json.dumps(commands),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
