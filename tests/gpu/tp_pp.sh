#!/usr/bin/env bash
# Tensor and pipeline parallelism of gpt-train on the GPUs of one host (2 or more; NCCL), the
# equivalence checks of the CPU tests on --device cuda, each layout against one GPU from the same
# initial weights and the same global batch:
#   - fp32, --vocab-size 300 (padded to 384 at T=1, 512 at T=2): T=2, T=2 --sequence-parallel,
#     P=2, P=2 uneven (--pipeline-partition 1-3), P=2 and T=2 with --recompute-activations, T=2
#     with --overlap-grad-reduce; with 3 GPUs P=3 --pipeline-partition 0-4-0; with 4 GPUs
#     T=2·P=2 (also sequence parallel), T=2·D=2 (also with the distributed optimizer's overlap),
#     P=2·D=2 and the interleaved schedule (P=4, one layer per virtual stage, 8 layers
#     against 8 on one GPU; reported as skipped while the trainer refuses it): losses within 1e-5
#     relative over 10 iterations;
#   - --bf16: T=2, T=2 --sequence-parallel, P=2 (and T=2·P=2 with 4 GPUs) within 1% of one GPU's
#     bf16 losses over 100 iterations;
#   - the same layout twice gives the same losses (determinism), and the start output says that
#     CUDA graphs are off.
#   BIN=build/bin bash tests/gpu/tp_pp.sh [MIN]
# MIN (default 2): only the cases that need at least MIN GPUs (4: those a 2-GPU run skipped).
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
# A failed case is reported and the others still run; the exit status says whether any failed.
failed=0
fail() { echo "tests/gpu/tp_pp.sh: FAIL: $*" >&2; failed=$((failed + 1)); }
[[ -x $GT ]] || { fail "$GT not built"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
  gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
else
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
fi
((gpus >= 2)) || { fail "needs 2 GPUs or more ($gpus visible)"; exit 1; }
min=${1:-2}
nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

losses() { grep -hoE 'lm loss: [0-9.E+-]+' "$@" | awk '{print $3}'; }
close() {  # a b rel what: the loss sequences of logs a and b within rel
  paste <(losses "$1") <(losses "$2") | awk -v r="$3" '
    { n++; d = $1 - $2; if (d < 0) d = -d; if (d > r * $1) { print "  " $1 " vs " $2; bad = 1 } }
    END { exit bad || n == 0 }' || { fail "$4"; return; }
  [[ $(losses "$1" | wc -l) == $(losses "$2" | wc -l) ]] || { fail "$4 (line counts)"; return; }
  echo "ok: $4"
}
run() {  # name args...: gpt-train with the model below, its output in name.txt
  local name=$1
  shift
  "$GT" "${model[@]}" "$@" > "$name.txt" 2>&1 || { tail -40 "$name.txt"; fail "$name: $*"; }
}

model=(--device cuda --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64
       --micro-batch-size 2 --global-batch-size 8 --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine
       --lr-warmup-iters 2 --lr-decay-iters 100 --mock-data --mock-data-samples 64
       --vocab-size 300 --log-interval 1 --eval-iters 0 --train-iters 10
       --distributed-timeout-minutes 1)  # a hang ends the case in a minute, naming the rank

# fp32 against one GPU, within 1e-5.
run one
if ((min <= 2)); then
  run t2 --nproc-per-node 2 --tensor-model-parallel-size 2
  close one.txt t2.txt 1e-5 "fp32 T=2 against one GPU"
  grep -q 'CUDA graphs off' t2.txt || { head -40 t2.txt; fail "T=2: the start output does not say CUDA graphs are off"; }
  run t2again --nproc-per-node 2 --tensor-model-parallel-size 2
  diff <(losses t2.txt) <(losses t2again.txt) > /dev/null || fail "fp32 T=2 not deterministic"
  run t2sp --nproc-per-node 2 --tensor-model-parallel-size 2 --sequence-parallel
  close one.txt t2sp.txt 1e-5 "fp32 T=2 --sequence-parallel against one GPU"
  run p2 --nproc-per-node 2 --pipeline-model-parallel-size 2
  close one.txt p2.txt 1e-5 "fp32 P=2 against one GPU"
  run p2again --nproc-per-node 2 --pipeline-model-parallel-size 2
  diff <(losses p2.txt) <(losses p2again.txt) > /dev/null || fail "fp32 P=2 not deterministic"
  run p2uneven --nproc-per-node 2 --pipeline-model-parallel-size 2 --pipeline-partition 1-3
  close one.txt p2uneven.txt 1e-5 "fp32 P=2 --pipeline-partition 1-3 against one GPU"
  run p2recompute --nproc-per-node 2 --pipeline-model-parallel-size 2 --recompute-activations
  close one.txt p2recompute.txt 1e-5 "fp32 P=2 --recompute-activations against one GPU"
  run t2recompute --nproc-per-node 2 --tensor-model-parallel-size 2 --recompute-activations
  close one.txt t2recompute.txt 1e-5 "fp32 T=2 --recompute-activations against one GPU"
  # The data-parallel reductions on their second stream; the tensor group's stay on the passes'.
  run t2overlap --nproc-per-node 2 --tensor-model-parallel-size 2 --overlap-grad-reduce
  close one.txt t2overlap.txt 1e-5 "fp32 T=2 --overlap-grad-reduce against one GPU"
fi
if ((gpus >= 3 && min <= 3)); then
  run p3 --nproc-per-node 3 --pipeline-model-parallel-size 3 --pipeline-partition 0-4-0
  close one.txt p3.txt 1e-5 "fp32 P=3 --pipeline-partition 0-4-0 against one GPU"
fi
if ((gpus >= 4)); then
  run t2p2 --nproc-per-node 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
  close one.txt t2p2.txt 1e-5 "fp32 T=2 P=2 against one GPU"
  run t2p2sp --nproc-per-node 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --sequence-parallel
  close one.txt t2p2sp.txt 1e-5 "fp32 T=2 P=2 --sequence-parallel against one GPU"
  run t2d2 --nproc-per-node 4 --tensor-model-parallel-size 2
  close one.txt t2d2.txt 1e-5 "fp32 T=2 D=2 against one GPU"
  run t2d2overlap --nproc-per-node 4 --tensor-model-parallel-size 2 --use-distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather
  close one.txt t2d2overlap.txt 1e-5 "fp32 T=2 D=2 (distributed optimizer, overlapped) against one GPU"
  run p2d2 --nproc-per-node 4 --pipeline-model-parallel-size 2 --use-distributed-optimizer
  close one.txt p2d2.txt 1e-5 "fp32 P=2 D=2 (distributed optimizer) against one GPU"
  # The interleaved schedule: 8 layers, P=4, two model chunks of one layer per rank.
  run one8 --num-layers 8
  if "$GT" "${model[@]}" --num-layers 8 --nproc-per-node 4 --pipeline-model-parallel-size 4 \
      --num-layers-per-virtual-pipeline-stage 1 > interleaved.txt 2>&1; then
    close one8.txt interleaved.txt 1e-5 "fp32 interleaved P=4 against one GPU"
  elif grep -q 'interleaved schedule.*only so far' interleaved.txt; then
    echo "(the interleaved schedule: refused by this trainer, skipped)"
  else
    tail -40 interleaved.txt
    fail "interleaved P=4"
  fi
fi

# --bf16 against one GPU's bf16, within 1% over 100 iterations.
run bf16one --bf16 --train-iters 100
for layout in "t2 --nproc-per-node 2 --tensor-model-parallel-size 2" \
              "t2sp --nproc-per-node 2 --tensor-model-parallel-size 2 --sequence-parallel" \
              "p2 --nproc-per-node 2 --pipeline-model-parallel-size 2" \
              "t2p2 --nproc-per-node 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"; do
  read -r name args <<< "$layout"
  # shellcheck disable=SC2086
  n=$(grep -oE -- '--nproc-per-node [0-9]+' <<< "$args" | awk '{print $2}')
  ((n <= gpus && n >= min)) || continue
  # shellcheck disable=SC2086
  run bf16$name --bf16 --train-iters 100 $args
  close bf16one.txt bf16$name.txt 1e-2 "bf16 $name against one GPU"
done
((failed == 0)) || { echo "tests/gpu/tp_pp.sh: $failed case(s) failed on $gpus GPUs" >&2; exit 1; }
echo "tests/gpu/tp_pp.sh: all passed on $gpus GPUs"
