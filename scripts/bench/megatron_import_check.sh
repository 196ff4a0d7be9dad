#!/usr/bin/env bash
# Checkpoints move between Megatron-core and gpt-train in both directions with the same losses.
# Import: a Megatron legacy checkpoint made by Megatron-core itself gives gpt-train the same next
# loss as Megatron on the same batch (within 1e-3 relative, bf16). Export: gpt-train's own
# checkpoint, converted to Megatron's layout, gives Megatron-core the same next loss as gpt-train.
# On the GPUs of one host (TP x PP of them, default 2 x 2):
#   1. jsonl-to-mmap writes a Megatron indexed dataset from the bundled sample (GPT-2 BPE);
#   2. Megatron-core (megatron_core_env.sh: the packed snapshot, --transformer-impl local) trains a
#      small GPT (4 x 512, 8 heads, sequence 256, global batch 16, micro-batch 4, dropout 0) on it
#      for 3 iterations at tensor TP x pipeline PP, saving a legacy checkpoint (--ckpt-format
#      torch, model only) at iteration 2, and logs every iteration's loss;
#   3. scripts/megatron-convert.py imports iteration 2's files;
#   4. gpt-train --load runs iteration 3 on one GPU from them, on the same dataset, split and seed
#      with --split-rounding core (Megatron-core's ranges, so the same index maps and sample order),
#      saves its iteration-3 checkpoint, and its loss is compared with Megatron's iteration 3
#      (Megatron's softmax also spans the padded vocabulary rows, ours does not: a difference far
#      below the bound);
#   5. megatron-convert.py exports that checkpoint at TP x PP with megatron-core's names (what
#      pretrain_gpt.py builds by default); Megatron-core loads it
#      (--no-load-optim --no-load-rng) and runs iteration 4, gpt-train runs iteration 4 from its
#      own checkpoint, and the two losses are compared (the same weights and batch: the learning
#      rate, which --no-load-optim restarts, acts only after the loss).
# Prints each pair of losses and their relative difference; exit 0 when both are within the
# bound, 1 otherwise or when a step fails (the end of its log shown). Logs and checkpoints stay in
# WORK when it is given.
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
       --lr-warmup-iters 1 --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0
       --log-interval 1 --eval-iters 0 --eval-interval 1000000 --vocab-size 50257
       --data-path "$work/docs_text_document" --split 969,30,1 --seed 1234)
# megatron LOG ARGS...: Megatron-core at TP x PP on that run.
megatron() {
  local log=$1
  shift
  (cd "$mc" && timeout -k 15 "$(left)" "$TORCHRUN" --standalone --nproc_per_node $((TP * PP)) \
     pretrain_gpt.py "${shape[@]}" "${megatron_local_flags[@]}" --attention-softmax-in-fp32 \
     --tokenizer-type NullTokenizer --data-cache-path "$work/megatron-cache" \
     --tensor-model-parallel-size "$TP" --pipeline-model-parallel-size "$PP" --ckpt-format torch "$@") \
    > "$log" 2>&1 || step_failed "Megatron-core" "$log"
}
# gpt-train LOG ARGS...: gpt-train on one GPU on that run.
gpt_train() {
  local log=$1
  shift
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout -k 5 "$(left)" "$BIN/gpt-train" --device cuda \
    "${shape[@]}" --split-rounding core --data-cache-path "$work/gpt-train-cache" "$@" \
    > "$log" 2>&1 || step_failed "gpt-train $*" "$log"
}
# loss_at LOG I: the lm loss logged at iteration I.
loss_at() { sed -nE "s/.*iteration +$2\/ +$2 \|.*lm loss: ([0-9.E+-]+).*/\1/p" "$1" | tail -1; }
# compare WHAT REFERENCE OURS: prints the pair; returns 1 beyond the bound.
compare() {
  awk -v what="$1" -v m="$2" -v o="$3" 'BEGIN {
    d = (o - m) / m; if (d < 0) d = -d
    printf "%s: Megatron-core %s, gpt-train %s, relative difference %.2e (bound 1e-3): %s\n",
      what, m, o, d, (d <= 1e-3 ? "met" : "NOT met")
    exit d <= 1e-3 ? 0 : 1 }'
}

megatron "$work/megatron.log" --train-iters 3 --save "$work/megatron-ckpt" --save-interval 2 \
  --no-save-optim --no-save-rng
[[ -d $work/megatron-ckpt/iter_0000002 ]] ||
  step_failed "Megatron-core's checkpoint at iteration 2" "$work/megatron.log"
# Megatron also saves when training ends: iteration 2's files are the ones imported.
echo 2 > "$work/megatron-ckpt/latest_checkpointed_iteration.txt"
megatron_loss=$(loss_at "$work/megatron.log" 3)
[[ -n $megatron_loss ]] || step_failed "Megatron-core's iteration-3 loss line" "$work/megatron.log"

"$PY" "$ROOT/scripts/megatron-convert.py" import "$work/megatron-ckpt" "$work/ours" --vocab-size 50257 \
  > "$work/import.log" 2>&1 || step_failed "megatron-convert.py import" "$work/import.log"
gpt_train "$work/gpt-train.log" --train-iters 3 --load "$work/ours" --save "$work/ours3"
ours=$(loss_at "$work/gpt-train.log" 3)
[[ -n $ours ]] || step_failed "gpt-train's iteration-3 loss line" "$work/gpt-train.log"

"$PY" "$ROOT/scripts/megatron-convert.py" export "$work/ours3" "$work/exported" \
  --tensor-model-parallel-size "$TP" --pipeline-model-parallel-size "$PP" --mcore \
  > "$work/export.log" 2>&1 || step_failed "megatron-convert.py export" "$work/export.log"
megatron "$work/megatron-from-ours.log" --train-iters 4 --load "$work/exported" --no-load-optim --no-load-rng
megatron_next=$(loss_at "$work/megatron-from-ours.log" 4)
[[ -n $megatron_next ]] || step_failed "Megatron-core's iteration-4 loss line" "$work/megatron-from-ours.log"
gpt_train "$work/gpt-train-next.log" --train-iters 4 --load "$work/ours3"
ours_next=$(loss_at "$work/gpt-train-next.log" 4)
[[ -n $ours_next ]] || step_failed "gpt-train's iteration-4 loss line" "$work/gpt-train-next.log"

status=0
compare "import (T=$TP, P=$PP): iteration 3 from Megatron-core's iteration-2 checkpoint" "$megatron_loss" "$ours" || status=1
compare "export (T=$TP, P=$PP): iteration 4 from gpt-train's iteration-3 checkpoint" "$megatron_next" "$ours_next" || status=1
exit $status
