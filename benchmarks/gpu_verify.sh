#!/usr/bin/env bash
# GPU verification of kernel evaluation, run on the lent H200 in two phases:
#   benchmarks/gpu_verify.sh compare     # softmax and GEMM comparisons, each twice
#   benchmarks/gpu_verify.sh crosscheck  # magpie vs do_bench vs ncu vs naive single-launch events
# Packages the device image lacks travel as wheels in .whl/ (docs/benchmarks/kernel_timing.md).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$OUT/log.txt"
case "${1:-compare}" in
  compare)
    python3 -m magpie_core gpu-info 2>&1 | tee -a "$OUT/log.txt"
    for i in 1 2; do
      python3 -m magpie_core -o /tmp/runs compare -k examples/softmax/compare_gpu.yaml --json > "$OUT/softmax_$i.json" 2>>"$OUT/log.txt"
      echo "softmax run $i exit $?" | tee -a "$OUT/log.txt"
      python3 -m magpie_core -o /tmp/runs compare -k examples/gemm/compare_gpu.yaml --json > "$OUT/gemm_$i.json" 2>>"$OUT/log.txt"
      echo "gemm run $i exit $?" | tee -a "$OUT/log.txt"
    done
    ;;
  crosscheck)
    python3 benchmarks/kernel_timing_crosscheck.py --out "$OUT/crosscheck.json" 2>&1 | tail -30 | tee -a "$OUT/log.txt"
    ;;
esac
