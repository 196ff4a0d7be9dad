#!/usr/bin/env bash
# Data-parallel gpt-train on the GPUs of one host (2 or more; NCCL), the checks of the CPU tests
# on --device cuda:
#   - fp32: DP=2 and DP=4 (accumulation 2 and 1) against DP=1 (accumulation 4), losses within
#     1e-5 relative; every rank's weights identical after each step (--log-params-hash);
#   - the distributed optimizer against plain DP within 1e-6 relative, with --clip-grad 0.1;
#   - --bf16 with the packed bf16 weight gradients, plain and --use-distributed-optimizer, and
#     --grad-reduce-in-bf16: the ranks agree and the losses stay close to one GPU's;
#   - torchrun --standalone, torchrun with --master-port, --nproc-per-node and srun's variables
#     set by hand give the same loss sequence;
#   - --overlap-grad-reduce (and --overlap-param-gather) against the same runs without, fp32 and
#     --bf16, plain and distributed optimizer, several buckets, accumulation 2: within 1e-6; the
#     overlapped micro-batches replay CUDA graphs with their collectives (the start line says so,
#     no capture fell back) and give the bits of --cuda-graphs off; the same at accumulation 1
#     (every micro-batch a step's last, as in the benchmark), fp32 plain and --bf16 sharded;
#   - peak memory per rank at --bf16 with and without the distributed optimizer (both printed;
#     the sharded run must be lower; the issue's bound 0.8 x 12 B x P x (1 - 1/D) reported);
#   - a checkpoint of DP=2 with the distributed optimizer resumes at DP=1, and at --bf16 (the
#     fp32 master sharded) at DP=1 and DP=2;
#   - more ranks than GPUs is refused.
#   BIN=build/bin bash tests/gpu/dp.sh      (TORCHRUN: torchrun's path, default from PATH)
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "tests/gpu/dp.sh: FAIL: $*" >&2; exit 1; }
[[ -x $GT ]] || fail "$GT not built"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The GPUs this process may use: CUDA_VISIBLE_DEVICES's list when set (nvidia-smi ignores it).
if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
  gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
else
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
fi
((gpus >= 2)) || fail "needs 2 GPUs or more ($gpus visible)"
nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

losses() { grep -hoE 'lm loss: [0-9.E+-]+' "$@" | awk '{print $3}'; }
hashes() { grep -hoE 'params hash: rank [0-9]+ iteration [0-9]+ [0-9a-f]+' "$1" | awk '{print $4, $6, $7}'; }
close() {  # a b rel what: the loss sequences of logs a and b within rel
  paste <(losses "$1") <(losses "$2") | awk -v r="$3" '
    { n++; d = $1 - $2; if (d < 0) d = -d; if (d > r * $1) { print "  " $1 " vs " $2; bad = 1 } }
    END { exit bad || n == 0 }' || fail "$4"
  [[ $(losses "$1" | wc -l) == $(losses "$2" | wc -l) ]] || fail "$4 (line counts)"
}
same_weights() {  # log: every rank printed the same hash at each iteration
  hashes "$1" | awk '{ if (($2 in h) && h[$2] != $3) bad = 1; h[$2] = $3; n++ } END { exit bad || n == 0 }' \
    || fail "ranks' weights differ in $1"
}

# graphs_replayed GRAPHS_LOG EAGER_LOG WHAT: the first run says its overlapped micro-batches are in
# CUDA graphs with their collectives, no capture fell back, and it gives the losses and weights of
# the second (--cuda-graphs off), bit for bit (two ranks: a sum of two is the same in any order).
graphs_replayed() {
  grep -q 'CUDA graphs on (with the bucket reductions' "$1" || { cat "$1"; fail "$3: no graph note"; }
  ! grep 'could not be captured' "$1" || fail "$3: a capture fell back"
  ! grep -q 'CUDA graphs on' "$2" || fail "$3: --cuda-graphs off still says graphs"
  diff <(losses "$1") <(losses "$2") > /dev/null || fail "$3: losses differ from --cuda-graphs off"
  diff <(hashes "$1" | sort) <(hashes "$2" | sort) > /dev/null \
    || fail "$3: weights differ from --cuda-graphs off"
  [[ $(hashes "$1" | wc -l) -gt 0 ]] || fail "$3: no weight hashes"
}

tiny=(--device cuda --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64
      --micro-batch-size 2 --global-batch-size 8 --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine
      --lr-warmup-iters 2 --mock-data --mock-data-samples 64 --vocab-size 512 --log-interval 1
      --eval-iters 1 --eval-interval 10 --train-iters 20 --log-params-hash)
