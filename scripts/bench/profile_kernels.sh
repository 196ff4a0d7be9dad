#!/usr/bin/env bash
# Where a gpt-train step spends its GPU time: every kernel of a short --bf16 run under Nsight Compute
# (duration only, clocks left alone, caches not flushed between kernels unless CACHE_CONTROL=all),
# summed by kernel name, largest first.
#   BIN=build/bin bash scripts/bench/profile_kernels.sh [extra gpt-train flags]
# Defaults: GPT-2 124M shape, seq 1024, micro-batch 8, mock data; WARMUP=2 iterations run unprofiled
# (GEMM autotuning, CUDA graph capture), then ITERS=2 are profiled (gpt-train --profile, ncu
# --profile-from-start off); per-iteration figures are the totals divided by ITERS. Extra flags
# replace the defaults (the last occurrence wins), e.g. the 350M shape:
#   MBS=16 BIN=build/bin bash scripts/bench/profile_kernels.sh --num-layers 24 --hidden-size 1024 \
#     --num-attention-heads 16
set -euo pipefail
BIN=${BIN:?BIN must point at the built tools}
ITERS=${ITERS:-2}
WARMUP=${WARMUP:-2}
out=${PROFILE_OUT:-$(mktemp -d)}
mkdir -p "$out"
ncu --profile-from-start off --clock-control none --cache-control "${CACHE_CONTROL:-none}" --metrics gpu__time_duration.sum --csv --log-file "$out/ncu.csv" \
  "$BIN/gpt-train" --device cuda --bf16 --num-layers 12 --hidden-size 768 --num-attention-heads 12 \
  --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size "${MBS:-8}" --global-batch-size "${MBS:-8}" \
  --train-iters $((WARMUP + ITERS)) --profile --profile-step-start "$WARMUP" \
  --profile-step-end $((WARMUP + ITERS)) --lr 6e-4 --mock-data --vocab-size 50257 --log-interval 1 --eval-iters 0 "$@" \
  > "$out/train.log" 2>&1
python3 - "$out/ncu.csv" "$ITERS" <<'PY'
import csv, sys, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
total = collections.Counter(); count = collections.Counter()
for r in csv.DictReader(rows):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"].split("(")[0][:70]
    ns = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "ns")
    ns *= {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1)
    total[name] += ns; count[name] += 1
iters = int(sys.argv[2]); all_ns = sum(total.values())
print(f"{'kernel':70s} {'calls/it':>8s} {'ms/it':>8s} {'share':>6s}")
for name, ns in total.most_common(30):
    print(f"{name:70s} {count[name] / iters:8.0f} {ns / iters / 1e6:8.3f} {100 * ns / all_ns:5.1f}%")
print(f"{'all kernels':70s} {sum(count.values()) / iters:8.0f} {all_ns / iters / 1e6:8.3f}")
PY
