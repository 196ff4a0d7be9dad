#!/usr/bin/env bash
# gpt-plan's analytic profile (published H100 peak at --efficiency 0.5, NCCL bus bandwidth 355 GB/s)
# against the data-parallel rows gpt-train measured on H100s (RESULTS.md, "Data parallelism against
# PyTorch DDP"): the only layouts gpt-train runs today. One line per row: predicted and measured
# tokens/s and the step-time error (predicted - measured) / measured. Runs on any machine.
#   BIN=build/bin bash scripts/bench/plan_analytic_check.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
for n in 1 4; do
  printf 'groups:\n  - {gpu: H100, nodes: 1, gpus-per-node: %d, intra-node-gbs: 355}\n' "$n" > "$WORK/h$n.yaml"
done
# model, GPUs, micro-batch, distributed optimizer, measured tokens/s (RESULTS.md)
rows="gpt2-124m 1 32 off 558166
gpt2-124m 4 32 off 2095180
gpt2-350m 1 16 off 206433
gpt2-350m 4 16 off 740356
gpt2-1.5b 1 8 off 43900
gpt2-1.5b 4 8 on 150849"
while read -r model gpus mbs dist measured; do
  "$BIN/gpt-plan" --model "$model" --global-batch-size $((gpus * mbs)) --cluster "$WORK/h$gpus.yaml" --analytic \
    --pipeline-model-parallel-size 1 --micro-batch-size "$mbs" --distributed-optimizer "$dist" --recompute off --json \
    | python3 -c 'import json, sys
p = json.load(sys.stdin)["layouts"][0]["tokens_per_s"]
model, gpus, mbs, dist, m = sys.argv[1:]
print("%-10s D%s mbs %-3s dist. opt. %-3s predicted %9.0f tok/s, measured %9s: step-time error %+5.1f%%"
      % (model, gpus, mbs, dist, p, m, (float(m) / p - 1) * 100))' "$model" "$gpus" "$mbs" "$dist" "$measured"
done <<< "$rows"
[[ -n ${BENCH_WORK:-} ]] || rm -rf "$WORK"