"$GT" "${tiny[@]}" > one.txt 2>&1 || { cat one.txt; fail "one GPU"; }
for n in 2 4; do
  ((n <= gpus)) || continue
  "$GT" "${tiny[@]}" --nproc-per-node $n > dp$n.txt 2>&1 || { cat dp$n.txt; fail "DP=$n"; }
  close one.txt dp$n.txt 1e-5 "fp32 DP=$n against one GPU"
  same_weights dp$n.txt
  "$GT" "${tiny[@]}" --nproc-per-node $n --use-distributed-optimizer --clip-grad 0.1 > zero$n.txt 2>&1 \
    || { cat zero$n.txt; fail "DP=$n distributed optimizer"; }
  "$GT" "${tiny[@]}" --nproc-per-node $n --clip-grad 0.1 > plain$n.txt 2>&1 || fail "DP=$n clip"
  close plain$n.txt zero$n.txt 1e-6 "distributed optimizer against plain DP at DP=$n"
  same_weights zero$n.txt
  for extra in "--bf16" "--bf16 --use-distributed-optimizer" "--bf16 --grad-reduce-in-bf16"; do
    # shellcheck disable=SC2086
    "$GT" "${tiny[@]}" --nproc-per-node $n $extra > bf$n.txt 2>&1 || { cat bf$n.txt; fail "DP=$n $extra"; }
    same_weights bf$n.txt
    close one.txt bf$n.txt 3e-2 "DP=$n $extra against fp32 one GPU"
  done
done

# Overlapped reductions (and gathers): the same losses as without, 6 buckets per step, 2
# micro-batches per rank (only the second one's backward reduces).
ov=(--ddp-bucket-size 20000 --global-batch-size 8)
for extra in "" "--bf16" "--use-distributed-optimizer --clip-grad 0.1" \
             "--bf16 --use-distributed-optimizer --clip-grad 0.1"; do
  g=(--overlap-grad-reduce)
  [[ $extra == *distributed* ]] && g+=(--overlap-param-gather)
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${ov[@]}" --nproc-per-node 2 $extra > ov-off.txt 2>&1 \
    || { cat ov-off.txt; fail "DP=2 $extra without overlap"; }
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${ov[@]}" --nproc-per-node 2 $extra "${g[@]}" > ov-on.txt 2>&1 \
    || { cat ov-on.txt; fail "DP=2 $extra ${g[*]}"; }
  grep -q 'gradient bucket' ov-on.txt || fail "no bucket line"
  same_weights ov-on.txt
  close ov-off.txt ov-on.txt 1e-6 "DP=2 $extra: ${g[*]} against no overlap"
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${ov[@]}" --nproc-per-node 2 $extra "${g[@]}" --cuda-graphs off \
    > ov-eager.txt 2>&1 || { cat ov-eager.txt; fail "DP=2 $extra ${g[*]} --cuda-graphs off"; }
  graphs_replayed ov-on.txt ov-eager.txt "DP=2 $extra ${g[*]}"
  echo "overlap ok: DP=2 ${extra:-fp32} ${g[*]} (in CUDA graphs: the bits of --cuda-graphs off)"
done

# Accumulation 1: every micro-batch reduces (and, sharded, gathers) in its graph. Sharded, the
# weights are hashed every 5th iteration only: the hash reads them, which gathers them at once,
# so only the other micro-batches gather in their graph.
one=(--global-batch-size 4 --ddp-bucket-size 20000)
for extra in "" \
    "--bf16 --use-distributed-optimizer --overlap-param-gather --clip-grad 0.1 --log-interval 5"; do
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${one[@]}" --nproc-per-node 2 ${extra/--overlap-param-gather/} \
    > a1-off.txt 2>&1 || { cat a1-off.txt; fail "DP=2 accumulation 1 $extra without overlap"; }
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${one[@]}" --nproc-per-node 2 $extra --overlap-grad-reduce > a1-on.txt 2>&1 \
    || { cat a1-on.txt; fail "DP=2 accumulation 1 $extra --overlap-grad-reduce"; }
  # shellcheck disable=SC2086
  "$GT" "${tiny[@]}" "${one[@]}" --nproc-per-node 2 $extra --overlap-grad-reduce --cuda-graphs off \
    > a1-eager.txt 2>&1 || { cat a1-eager.txt; fail "DP=2 accumulation 1 $extra --cuda-graphs off"; }
  same_weights a1-on.txt
  close a1-off.txt a1-on.txt 1e-6 "DP=2 accumulation 1 $extra: overlap against none"
  graphs_replayed a1-on.txt a1-eager.txt "DP=2 accumulation 1 $extra"
  echo "overlap ok: DP=2 accumulation 1 ${extra:-fp32} (CUDA graphs: the bits of --cuda-graphs off)"
done

# Peak memory per rank at --bf16, DP=2, with and without the distributed optimizer (GPT-2 350M's
# shape at a short sequence, so that weights and optimizer state are most of it).
mem=(--device cuda --bf16 --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 256
     --micro-batch-size 4 --global-batch-size 8 --lr 3e-4 --mock-data --mock-data-samples 256
     --vocab-size 50257 --log-interval 1 --eval-iters 0 --train-iters 3 --nproc-per-node 2)
peak() { sed -nE 's/^\[Rank [0-9]+\] .*max allocated: ([0-9.]+).*/\1/p' "$1" | sort -g | tail -1; }
"$GT" "${mem[@]}" > mem-plain.txt 2>&1 || { cat mem-plain.txt; fail "memory run, plain DP"; }
"$GT" "${mem[@]}" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
  > mem-zero.txt 2>&1 || { cat mem-zero.txt; fail "memory run, distributed optimizer"; }
