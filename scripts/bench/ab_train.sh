#!/usr/bin/env bash
# Interleaved A/B of two gpt-train builds on the rows of issue 6's table, on one GPU: A, B, A, B,
# ... ROUNDS times per row, so that drifts of the card's clock (700 W cap, temperature) fall on
# both; prints tokens/s (and peak memory) of each run and B's change against A per round and in
# the mean.
#   A=build-base/bin B=build/bin bash scripts/bench/ab_train.sh [gpt-train flags]
# Env: A, B (folders holding gpt-train), ROWS (default "350M-16"), ROUNDS (2), ITERS (40; the
# last 20 are timed), GELU_RECOMPUTE (as in train_rows.sh), NPROC (1; N: data parallelism over N
# GPUs with --nproc-per-node, the global batch N micro-batches). The flags go last, to both
# builds; e.g. the overlapped 2-GPU step of two builds:
#   NPROC=2 ROWS=124M-32 A=old B=new bash scripts/bench/ab_train.sh --overlap-grad-reduce
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/train_rows.sh"
A=${A:?A must point at the first gpt-train folder}
B=${B:?B must point at the second gpt-train folder}
ROWS=${ROWS:-350M-16}
ROUNDS=${ROUNDS:-2}
NPROC=${NPROC:-1}
((NPROC > 1)) && export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for row in $ROWS; do
  row_shape "$row"
  dp=()
  ((NPROC > 1)) && dp=(--nproc-per-node "$NPROC" --global-batch-size $((mbs * NPROC)))
  sum_a=0 sum_b=0
  for ((r = 1; r <= ROUNDS; r++)); do
    gt_row "$A/gpt-train" "$row" "$work/a.log" "${dp[@]}" "$@"
    gt_row "$B/gpt-train" "$row" "$work/b.log" "${dp[@]}" "$@"
    a=$(gt_tokens_per_s "$work/a.log") b=$(gt_tokens_per_s "$work/b.log")
    ma=$(gt_peak_mb "$work/a.log") mb=$(gt_peak_mb "$work/b.log")
    sum_a=$(awk -v s="$sum_a" -v x="$a" 'BEGIN { print s + x }')
    sum_b=$(awk -v s="$sum_b" -v x="$b" 'BEGIN { print s + x }')
    awk -v row="$row" -v r="$r" -v a="$a" -v b="$b" -v ma="$ma" -v mb="$mb" \
      'BEGIN { printf "%s round %d: A %.0f  B %.0f tok/s  B/A %+.2f%%  (peak MB A %s, B %s)\n", row, r, a, b, 100 * (b / a - 1), ma, mb }'
  done
  awk -v row="$row" -v a="$sum_a" -v b="$sum_b" -v n="$ROUNDS" \
    'BEGIN { printf "%s mean: A %.0f  B %.0f tok/s  B/A %+.2f%%\n", row, a / n, b / n, 100 * (b / a - 1) }'
done
