"""Run by vLLM's own python (no magpie imports): each command line of stdin's JSON ``{name: argv}`` parsed
by the parser ``python -m vllm.entrypoints.openai.api_server`` builds, then its pre-start checks; prints
``{"verdicts": {name: null | error}, "routes": [HTTP paths of the API server], "version": ...}``."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from argparse import ArgumentParser, Namespace

import vllm
from vllm.utils.argparse_utils import FlexibleArgumentParser

try:  # vLLM >= 0.3x moved the server's CLI module
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
except ImportError:
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args


def verdict(parser: ArgumentParser, argv: list[str]) -> str | None:
    """None when vLLM accepts ``argv``, else its error (argparse's usage error or a pre-start check's)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            validate_parsed_serve_args(parser.parse_args(argv))
    except SystemExit:
        lines = err.getvalue().strip().splitlines() or ["argparse exit"]
        return next((line for line in lines if "error:" in line), " | ".join(lines[-4:]))
    except Exception as exc:  # a pre-start check raises TypeError/ValueError
        return f"{type(exc).__name__}: {exc}"
    return None


def routes(args: Namespace) -> list[str]:
    """The paths the OpenAI-compatible server registers (the generate task, as for a text model)."""
    from fastapi import FastAPI
    from vllm.entrypoints.launchers.api_server.routers import register_api_routers

    app = FastAPI()
    app.state.args = args  # the profile routes are registered only when the profiler is configured
    register_api_routers(args, app, ("generate",))
    return sorted({getattr(route, "path", "") for route in app.routes})


def main() -> None:
    commands = json.load(sys.stdin)
    parser = make_arg_parser(FlexibleArgumentParser())
    verdicts = {name: verdict(parser, argv) for name, argv in commands.items()}
    args = parser.parse_args(["--model", "m", "--profiler-config", '{"profiler": "torch", "torch_profiler_dir": "/t"}'])
    print(json.dumps({"verdicts": verdicts, "routes": routes(args), "version": vllm.__version__}))


if __name__ == "__main__":
    main()
