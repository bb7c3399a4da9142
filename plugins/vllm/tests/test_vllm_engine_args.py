"""Every vLLM server command line magpie builds from AMD Magpie's example configs, fed to vLLM's own parser.

Needs a vLLM install (``$MAGPIE_VLLM_PYTHON`` or ``.venv-vllm``, as ``scripts/setup_vllm_cpu.sh`` makes);
skipped without one. One subprocess answers every check (importing vLLM takes seconds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from magpie_benchmark.serving.cli_args import split_extra_args

from tests.helpers.engine_args import corpus_commands, engine_python, run_check

CHECK = Path(__file__).with_name("vllm_args_check.py")
VLLM_PYTHON = engine_python("MAGPIE_VLLM_PYTHON", ".venv-vllm")
JSON_ARG = '{"mode":3,"cudagraph_mode":"FULL_DECODE_ONLY"}'
#: the endpoints magpie calls on a vLLM server (readiness, profiler, metrics, version, model, load)
MAGPIE_CALLS = ["/health", "/start_profile", "/stop_profile", "/metrics", "/version", "/v1/models", "/v1/completions"]

pytestmark = pytest.mark.skipif(
    VLLM_PYTHON is None, reason="no vLLM python: set MAGPIE_VLLM_PYTHON or run scripts/setup_vllm_cpu.sh (.venv-vllm)"
)


@pytest.fixture(scope="module")
def vllm_answer() -> dict[str, Any]:
    commands = corpus_commands("vllm")
    # controls: what the old shlex split made of AMD Magpie's JSON argument must be refused
    commands["control: quotes stripped"] = ["--model", "m", "--compilation-config", JSON_ARG.replace('"', "")]
    commands["control: unknown flag"] = ["--model", "m", "--no-such-flag"]
    assert VLLM_PYTHON is not None
    return run_check(VLLM_PYTHON, CHECK, commands)


def test_vllm_accepts_every_corpus_command_line(vllm_answer: dict[str, Any]) -> None:
    verdicts = {name: error for name, error in vllm_answer["verdicts"].items() if not name.startswith("control")}
    assert len(verdicts) >= 25, sorted(verdicts)  # the corpus's vLLM configs that start a server
    assert {name: error for name, error in verdicts.items() if error} == {}


def test_the_check_refuses_bad_command_lines(vllm_answer: dict[str, Any]) -> None:
    assert vllm_answer["verdicts"]["control: quotes stripped"]
    assert "--no-such-flag" in vllm_answer["verdicts"]["control: unknown flag"]


def test_json_extra_args_reach_vllm_intact() -> None:
    command = corpus_commands("vllm")["benchmark_vllm_deepseek_v4_pro.yaml"]
    assert command[command.index("--compilation-config") + 1] == JSON_ARG
    assert split_extra_args(f"--compilation-config {JSON_ARG}")[1] == JSON_ARG


def test_no_flag_twice(vllm_answer: dict[str, Any]) -> None:
    for name, argv in corpus_commands("vllm").items():
        flags = [word.split("=", 1)[0] for word in argv if word.startswith("--")]
        assert len(flags) == len(set(flags)), (name, argv)


def test_vllm_serves_the_endpoints_magpie_calls(vllm_answer: dict[str, Any]) -> None:
    assert set(MAGPIE_CALLS) - set(vllm_answer["routes"]) == set()
