#!/usr/bin/env bash
# A/B: this code vs this code with the per-launch keep draw (os.urandom) replaced by a counter, vs the old code; bed only
set -uo pipefail
O=/tmp/ab; rm -rf $O /tmp/new /tmp/nour /tmp/old; mkdir -p $O
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/deps .whl/*.whl || exit 1
inst() { (cd "$1" && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target "$2" ./ ./plugins/pytorch ./plugins/triton ./plugins/gpu_nvidia) || exit 1; }
inst . /tmp/new; inst . /tmp/nour; inst .old_magpie /tmp/old
f=/tmp/nour/magpie_kernels_pytorch/harness.py
sed -i 's/if int.from_bytes(_urandom(2), "little") < self.keep_below:/if n % 13 == 0:/' $f; grep -c "n % 13 == 0" $f
BED=$PWD/benchmarks/kernelbench_bed/l1_23_softmax; cd /tmp
for round in 1 2; do for side in new nour old; do
  s=$(date +%s%N); PYTHONPATH=/tmp/$side:/tmp/deps timeout 200 python3 -m magpie_core -o /tmp/runs compare $BED/reference.py $BED/alternative.py $BED/identical.py --json --no-html > $O/bed_${side}_$round.json 2>>$O/err.log
  echo "bed $side $round wall_ms $(( ($(date +%s%N) - s) / 1000000 ))"; done; done
