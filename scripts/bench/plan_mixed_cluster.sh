#!/usr/bin/env bash
# gpt-plan on paper: GPT-2 XL, global batch 64, on 32 mixed GPUs (one node of 8 A100 40 GB with
# NVLink, four nodes of 4 A10 and two of 4 RTX 3090 on PCIe, 100 Gb/s between nodes), every GPU
# type's profile derived from its published peak TFLOP/s and memory bandwidth (--analytic). Prints
# the planner's choice, Megatron's even split of the same T/P/D, and the best even split of any
# layout, with the predicted gains: the figures RESULTS.md sets beside the published FASOP ones.
# Nothing is measured: a device run needs gpt-train's pipeline parallelism and a mixed cluster.
#   BIN=build/bin bash scripts/bench/plan_mixed_cluster.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cat > "$WORK/mixed.yaml" <<'Y'
groups:
  - {gpu: A100-40GB, nodes: 1, gpus-per-node: 8, intra-node-gbs: 230, inter-node-gbs: 12.5}
  - {gpu: A10, nodes: 4, gpus-per-node: 4, intra-node-gbs: 10, inter-node-gbs: 12.5}
  - {gpu: RTX3090, nodes: 2, gpus-per-node: 4, intra-node-gbs: 10, inter-node-gbs: 12.5}
Y
plan() { "$BIN/gpt-plan" --model gpt2-1.5b --global-batch-size 64 --cluster "$WORK/mixed.yaml" --analytic --json "$@"; }
plan > "$WORK/best.json"
read -r T P mbs < <(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["layouts"][0]; print(l["tensor"], l["pipeline"], l["micro_batch_size"])' "$WORK/best.json")
plan --even --tensor-model-parallel-size "$T" --pipeline-model-parallel-size "$P" --micro-batch-size "$mbs" > "$WORK/same.json"
python3 - "$WORK/best.json" "$WORK/same.json" <<'PY'
import json, sys
best = json.load(open(sys.argv[1]))
l, anyeven, same = best["layouts"][0], best["best_even_split"], json.load(open(sys.argv[2]))["layouts"][0]
def name(x):
    return "T%d P%d D%d mbs %d%s, partition %s" % (x["tensor"], x["pipeline"], x["data"], x["micro_batch_size"],
        ", dist. opt." if x["distributed_optimizer"] else "", "-".join(map(str, x["partition"])))
print("chosen:           %7.1f ms/step  %s  (stages: %s)" % (l["step_ms"], name(l), " ".join(s["gpu"] for s in l["stages"])))
print("even, same T/P/D: %7.1f ms/step  %s  -> %.2fx" % (same["step_ms"], name(same), same["step_ms"] / l["step_ms"]))
print("best even split:  %7.1f ms/step  %s  -> %.2fx" % (anyeven["step_ms"], name(anyeven), anyeven["step_ms"] / l["step_ms"]))
PY
[[ -n ${BENCH_WORK:-} ]] || rm -rf "$WORK"
