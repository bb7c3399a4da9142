#!/usr/bin/env bash
# Issue 28 on the lent H200: the KernelBench bed's verdicts at KernelBench's sizes, the softmax and GEMM
# compares that held before, and the compare speed goal (docs/benchmarks/kernelbench_bed.md).
# Packages the device image lacks travel as wheels in .whl/ (pip download, see that page).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --find-links .whl --target /tmp/site pluggy pydantic typer rich PyYAML msgspec httpx sniffio || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia $(ls -d ./magpie_trace 2>/dev/null) || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$OUT/log.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/log.txt"
case "${1:-bed}" in
  bed)
    MAGPIE_BED_SIZE=${BED_SIZE:-cpu} timeout 540 python3 benchmarks/kernelbench_verdicts.py --rounds "${ROUNDS:-1}" \
      --skip l1_63_conv2d:alternative --out "$OUT/bed_h200" > "$OUT/bed_h200.log" 2>&1
    echo "bed exit $?" | tee -a "$OUT/log.txt"
    ;;
  speed)
    timeout 400 python3 benchmarks/compare_speed.py --gpu --problem l1_23_softmax --out "$OUT/speed_h200" > "$OUT/speed_h200.log" 2>&1
    echo "speed exit $?" | tee -a "$OUT/log.txt"
    ;;
esac
