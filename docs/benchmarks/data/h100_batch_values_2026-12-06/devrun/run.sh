#!/usr/bin/env bash
# this session's device checks (not committed): the catalogue on the per-batch values, graph replay, CUDA-graph
# static outputs, the output-memory cap
set -uo pipefail
OUT=${OUT:-/tmp/out}; ROOT=$PWD
PROBLEMS="matmul" timeout 230 bash benchmarks/gpu_integrity.sh hacks
HACKS="honest counter precompute_slot cache_ptr" PROBLEMS="matmul" timeout 120 bash benchmarks/gpu_integrity.sh graphs
cd /tmp
printf 'kernelbench:\n  reference: %s/devrun/outer_ref.py\n  solutions: [%s/devrun/outer_new.py, %s/devrun/outer_static_graph.py, %s/devrun/outer_reduce_overhead.py]\n' "$ROOT" "$ROOT" "$ROOT" "$ROOT" > /tmp/graphs.yaml
PYTHONPATH=/tmp/new:/tmp/deps timeout 120 python3 -m magpie_core -o /tmp/runs compare -k /tmp/graphs.yaml --json --no-html --no-perf > $OUT/static_outputs.json 2>> $OUT/static_outputs.log
echo "static_outputs exit $?" | tee -a $OUT/log.txt
printf 'kernelbench:\n  reference: %s/devrun/outer_ref.py\n  solutions: [%s/devrun/outer_new.py]\nperformance:\n  budget_seconds: 2\n  copy_memory_mib: 40\n  processes: 2\n' "$ROOT" "$ROOT" > /tmp/outer40.yaml
PYTHONPATH=/tmp/new:/tmp/deps timeout 70 python3 -m magpie_core -o /tmp/runs compare -k /tmp/outer40.yaml --json --no-html > $OUT/outer40.json 2>> $OUT/outer40.log
echo "outer40 exit $?" | tee -a $OUT/log.txt
