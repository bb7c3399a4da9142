"""A serving framework whose server is magpie's fake streaming server (``magpie_benchmark.loadgen.fake_server``),
and a small benchmark config for it: the benchmark tests of every folder start real servers through it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar

from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.interfaces import ServingFramework


class FakeFramework(ServingFramework):
    name = "fake"
    start_profile_path: ClassVar[str | None] = "/start_profile"
    stop_profile_path: ClassVar[str | None] = "/stop_profile"

    def __init__(self, exit_after_s: float | None = None) -> None:
        self.exit_after_s = exit_after_s

    def server_command(self, config: Any, host: str, port: int) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "magpie_benchmark.loadgen.fake_server",
            "--host",
            host,
            "--port",
            str(port),
            "--ttft-ms",
            "20",
            "--itl-ms",
            "2",
        ]
        return argv + (["--exit-after-s", str(self.exit_after_s)] if self.exit_after_s else [])

    def profiler_args(self, config: Any, profile_dir: Path) -> list[str]:
        return ["--profile-dir", str(profile_dir)]


def config(**kw: Any) -> BenchmarkConfig:
    base = {
        "framework": "fake",
        "model": "fake-model",
        "run_mode": "local",
        "precision": "bf16",
        "envs": {"CONC": 4, "ISL": 16, "OSL": 8, "NUM_PROMPTS": 12, "RANDOM_RANGE_RATIO": 0},
        "load": {"concurrencies": [1, 4], "warmup_requests": 1, "progress": False, "save_requests": True},
        "gpu_selection": {"devices": None},
        "stop_grace_s": 5,
    }
    base.update(kw)
    return BenchmarkConfig.model_validate(base)
