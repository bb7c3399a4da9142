#!/usr/bin/env bash
# GPU verification of the CUDA backend and the Nsight Compute profiler, on the lent H200:
#   benchmarks/gpu_verify_cuda.sh
# 1. analyze + compare of examples/cuda_matmul (naive vs shared-memory tiled, fp32 2048^3) with
#    device-event timing;
# 2. the same compare with performance.backend: ncu (events still time and rank; ncu counters
#    come from a separate 5-launch run of each kernel);
# 3. the raw `ncu --csv --page raw` exports, to commit as parser test data.
# Writes at most 6 files to $OUT (flat). Packages the device image lacks travel as wheels in .whl/.
set -uo pipefail
OUT=${OUT:-/tmp/out}
RUNS=/tmp/runs_cuda
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
  ./ ./plugins/pytorch ./plugins/cuda ./plugins/profilers_nvidia ./plugins/gpu_nvidia || exit 1
log() { echo "$*" | tee -a "$OUT/log.txt"; }
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  nvcc --version | tail -2
  ncu --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -m magpie_core gpu-info
} 2>&1 | tee -a "$OUT/log.txt"

python3 -m magpie_core -o "$RUNS" analyze -k examples/cuda_matmul/compare.yaml --json \
  > "$OUT/cuda_analyze_events.json" 2>>"$OUT/log.txt"
log "analyze (events) exit $?"
python3 -m magpie_core -o "$RUNS" compare -k examples/cuda_matmul/compare.yaml --json \
  > "$OUT/cuda_compare_events.json" 2>>"$OUT/log.txt"
log "compare (events) exit $?"
python3 -m magpie_core -o "$RUNS" compare -k examples/cuda_matmul/compare_ncu.yaml --json \
  > "$OUT/cuda_compare_ncu.json" 2>>"$OUT/log.txt"
log "compare (ncu) exit $?"

# Raw ncu exports of the ncu compare (one per kernel), and a summary in the log.
for kid in naive tiled; do
  csv=$(ls -t "$RUNS"/compare_*/"$kid"/profile_ncu/ncu_raw.csv 2>/dev/null | head -1)
  if [ -n "$csv" ]; then cp "$csv" "$OUT/ncu_raw_$kid.csv"; else log "no ncu_raw.csv for $kid"; fi
  tail -5 "$RUNS"/compare_*/"$kid"/profile_ncu/ncu.log 2>/dev/null | tee -a "$OUT/log.txt"
done
python3 - "$OUT" <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for name in ("cuda_compare_events.json", "cuda_compare_ncu.json"):
    path = out / name
    if not path.exists() or not path.read_text().strip():
        print(name, "missing"); continue
    report = json.loads(path.read_text())
    print(name, "|", report.get("verdict"))
    for r in report["results"]["kernel_results"]:
        t = r["performance"].get("timing") or {}
        print(f"  {r['kernel_id']}: compile {r['compile']['status']} regs/smem "
              f"{r['compile']['resources'].get('max_registers')}/{r['compile']['resources'].get('max_shared_memory_bytes')}"
              f" | correctness {r['correctness']['status']} | median {t.get('median')} us CI {t.get('ci95_low')}-{t.get('ci95_high')}")
        for c in r["performance"].get("counters", []):
            print(f"    ncu {c['kernel_name'][:40]} x{c['invocations']}: {c['time_us']} us, read {c['dram_read_bytes']} B,"
                  f" write {c['dram_write_bytes']} B, flops {c['flops']}, AI {c['arithmetic_intensity']},"
                  f" peak {c['pct_of_peak']}, occupancy {c['achieved_occupancy_pct']}")
        for n in r["performance"].get("notes", []):
            print("    note:", n)
PY
