"""EXTRA_*_ARGS split as AMD Magpie's launch scripts split them, and no flag twice on a server command line."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from magpie_benchmark.serving.cli_args import drop_overridden, flag_name, split_extra_args
from magpie_benchmark.serving.framework import FrameworkBase

COMPILATION = '--compilation-config {"mode":3,"cudagraph_mode":"FULL_DECODE_ONLY"}'


def test_json_values_keep_their_quotes() -> None:
    """bash expands an unquoted $EXTRA_VLLM_ARGS without quote removal (shlex.split would strip them)."""
    assert split_extra_args(COMPILATION) == ["--compilation-config", '{"mode":3,"cudagraph_mode":"FULL_DECODE_ONLY"}']


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("", []),
        (None, []),
        ("  \n", []),
        ("--a 1\r\n--b\t'x y'", ["--a", "1", "--b", "'x", "y'"]),  # IFS only; CR dropped as AMD Magpie does
        ("--glob *", ["--glob", "*"]),  # no pathname expansion
        (["--a", 1], ["--a", "1"]),  # a YAML list is taken word for word
    ],
)
def test_split_like_bash_ifs(raw: Any, words: list[str]) -> None:
    assert split_extra_args(raw) == words


@pytest.mark.parametrize(
    ("word", "name"),
    [("--dtype", "--dtype"), ("--max_model_len=9", "--max-model-len"), ("-tp", "-tp"), ("-1", None), ("fp8", None)],
)
def test_flag_name(word: str, name: str | None) -> None:
    assert flag_name(word) == name


def test_extra_args_win_and_the_drop_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    options = [["--dtype", "bfloat16"], ["--max-model-len", "4096"], ["--enforce-eager"]]
    with caplog.at_level(logging.INFO, logger="magpie.serving"):
        kept = drop_overridden(options, ["--dtype", "float16", "--enforce_eager"], "EXTRA_VLLM_ARGS")
    assert kept == ["--max-model-len", "4096"]
    assert "EXTRA_VLLM_ARGS sets --dtype, --enforce-eager itself" in caplog.text


class _Engine(FrameworkBase):
    module = "engine"
    extra_args_env = "EXTRA_VLLM_ARGS"
    enforce_eager_flag = "--enforce-eager"


def _config(extra: str) -> SimpleNamespace:
    envs = {"TP": 1, "EXTRA_VLLM_ARGS": extra}
    return SimpleNamespace(
        model="m",
        run_mode="local",
        server_python="py",
        served_model_name=None,
        dtype=None,
        precision="bf16",
        max_model_len=None,
        framework_options={"enforce_eager": True},
        envs=envs,
        env_int=lambda key: int(envs[key]) if key in envs else None,
        env_float=lambda key: None,
    )


def test_server_command_says_each_flag_once() -> None:
    """AMD Magpie's r9700 configs pass --dtype bfloat16 in EXTRA_VLLM_ARGS while precision says bf16."""
    argv = _Engine().server_command(_config(f"--dtype bfloat16 {COMPILATION}"), "127.0.0.1", 8000)
    flags = [word for word in argv if word.startswith("--")]
    assert len(flags) == len(set(flags))
    assert argv[-4:] == ["--dtype", "bfloat16", *split_extra_args(COMPILATION)]
    assert "--enforce-eager" in argv


def test_host_and_port_stay_magpies() -> None:
    from magpie_benchmark.serving.cli_args import remove_flags

    words = ["--port", "8000", "--dtype", "bfloat16", "--host=0.0.0.0", "--enforce-eager"]
    assert remove_flags(words, {"--host", "--port"}, "EXTRA_VLLM_ARGS") == ["--dtype", "bfloat16", "--enforce-eager"]
