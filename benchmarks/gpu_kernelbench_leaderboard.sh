#!/usr/bin/env bash
# Issue 29 on the lent H200: real model-written KernelBench solutions (the v0 leaderboard's, see
# benchmarks/kernelbench_leaderboard/SOURCE.md) through `magpie kernelbench run` and through KernelBench's own rule
# (benchmarks/kernelbench_rule.py), joined by benchmarks/kernelbench_leaderboard_compare.py.
# Packages the device image lacks travel as wheels in .whl/ (run with carry: [".whl"]).
#
# One call fits in BUDGET seconds (default 530): the rule first (its builds run 16 at a time), then magpie with
# what is left. Both results files are appended as they go and both runs skip what is already there, and they
# live in STATE (an ignored folder of the checkout, kept on a warm machine): calling this again resumes.
# Everything (results, logs, the table) is copied to $OUT at the end and after each stage.
set -uo pipefail
START=$SECONDS
BUDGET=${BUDGET:-530}
OUT=${OUT:-/tmp/out}
STATE=${STATE:-magpie_runs/kernelbench_leaderboard}
SET=benchmarks/kernelbench_leaderboard
mkdir -p "$OUT" "$STATE"
LOG="$OUT/log.txt"
left() { echo $((BUDGET - (SECONDS - START))); }
say() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
save() {
  cp -f "$STATE"/*.jsonl "$OUT/" 2>/dev/null
  cp -f "$STATE/magpie_out/kernelbench_summary.json" "$OUT/" 2>/dev/null
  python3 benchmarks/kernelbench_leaderboard_compare.py --magpie "$STATE/magpie.jsonl" --rule "$STATE/rule.jsonl" \
    --manifest "$SET/manifest.json" > "$OUT/table.md" 2>> "$LOG"
}

python3 -m pip install -q --no-index --find-links .whl --target /tmp/site pluggy pydantic typer rich PyYAML msgspec httpx sniffio || exit 1
python3 -c 'import scipy.special' 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl_scipy/scipy-*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia $(ls -d ./magpie_trace 2>/dev/null) || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$LOG"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" | tee -a "$LOG"
nvcc --version | tail -1 | tee -a "$LOG"
# builds for this GPU only; a load_inline build has two compile units
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-2}
say "state in $STATE: $(cat "$STATE"/rule.jsonl 2>/dev/null | wc -l) rule rows, $(cat "$STATE"/magpie.jsonl 2>/dev/null | wc -l) magpie rows"

# (2 of the issue, run first: its builds are parallel) KernelBench's own rule, v0 tolerance (the leaderboard's)
say "rule: start ($(left) s left)"
timeout $(($(left) - 60)) python3 benchmarks/kernelbench_rule.py "$SET/problems" --solutions "$SET/solutions" \
  --out "$STATE/rule.jsonl" --tolerance v0 --jobs 16 --extensions "$STATE/rule_extensions" >> "$OUT/rule.log" 2>&1
say "rule: exit $? ($(wc -l < "$STATE/rule.jsonl" 2>/dev/null || echo 0) rows)"
save

# (1) magpie kernelbench run, at the v0 tolerance (the leaderboard's)
say "magpie: start ($(left) s left)"
timeout $(($(left) - 20)) python3 -m magpie_core kernelbench run "$SET/problems" \
  --solutions "$SET/solutions" --tolerance kernelbench-v0 --results "$STATE/magpie.jsonl" -o "$STATE/magpie_out" --no-html --json \
  > "$OUT/magpie_summary.json" 2>> "$OUT/magpie.log"
say "magpie: exit $? ($(wc -l < "$STATE/magpie.jsonl" 2>/dev/null || echo 0) rows of $(find "$SET/solutions" -name '*.py' | wc -l))"
save
say "done: $OUT/table.md"
