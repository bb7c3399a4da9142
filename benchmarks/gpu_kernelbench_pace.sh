#!/usr/bin/env bash
# Issue 45 on a lent GPU host: benchmarks/kernelbench_pace.py (the build wave, magpie vs a plain script, and
# `magpie kernelbench run` end to end on the first N leaderboard solutions).
#   benchmarks/gpu_kernelbench_pace.sh [kernelbench_pace.py arguments]   # e.g. --first 50 --skip-wave
# Run with carry: [".whl", ".whl_scipy" (where the image lacks SciPy), "benchmarks/kernelbench_pace/problems", "benchmarks/kernelbench_pace/solutions"]
# (packages the device image lacks travel as wheels; the solutions are fetched by benchmarks/kernelbench_pace/fetch.py).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --find-links .whl --target /tmp/site pluggy pydantic typer rich PyYAML msgspec httpx sniffio || exit 1
export PYTHONPATH=/tmp/site
python3 -c 'import scipy.special' 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl_scipy/scipy-*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$OUT/log.txt"
python3 -c "import torch, os; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cpus', os.cpu_count())" | tee -a "$OUT/log.txt"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
python3 benchmarks/kernelbench_pace.py --out "$OUT/pace" "$@" 2>&1 | tail -60
