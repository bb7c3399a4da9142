"""Run by SGLang's own python (no magpie imports): each command line of stdin's JSON ``{name: argv}``
parsed by the parser ``python -m sglang.launch_server`` builds (``ServerArgs.add_cli_args``); prints
``{"verdicts": {name: null | error}, "routes": [paths in sglang/srt/entrypoints/http_server.py], ...}``.

Only argparse runs: ``ServerArgs.__post_init__`` probes the GPU and the model, which a check cannot have.
The routes are read from the server's source (importing it needs the full serving stack).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from sglang.srt.server_args import ServerArgs

#: ``@app.get("/health")``, ``@app.api_route("/start_profile", ...)``
ROUTE = re.compile(r'@app\.(?:get|post|put|delete|api_route)\(\s*"([^"]+)"')


def verdict(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """None when SGLang's parser accepts ``argv``, else argparse's error line."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except SystemExit:
        lines = err.getvalue().strip().splitlines() or ["argparse exit"]
        return next((line for line in lines if "error:" in line), lines[-1])
    return None


def routes() -> list[str]:
    spec = find_spec("sglang.srt.entrypoints.http_server")
    assert spec is not None and spec.origin is not None
    return sorted(set(ROUTE.findall(Path(spec.origin).read_text())))


def main() -> None:
    commands = json.load(sys.stdin)
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    verdicts = {name: verdict(parser, argv) for name, argv in commands.items()}
    print(json.dumps({"verdicts": verdicts, "routes": routes(), "version": metadata.version("sglang")}))


if __name__ == "__main__":
    main()
