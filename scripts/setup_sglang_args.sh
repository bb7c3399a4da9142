#!/usr/bin/env bash
# Create .venv-sglang: SGLang's package without its GPU stack, enough to import its argument parser
# (ServerArgs.add_cli_args), so magpie's SGLang command lines are checked by SGLang itself
# (plugins/sglang/tests/test_sglang_engine_args.py). Idempotent: a venv whose stamp matches is left as it is.
#   bash scripts/setup_sglang_args.sh            # creates ./.venv-sglang
#   SGLANG_VENV=/path/to/venv bash scripts/setup_sglang_args.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${SGLANG_VENV:-.venv-sglang}
SGLANG_SPEC=${SGLANG_SPEC:-sglang==0.5.23}
STAMP="$VENV/.magpie-sglang-installed"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SGLANG_SPEC" ] && "$VENV/bin/python" -c "import sglang.srt.server_args" 2>/dev/null; then
  echo "setup_sglang_args: $VENV already has $SGLANG_SPEC"
  exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=24"
# --no-deps: SGLang's own dependencies are its GPU runtime; the parser's module imports only these (triton too:
# sglang.srt.utils imports it at load; on CPU it is only imported)
"$VENV/bin/python" -m pip install -q --no-deps "$SGLANG_SPEC"
# constraints.txt pins torch to the CPU build that lies on disk (an unpinned torch pulls a CUDA build)
"$VENV/bin/python" -m pip install -q -c constraints.txt torch numpy orjson psutil pybase64 requests packaging \
  pillow starlette msgspec pydantic pyzmq tqdm ipython aiohttp triton
"$VENV/bin/python" -c "import sglang, sglang.srt.server_args; print('setup_sglang_args: sglang', sglang.__version__)"
echo "$SGLANG_SPEC" > "$STAMP"