params=$(sed -nE 's/^ > number of parameters: ([0-9]+).*/\1/p' mem-plain.txt)
pp=$(peak mem-plain.txt) zp=$(peak mem-zero.txt)
[[ -n $pp && -n $zp && -n $params ]] || fail "no memory lines"
awk -v p="$pp" -v z="$zp" -v N="$params" 'BEGIN {
  b = 0.8 * 12 * N * (1 - 1 / 2) / 2^20
  printf "peak memory per rank at --bf16, DP=2: plain DP %.0f MB, distributed optimizer %.0f MB:", p, z
  printf " %.0f MB less; bound 0.8 x 12 B x %d x (1 - 1/2) = %.0f MB: %s\n", p - z, N, b,
    ((p - z >= b) ? "met" : "NOT met")
  exit !(z < p) }' || fail "the distributed optimizer does not lower the peak memory"

# Launchers: the same losses from every way of starting two ranks.
"$GT" "${tiny[@]}" --nproc-per-node 2 > np.txt 2>&1 || fail "--nproc-per-node 2"
if command -v "${TORCHRUN:-torchrun}" > /dev/null; then
  "${TORCHRUN:-torchrun}" --standalone --nproc-per-node 2 --no-python "$GT" "${tiny[@]}" > tr1.txt 2>&1 \
    || { cat tr1.txt; fail "torchrun --standalone"; }
  "${TORCHRUN:-torchrun}" --nproc-per-node 2 --master-port 29517 --no-python "$GT" "${tiny[@]}" > tr2.txt 2>&1 \
    || { cat tr2.txt; fail "torchrun --master-port"; }
  diff <(losses np.txt) <(losses tr1.txt) > /dev/null || fail "torchrun --standalone losses"
  diff <(losses np.txt) <(losses tr2.txt) > /dev/null || fail "torchrun --master-port losses"
else
  echo "(torchrun not found: its two cases skipped)"
fi
pids=()
for r in 0 1; do
  env -u RANK -u WORLD_SIZE SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_LOCALID=$r \
    SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST=localhost SLURM_NTASKS=2 \
    "$GT" "${tiny[@]}" > srun$r.txt 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat srun0.txt srun1.txt; fail "srun variables"; }; done
diff <(losses np.txt) <(losses srun1.txt) > /dev/null || fail "srun variables losses"

# A DP=2 distributed-optimizer checkpoint resumes on one GPU.
"$GT" "${tiny[@]}" --nproc-per-node 2 --use-distributed-optimizer --save ck --exit-interval 10 > a.txt 2>&1 \
  || { cat a.txt; fail "save at DP=2"; }
"$GT" "${tiny[@]}" --load ck > b.txt 2>&1 || { cat b.txt; fail "resume at DP=1"; }
paste <(losses one.txt | tail -10) <(losses b.txt) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $1) bad = 1 } END { exit bad }' || fail "resume at DP=1"

# The same with --bf16 (the fp32 master weights sharded): resume at DP=1 (close: another
# reduction) and at DP=2 (the same layout: the same losses).
bfz=(--bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
"$GT" "${tiny[@]}" --nproc-per-node 2 "${bfz[@]}" > bfz.txt 2>&1 || { cat bfz.txt; fail "bf16 DP=2 straight"; }
"$GT" "${tiny[@]}" --nproc-per-node 2 "${bfz[@]}" --save ckb --exit-interval 10 > bfa.txt 2>&1 \
  || { cat bfa.txt; fail "bf16 save at DP=2"; }
"$GT" "${tiny[@]}" --bf16 --load ckb > bfb.txt 2>&1 || { cat bfb.txt; fail "bf16 resume at DP=1"; }
"$GT" "${tiny[@]}" --nproc-per-node 2 "${bfz[@]}" --load ckb > bfc.txt 2>&1 \
  || { cat bfc.txt; fail "bf16 resume at DP=2"; }
paste <(losses bfz.txt | tail -10) <(losses bfb.txt) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 3e-2 * $1) bad = 1 } END { exit bad || NR != 10 }' \
  || fail "bf16 sharded-master checkpoint resumed at DP=1"
diff <(losses bfz.txt | tail -10) <(losses bfc.txt) > /dev/null \
  || fail "bf16 sharded-master checkpoint resumed at DP=2: other losses"

# More ranks than GPUs: refused, naming the cause.
set +e
"$GT" "${tiny[@]}" --nproc-per-node $((gpus + 1)) --global-batch-size $((2 * (gpus + 1))) \
  --distributed-timeout-minutes 0.5 > many.txt 2>&1
rc=$?
set -e
[[ $rc != 0 ]] && grep -q 'more ranks than GPUs' many.txt || { cat many.txt; fail "more ranks than GPUs"; }
echo "tests/gpu/dp.sh: all passed on $gpus GPUs"
