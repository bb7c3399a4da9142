#!/usr/bin/env bash
# GPU checks of issue 19 (AMD Magpie compatibility), run on the lent H200. Reads only: it never
# changes a GPU setting (no -pl, -lgc, -lmc, -pm, no reset). Writes into $OUT:
#   nvidia_smi_hardware.csv      raw `nvidia-smi --query-gpu=<magpie's HARDWARE_QUERY>` (the recorded
#                                output the fake nvidia-smi of plugins/gpu_nvidia/tests replays)
#   nvidia_smi_hardware_i0.csv   the same for `-i 0`
#   hardware_record.json         magpie_core.machine.hardware.record() there (what every report embeds)
#   latency_analyze.json         `magpie analyze -k examples/latency_protocol/analyze_cuda.yaml --json`
#   latency_direct.txt           the CUDA testcase run directly three times (its marker lines)
#   log.txt                      everything else
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site ./ ./plugins/gpu_nvidia ./plugins/cuda ./plugins/pytorch 2>&1 | tail -3
Q=$(python3 -c "from magpie_gpu_nvidia.plugin import HARDWARE_QUERY; print(HARDWARE_QUERY)")
nvidia-smi --query-gpu="$Q" --format=csv,noheader,nounits > "$OUT/nvidia_smi_hardware.csv" 2>>"$OUT/log.txt"
echo "query exit $?" >> "$OUT/log.txt"
nvidia-smi -i 0 --query-gpu="$Q" --format=csv,noheader,nounits > "$OUT/nvidia_smi_hardware_i0.csv" 2>>"$OUT/log.txt"
nvidia-smi --query-gpu=name,driver_version,persistence_mode,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$OUT/log.txt"
python3 -c "import json; from magpie_core.machine.hardware import record; print(json.dumps(record(), indent=2))" \
  > "$OUT/hardware_record.json" 2>>"$OUT/log.txt"
python3 -m magpie_core gpu-info >> "$OUT/log.txt" 2>&1
python3 -m magpie_core -o /tmp/runs analyze -k examples/latency_protocol/analyze_cuda.yaml --json \
  > "$OUT/latency_analyze.json" 2>>"$OUT/log.txt"
echo "analyze exit $?" >> "$OUT/log.txt"
bin=$(ls -d /tmp/runs/analyze_*/vector_scale_cuda/vector_scale 2>/dev/null | head -1)
for i in 1 2 3; do "$bin" >> "$OUT/latency_direct.txt" 2>&1; echo "direct run $i exit $?" >> "$OUT/latency_direct.txt"; done
nvidia-smi --query-gpu="$Q" --format=csv,noheader,nounits >> "$OUT/log.txt" 2>&1
