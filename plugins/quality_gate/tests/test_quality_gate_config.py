"""Which runs ask for the gate, what it runs (``quality_gate:`` and AMD Magpie's ``envs`` keys), and the clear
stop when lm-eval is not there (a real python without it: a fresh venv, nothing mocked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from magpie_benchmark.interfaces import CheckUnavailable
from magpie_benchmark.run_config import load_benchmark_config
from magpie_quality_gate import config as cfg
from magpie_quality_gate.gate import LmEvalGate, command

from magpie_core.config.loader import ConfigError

DATA = Path(__file__).parent / "data"


def _bench(tmp_path: Path, envs: dict[str, Any] | None = None, **keys: Any) -> Path:
    block = {"framework": "vllm", "model": "m", "run_mode": "external", "base_url": "http://127.0.0.1:9"}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"benchmark": {**block, "envs": envs or {"CONC": 4}, **keys}}))
    return path


def test_amd_magpie_envs_switch_the_gate_on_with_their_meanings(tmp_path: Path) -> None:
    envs = {
        "CONC": 4,
        "RUN_EVAL": "true",
        "MAGPIE_EVAL_TASKS": "gsm8k, arc_easy",
        "MAGPIE_EVAL_LIMIT": "50",
        "MAGPIE_EVAL_MAX_LENGTH": "2248",
        "MAGPIE_EVAL_MAX_GEN_TOKENS": "480",
        "MAGPIE_EVAL_PRIMARY_METRIC": "exact_match,strict-match",
        "MAGPIE_EVAL_BATCH_SIZE": "auto",
        "EVAL_CONCURRENT_REQUESTS": "3",
    }
    config = load_benchmark_config(_bench(tmp_path, envs))
    assert cfg.wanted(config)
    s = cfg.settings(config)
    assert (s.key, s.tasks, s.endpoint, s.num_concurrent) == ("envs.RUN_EVAL", ["gsm8k", "arc_easy"], "chat", 3)
    b = s.block
    assert (b.limit, b.max_length, b.max_gen_tokens, b.batch_size) == (50, 2248, 480, 1)
    assert b.primary_metric == "exact_match,strict-match" and s.python == sys.executable
    target = type("T", (), {"base_url": "http://127.0.0.1:9/", "model": "m"})()
    argv = command(s, target, tmp_path / "out")  # AMD Magpie's evaluator: chat completions, chat template, greedy
    assert argv[argv.index("--model") + 1] == "local-chat-completions" and "--apply_chat_template" in argv
    assert "base_url=http://127.0.0.1:9/v1/chat/completions" in argv[argv.index("--model_args") + 1]
    assert "max_length=2248" in argv[argv.index("--model_args") + 1]
    assert argv[argv.index("--gen_kwargs") + 1] == "max_tokens=480,temperature=0,top_p=1"
    assert argv[argv.index("--limit") + 1] == "50" and argv[argv.index("--tasks") + 1] == "gsm8k,arc_easy"


def test_run_eval_alone_runs_magpie_default_task_and_the_block_wins(tmp_path: Path) -> None:
    alone = cfg.settings(load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": True, "MAGPIE_EVAL_LIMIT": 5})))
    assert alone.tasks == ["gsm8k"] and alone.num_concurrent == 32  # envs CONC's default, as AMD Magpie
    block = {"tasks": "a,b", "limit": 2, "endpoint": "completions", "thresholds": {"a": {"acc": 0.5}}}
    both = cfg.settings(
        load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": True, "MAGPIE_EVAL_LIMIT": 5}, quality_gate=block))
    )
    assert (both.key, both.tasks, both.block.limit, both.endpoint) == ("quality_gate", ["a", "b"], 2, "completions")
    assert both.thresholds["a"]["acc"].min == 0.5
    off = load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": "false"}))
    assert not cfg.wanted(off)
    assert not cfg.wanted(load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": True}, quality_gate={"enabled": False})))


def test_block_typos_and_bad_envs_values_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="threshold"):
        load_benchmark_config(_bench(tmp_path, quality_gate={"tasks": ["x"], "threshold": {}}))
    config = load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": "1", "MAGPIE_EVAL_LIMIT": "many"}))
    with pytest.raises(CheckUnavailable, match=r"envs\.MAGPIE_EVAL_LIMIT: 'many' is not a float"):
        cfg.settings(config)


@pytest.fixture(scope="module")
def python_without_lm_eval(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real python in which lm-eval is not installed: a fresh venv of the same interpreter."""
    folder = tmp_path_factory.mktemp("no_lm_eval")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=120)
    return str(folder / "venv" / "bin" / "python")


def test_lm_eval_missing_is_a_clear_error_naming_the_key_and_the_install(
    tmp_path: Path, python_without_lm_eval: str, run_magpie: Any
) -> None:
    config = load_benchmark_config(_bench(tmp_path, {"RUN_EVAL": "true", "MAGPIE_EVAL_PYTHON": python_without_lm_eval}))
    with pytest.raises(CheckUnavailable) as err:
        LmEvalGate().preflight(config)
    assert err.value.key == "envs.RUN_EVAL"
    assert "pip install 'magpie-quality-gate[lm-eval]'" in str(err.value) and python_without_lm_eval in str(err.value)
    block = _bench(tmp_path, quality_gate={"tasks": ["x"], "python": python_without_lm_eval})
    done = run_magpie(["benchmark", "-b", str(block), "-o", str(tmp_path / "out")], timeout=300)
    assert done.returncode == 2, done.stderr
    assert "quality_gate: lm-eval" in done.stderr and "magpie-quality-gate[lm-eval]" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()  # stopped before anything ran


def test_run_eval_without_the_plugin_is_refused_naming_the_install(tmp_path: Path, run_magpie: Any) -> None:
    path = _bench(tmp_path, {"RUN_EVAL": "true"})
    done = run_magpie(
        ["benchmark", "-b", str(path), "-o", str(tmp_path / "out")], env={"MAGPIE_PLUGINS": "benchmark,vllm,local"}
    )
    assert done.returncode == 2 and "RUN_EVAL" in done.stderr and "bench.yaml" in done.stderr
    assert "magpie-quality-gate[lm-eval]" in done.stderr.replace("\n", "")
