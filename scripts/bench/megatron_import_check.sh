#!/usr/bin/env bash
# A Megatron legacy checkpoint made by Megatron-core itself imports into gpt-train and gives the
# same first loss as Megatron on the same batch (within 1e-3 relative, bf16). On the GPUs of one
# host (TP x PP of them, default 2 x 2):
#   1. jsonl-to-mmap writes a Megatron indexed dataset from the bundled sample (GPT-2 BPE);
#   2. Megatron-core (megatron_core_env.sh: the packed snapshot, --transformer-impl local) trains a
#      small GPT (4 x 512, 8 heads, sequence 256, global batch 16, micro-batch 4, dropout 0) on it
#      for 3 iterations at tensor TP x pipeline PP, saving a legacy checkpoint (--ckpt-format
#      torch, model only) at iteration 2, and logs every iteration's loss;
#   3. scripts/megatron-convert.py imports iteration 2's files;
#   4. gpt-train --load runs iteration 3 on one GPU from them, on the same dataset, split and seed
#      with --split-rounding core (Megatron-core's ranges, so the same index maps and sample order),
#      and its loss is compared with Megatron's
#      iteration-3 loss (Megatron's softmax also spans the padded vocabulary rows, ours does not:
#      a difference far below the bound).
# Prints both losses and their relative difference; exit 0 within the bound, 1 otherwise or when
# a step fails (the end of its log shown). Logs and checkpoints stay in WORK when it is given.
#   BIN=build/bin PYTHON=python3 bash scripts/bench/megatron_import_check.sh .e2e/megatron-core.tar.gz
# Env: BIN (jsonl-to-mmap and gpt-train; LD_LIBRARY_PATH set by the caller), PYTHON (python3 with
# torch and numpy), TP (2), PP (2), BUDGET_SECONDS (300), WORK (default a temporary folder, removed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/bench/megatron_core_env.sh
source "$ROOT/scripts/bench/megatron_core_env.sh"
[[ $# == 1 ]] || { echo "usage: megatron_import_check.sh TARBALL" >&2; exit 2; }
BIN=${BIN:-$ROOT/build/bin}
TP=${TP:-2} PP=${PP:-2}
BUDGET=${BUDGET_SECONDS:-300}
for t in jsonl-to-mmap gpt-train; do
  [[ -x $BIN/$t ]] || { echo "megatron_import_check.sh: no $BIN/$t (make)" >&2; exit 1; }
done
if [[ -n ${WORK:-} ]]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
step_failed() {  # what log
  echo "megatron_import_check.sh: $1 failed; $2 ends:" >&2
  tail -20 "$2" | sed 's/^/    /' >&2
  exit 1
}
left() { echo $((BUDGET - SECONDS > 5 ? BUDGET - SECONDS : 5)); }

megatron_core_setup megatron_import_check.sh "$1" "$work" || exit 1

"$BIN/jsonl-to-mmap" -q -i "$ROOT/data/sample/python-docs.jsonl.zst" --output-prefix "$work/docs" \
  --vocab-file "$ROOT/data/gpt2/vocab.json" --merge-file "$ROOT/data/gpt2/merges.txt" --append-eod \
  > "$work/data.log" 2>&1 || step_failed "jsonl-to-mmap" "$work/data.log"

# The run both programs make: the same shape, data, split, seed and batch.
# shellcheck disable=SC2054  # --split takes a comma-separated list
shape=(--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 256
       --max-position-embeddings 256 --micro-batch-size 4 --global-batch-size 16 --bf16
       --attention-dropout 0 --hidden-dropout 0 --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine
       --lr-warmup-iters 1 --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0 --train-iters 3
       --log-interval 1 --eval-iters 0 --eval-interval 1000000 --vocab-size 50257
       --data-path "$work/docs_text_document" --split 969,30,1 --seed 1234)
(cd "$mc" && timeout -k 15 "$(left)" "$TORCHRUN" --standalone --nproc_per_node $((TP * PP)) \
   pretrain_gpt.py "${shape[@]}" "${megatron_local_flags[@]}" --attention-softmax-in-fp32 \
   --tokenizer-type NullTokenizer --data-cache-path "$work/megatron-cache" \
   --tensor-model-parallel-size "$TP" --pipeline-model-parallel-size "$PP" \
   --save "$work/megatron-ckpt" --save-interval 2 --ckpt-format torch --no-save-optim --no-save-rng) \
  > "$work/megatron.log" 2>&1 || step_failed "Megatron-core" "$work/megatron.log"
[[ -d $work/megatron-ckpt/iter_0000002 ]] ||
  step_failed "Megatron-core's checkpoint at iteration 2" "$work/megatron.log"
# Megatron also saves when training ends: iteration 2's files are the ones imported.
echo 2 > "$work/megatron-ckpt/latest_checkpointed_iteration.txt"
megatron_loss=$(sed -nE 's/.*iteration +3\/ +3 \|.*lm loss: ([0-9.E+-]+).*/\1/p' "$work/megatron.log" | tail -1)
[[ -n $megatron_loss ]] || step_failed "Megatron-core's iteration-3 loss line" "$work/megatron.log"

"$PY" "$ROOT/scripts/megatron-convert.py" import "$work/megatron-ckpt" "$work/ours" --vocab-size 50257 \
  > "$work/import.log" 2>&1 || step_failed "megatron-convert.py import" "$work/import.log"

CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout -k 5 "$(left)" "$BIN/gpt-train" --device cuda \
  "${shape[@]}" --split-rounding core --data-cache-path "$work/gpt-train-cache" --load "$work/ours" \
  > "$work/gpt-train.log" 2>&1 || step_failed "gpt-train --load" "$work/gpt-train.log"
ours=$(sed -nE 's/.*iteration +3\/ +3 \|.*lm loss: ([0-9.E+-]+).*/\1/p' "$work/gpt-train.log" | tail -1)
[[ -n $ours ]] || step_failed "gpt-train's iteration-3 loss line" "$work/gpt-train.log"

awk -v m="$megatron_loss" -v o="$ours" -v tp="$TP" -v pp="$PP" 'BEGIN {
  d = (o - m) / m; if (d < 0) d = -d
  printf "Megatron-core (T=%d, P=%d) iteration-3 loss %s; gpt-train from its imported iteration-2 checkpoint: %s; relative difference %.2e (bound 1e-3): %s\n",
    tp, pp, m, o, d, (d <= 1e-3 ? "met" : "NOT met")
  exit d <= 1e-3 ? 0 : 1 }'
