#!/usr/bin/env bash
# Two family sweeps at once on the two-GPU machine, one per GPU, each with its own checkpoint and engine folders
# (the 128 GB disk holds one family per lane; keep the two lanes' largest checkpoints under ~110 GB together).
# Results: $OUT/a and $OUT/b (family_sweep.json/.md each), the lanes' logs $OUT/a.log and $OUT/b.log.
#   bash testing/bench/fetch_gpu_wheels.sh                                        # here
#   bash testing/bench/sweep_two_gpus.sh "$OUT" hidream,flux_kontext wan21_i2v,flux2_klein_9b [0,24] [560] [lane b's budgets]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$1 lane_a=$2 lane_b=$3 budgets=${4:-0,24} limit=${5:-560} budgets_b=${6:-${4:-0,24}}
python3 -c "import sys; sys.path.insert(0, '.'); from testing.bench.gpu_machine import install_wheels; install_wheels('.whl_engine')" || exit 1
export PYTHONPATH=/tmp/aitk_site:$PWD
for lane in a b; do
  families=$([ $lane = a ] && echo "$lane_a" || echo "$lane_b")
  gpu=$([ $lane = a ] && echo 0 || echo 1)
  lane_budgets=$([ $lane = a ] && echo "$budgets" || echo "$budgets_b")
  CUDA_VISIBLE_DEVICES=$gpu timeout "$limit" python3 testing/bench/family_sweep.py --out "$out/$lane" \
    --families "$families" --budgets "$lane_budgets" --bare --models /tmp/models_$lane --work /tmp/work_$lane \
    > /tmp/sweep_$lane.log 2>&1 &
done
wait
for lane in a b; do
  grep -v "Writing\|it/s\]" /tmp/sweep_$lane.log | tail -c 15000 > "$out/$lane.log"
  rm -rf /tmp/models_$lane
done
cat "$out"/a/family_sweep.md "$out"/b/family_sweep.md
