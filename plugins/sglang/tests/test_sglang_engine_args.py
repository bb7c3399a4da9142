"""Every SGLang server command line magpie builds from AMD Magpie's example configs, fed to SGLang's own
parser (``ServerArgs.add_cli_args``).

Needs an SGLang install (``$MAGPIE_SGLANG_PYTHON`` or ``.venv-sglang``); skipped without one. The parser
imports without a GPU: ``pip install --no-deps sglang`` plus the light modules it imports at load
(numpy, orjson, psutil, pybase64, requests, torch, packaging, pillow, starlette, msgspec, pydantic,
pyzmq, tqdm, IPython, aiohttp, triton) is enough: ``make sglang-venv`` (scripts/setup_sglang_args.sh).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.engine_args import corpus_commands, engine_python, run_check

CHECK = Path(__file__).with_name("sglang_args_check.py")
SGLANG_PYTHON = engine_python("MAGPIE_SGLANG_PYTHON", ".venv-sglang")
#: refusals that are the config's, not magpie's: the config pins an SGLang whose parser differs
#: (it runs lmsysorg/sglang-rocm v0.5.16; 0.5.23 split --cuda-graph-max-bs into -decode/-prefill)
VERSION_SKEW = {"sglang_mi355x/benchmark_sglang_deepseek_v4_pro_mxfp4.yaml": "ambiguous option: --cuda-graph-max-bs"}
#: the endpoints magpie calls on an SGLang server (readiness, profiler, served model, load)
MAGPIE_CALLS = ["/health", "/start_profile", "/stop_profile", "/v1/models", "/v1/completions", "/v1/chat/completions"]

pytestmark = pytest.mark.skipif(
    SGLANG_PYTHON is None, reason="no SGLang python: set MAGPIE_SGLANG_PYTHON or make .venv-sglang"
)


@pytest.fixture(scope="module")
def sglang_answer() -> dict[str, Any]:
    commands = {**corpus_commands("sglang"), "control: unknown flag": ["--model-path", "m", "--no-such-flag"]}
    assert SGLANG_PYTHON is not None
    return run_check(SGLANG_PYTHON, CHECK, commands)


def test_sglang_accepts_every_corpus_command_line(sglang_answer: dict[str, Any]) -> None:
    verdicts = {name: error for name, error in sglang_answer["verdicts"].items() if not name.startswith("control")}
    assert len(verdicts) >= 9, sorted(verdicts)  # the corpus's SGLang configs that start a server
    refused = {name: error for name, error in verdicts.items() if error}
    skewed = {name for name, error in refused.items() if VERSION_SKEW.get(name, "\0") in error}
    assert {name: refused[name] for name in set(refused) - skewed} == {}


def test_the_check_refuses_an_unknown_flag(sglang_answer: dict[str, Any]) -> None:
    assert "--no-such-flag" in sglang_answer["verdicts"]["control: unknown flag"]


def test_sglang_serves_the_endpoints_magpie_calls(sglang_answer: dict[str, Any]) -> None:
    assert set(MAGPIE_CALLS) - set(sglang_answer["routes"]) == set()
