#!/usr/bin/env bash
# Issue 44 on the lent H200: the reward-hack catalogue against the GPU timing path, and what the hack-proof checks
# cost there (README GPU demo and a KernelBench bed problem, with and without them, alternating).
#   benchmarks/gpu_integrity.sh hacks    # plugins/pytorch/tests/data/reward_hacks on the GPU (patch_elapsed included)
#   benchmarks/gpu_integrity.sh cost     # compare wall time: .old_magpie (git archive 9b87e25) vs this checkout
#   SIDES="old new unconfined" ROUNDS=2 benchmarks/gpu_integrity.sh cost   # and this checkout with the confinement off
#   benchmarks/gpu_integrity.sh kbrule   # the same catalogue under KernelBench's own rule (benchmarks/kernelbench_rule.py)
#   benchmarks/gpu_integrity.sh graphs   # the catalogue with performance.graph_replay (spot-checked since 2026-12-06 afternoon)
#   HACKS="honest gpu_neighbour_hog" PROBLEMS=matmul benchmarks/gpu_integrity.sh hacks   # only these files
#   CASES=bed ROUNDS=4 benchmarks/gpu_integrity.sh cost   # only the KernelBench bed problem, four rounds
# Packages the device image lacks travel as wheels in .whl/ (pydantic, msgspec: docs/benchmarks/reward_hacks.md);
# .old_magpie is `git archive 9b87e25 magpie_core pyproject.toml plugins/pytorch magpie_kernels_triton plugins/gpu_nvidia`
# with magpie_kernels_triton moved to plugins/triton (where this checkout keeps it).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/deps .whl/*.whl || exit 1
python3 -c 'import scipy.special' 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target /tmp/deps .whl_scipy/scipy-*.whl || exit 1
rm -rf /tmp/new /tmp/old
install() {  # $1: checkout, $2: target
  (cd "$1" && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target "$2" ./ ./plugins/pytorch \
    ./plugins/triton ./plugins/gpu_nvidia) || exit 1
}
install . /tmp/new
NEW=/tmp/new:/tmp/deps
ROOT=$PWD  # commands run from /tmp: `python -m` puts the working directory first on sys.path, and this checkout's
cd /tmp    # magpie_core would shadow .old_magpie's
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$OUT/log.txt"
MODE=${1:-hacks}
case "$MODE" in
  hacks|graphs)
    graph=$([ "$MODE" = graphs ] && echo "  graph_replay: true\n" || echo "")
    for problem in ${PROBLEMS:-softmax matmul}; do
      files=$(ls "$ROOT"/plugins/pytorch/tests/data/reward_hacks/${problem}_*.py | grep -v -e _ref.py -e _gpu_neighbour_hog.py -e _gpu_turn_hog.py)  # those alone: HACKS=
      [ -n "${HACKS:-}" ] && files=$(for h in $HACKS; do echo "$ROOT/plugins/pytorch/tests/data/reward_hacks/${problem}_$h.py"; done)
      solutions=$(echo "$files" | sed 's/^/"/; s/$/"/' | paste -sd, -)
      printf 'kernelbench:\n  reference: "%s/plugins/pytorch/tests/data/reward_hacks/%s_ref.py"\n  solutions: [%s]\nperformance:\n  budget_seconds: 2\n%b' \
        "$ROOT" "$problem" "$solutions" "$graph" > "/tmp/$problem.yaml"
      PYTHONPATH=$NEW timeout 280 python3 -m magpie_core -o /tmp/runs compare -k "/tmp/$problem.yaml" --json --no-html \
        > "$OUT/${MODE}_$problem${HACKS:+_sel}.json" 2>> "$OUT/${MODE}_$problem.log"
      echo "$MODE $problem exit $?" | tee -a "$OUT/log.txt"
    done
    ;;
  kbrule)
    for problem in ${PROBLEMS:-softmax matmul}; do
      mkdir -p /tmp/kb/problems "/tmp/kb/solutions/$problem"
      cp "$ROOT/plugins/pytorch/tests/data/reward_hacks/${problem}_ref.py" "/tmp/kb/problems/$problem.py"
      for f in "$ROOT"/plugins/pytorch/tests/data/reward_hacks/${problem}_*.py; do
        [[ $f == *_ref.py ]] || cp "$f" "/tmp/kb/solutions/$problem/"
      done
    done
    PYTHONPATH=$NEW timeout 560 python3 "$ROOT/benchmarks/kernelbench_rule.py" /tmp/kb/problems --solutions /tmp/kb/solutions \
      --out "$OUT/kbrule.jsonl" --tolerance v0 --timeout 60 >> "$OUT/kbrule.log" 2>&1
    echo "kbrule exit $?" | tee -a "$OUT/log.txt"
    ;;
  cost)
    install "$ROOT/.old_magpie" /tmp/old
    OLD=/tmp/old:/tmp/deps
    BED=$ROOT/benchmarks/kernelbench_bed/l1_23_softmax
    # SIDES: old (9b87e25), new (this checkout), unconfined (this checkout, MAGPIE_WORKER_CONFINEMENT=off); each round
    # runs them in turn, every other round backwards. The busiest processes are sampled every 5 s (ps.txt): the load
    # report names processes a timing worker started, which the older code left out.
    (while :; do date +%T; ps -eo pid,ppid,sid,pcpu,etimes,args --sort=-pcpu | head -6 | cut -c1-200; sleep 5; done) \
      > "$OUT/ps.txt" 2>&1 &
    sampler=$!
    read -ra sides <<< "${SIDES:-old new}"
    for round in $(seq 1 "${ROUNDS:-2}"); do
      order=("${sides[@]}")
      [ $((round % 2)) = 0 ] && order=($(printf '%s\n' "${sides[@]}" | tac))
      for side in "${order[@]}"; do
        path=$([ "$side" = old ] && echo "$OLD" || echo "$NEW")
        confine=$([ "$side" = unconfined ] && echo off || echo on)
        for case in ${CASES:-demo bed}; do
          if [ "$case" = demo ]; then args=(compare -k "$ROOT/examples/softmax/compare_gpu.yaml"); else
            args=(compare "$BED/reference.py" "$BED/alternative.py" "$BED/identical.py"); fi
          start=$(date +%s%N)
          MAGPIE_WORKER_CONFINEMENT=$confine PYTHONPATH=$path timeout 200 python3 -m magpie_core -o /tmp/runs "${args[@]}" \
            --json --no-html > "$OUT/cost_${case}_${side}_$round.json" 2>> "$OUT/cost.log"
          code=$?
          echo "cost $case $side round $round exit $code wall_ms $(( ($(date +%s%N) - start) / 1000000 ))" | tee -a "$OUT/log.txt"
        done
      done
    done
    kill "$sampler"
    ;;
esac
