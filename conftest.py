"""Fixtures shared by every test folder (tests/ and each plugin's tests/): running the real
``magpie`` CLI, third-party plugins installed for real, a fake streaming server.

Paths to the shared test data are in :mod:`tests.conftest` (``DATA``, ``ROOT``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
TEST_PLUGINS = ROOT / "tests" / "plugins"

RunMagpie = Callable[..., subprocess.CompletedProcess[str]]

#: session fixtures too costly to build once per pytest-xdist worker (a vLLM server takes ~40 s to start)
SHARED_SERVER_FIXTURES = {"vllm_server", "vllm_aa_reports", "tiny_llama_model"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """For `make test`'s two pytest-xdist workers (``--dist loadgroup``): a file's tests stay together, so its
    module fixtures are built once, and every test of the shared vLLM server runs in one worker (one server)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        group = "vllm_server" if fixtures & SHARED_SERVER_FIXTURES else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


def _run(
    args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "magpie_core", *args],
        env=full_env,
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_magpie() -> RunMagpie:
    """Run the real CLI in a subprocess (so plugin discovery happens as for users)."""
    return _run


@pytest.fixture(scope="session")
def third_party_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pip-install the test plugin packages into a private folder (the venv stays clean).

    Entry points are found through the installed dist-info, exactly as for a
    plugin a user installs from PyPI; put the folder on PYTHONPATH to use it.
    """
    target = tmp_path_factory.mktemp("third_party_site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(TEST_PLUGINS / "example_plugin"),
            str(TEST_PLUGINS / "broken_plugin"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


@pytest.fixture
def fake_stream_server():
    """A local fake OpenAI streaming server (TTFT 5 ms, 1 ms between tokens); yields its base URL."""
    from magpie_benchmark.loadgen.fake_server import running

    with running(ttft_ms=5, itl_ms=1) as url:
        yield url


# --- a real vLLM CPU server, shared by the end-to-end tests (tests/helpers/vllm_cpu.py) ------------------


@pytest.fixture(scope="session")
def tiny_llama_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers.vllm_cpu import make_tiny_llama

    try:
        return make_tiny_llama(tmp_path_factory.mktemp("tiny_llama_shared"))
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def vllm_server(tiny_llama_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """One vLLM CPU server for the session (default settings, prefix caching off, torch profiler configured
    but idle): yields ``.url`` and ``.trace_dir`` (where ``POST /start_profile`` ... ``/stop_profile`` writes)."""
    from types import SimpleNamespace

    from tests.helpers.vllm_cpu import running_vllm

    folder = tmp_path_factory.mktemp("vllm_server")
    with running_vllm(tiny_llama_model, folder, trace_dir=folder / "traces") as url:
        yield SimpleNamespace(url=url, trace_dir=folder / "traces")


@pytest.fixture(scope="session")
def vllm_aa_reports(vllm_server: str, tiny_llama_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """An A/A pair against the shared server: one config measured twice in interleaved rounds
    (``magpie benchmark --interleave a.yaml a.yaml --repeats 5``), the two sides' reports.

    Interleaved, not run one after the other: two runs made apart once differed by 30 % on this machine with
    each run's repeats tight (a state the repeats could not see), and a fixed floor cannot know that; the
    paired rounds measure it. Not at the same time either: two runs loading one server together are each
    other's load.
    """
    from tests.helpers.vllm_cpu import benchmark_block, run_benchmark_cli, run_interleaved_cli

    out = tmp_path_factory.mktemp("vllm_aa")
    block = benchmark_block(tiny_llama_model, run_mode="external", base_url=vllm_server.url)
    # a cold CPU server speeds up over its first ~50 requests (a fresh clone's first run: 53, 69, 82 req/s, then
    # ~120 in the next run): one unmeasured run first, so the pair compares a warm server with itself
    run_benchmark_cli(block, out / "warmup", "--repeats", "3")
    # The verdict's intervals hold jointly at 95%: chance may call an A/A pair, at most 1 time in 20 (measured: about
    # 1 in 100 under injected load, docs/benchmarks/benchmark_noise.md). A pair called is measured once more: a fault
    # that favours one side calls the second pair too, while chance calls both at most 1 time in 400.
    for attempt in range(2):
        reports = run_interleaved_cli(block, block, out / f"aa{attempt}", "--repeats", "5")
        comparison = json.loads((reports[0].parents[1] / "comparison.json").read_text())
        if comparison["verdict"] == "WITHIN NOISE":
            break
        warnings.warn(
            f"A/A pair called {comparison['verdict']} (attempt {attempt + 1}): {reports[0].parents[1]}", stacklevel=1
        )
    return reports
