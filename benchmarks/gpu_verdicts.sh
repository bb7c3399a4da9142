#!/usr/bin/env bash
# Verdicts on a busy GPU machine (issue: interleaved blocks), on the lent H200:
#   benchmarks/gpu_verdicts.sh softmax    # examples/softmax/compare_gpu.yaml: quiet, CPU load, GPU hog
#   benchmarks/gpu_verdicts.sh aa         # benchmarks/verdicts_under_load.py on cuda: quiet, CPU load, GPU hog
# Packages the device image lacks travel as wheels in .whl/ (pydantic, msgspec, ...).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
  ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$OUT/log.txt"
case "${1:-softmax}" in
  softmax)
    python3 -m magpie_core -o /tmp/runs compare -k examples/softmax/compare_gpu.yaml --json > "$OUT/softmax_quiet.json" 2>>"$OUT/log.txt"
    echo "quiet exit $?" | tee -a "$OUT/log.txt"
    python3 - "$OUT/softmax_cpu_load.json" <<'PY' 2>>"$OUT/log.txt"
import subprocess, sys
sys.path.insert(0, ".")
from tests.helpers.load_injector import injected_load
with injected_load(), open(sys.argv[1], "w") as out:
    code = subprocess.call([sys.executable, "-m", "magpie_core", "-o", "/tmp/runs", "compare", "-k",
                            "examples/softmax/compare_gpu.yaml", "--json"], stdout=out)
print("cpu load exit", code, file=sys.stderr)
PY
    python3 benchmarks/gpu_hog.py --seconds 500 & HOG=$!
    sleep 5
    python3 -m magpie_core -o /tmp/runs compare -k examples/softmax/compare_gpu.yaml --json > "$OUT/softmax_gpu_hog.json" 2>>"$OUT/log.txt"
    echo "gpu hog exit $?" | tee -a "$OUT/log.txt"
    kill $HOG
    ;;
  aa)
    export MAGPIE_VERDICT_N=2048
    python3 benchmarks/verdicts_under_load.py --device cuda --runs 5 --budget 1 --quiet --out "$OUT/verdicts_cuda.json" 2>&1 | tail -3
    python3 benchmarks/verdicts_under_load.py --device cuda --runs 5 --budget 1 --load --out "$OUT/verdicts_cuda.json" 2>&1 | tail -3
    python3 benchmarks/verdicts_under_load.py --device cuda --runs 5 --budget 1 --quiet --gpu-hog --out "$OUT/verdicts_cuda.json" 2>&1 | tail -3
    ;;
esac
