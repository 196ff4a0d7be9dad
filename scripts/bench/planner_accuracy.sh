#!/usr/bin/env bash
# gpt-plan's predicted step times against gpt-train's measured ones on the GPUs of one host (the
# planner's acceptance: every |predicted - measured| / measured <= 0.10). Rows: GPT-2 350M, GPT-2 XL
# and Megatron's 1.7B (24 x 2304, 24 heads) at sequence 1024, global batch 64, bf16, mock data, on 2
# and 4 GPUs: data parallel with and without the distributed optimizer, tensor parallel where the
# heads divide, pipeline parallel even and uneven, several micro-batch sizes. For each row gpt-train
# runs under --nproc-per-node N (its steady tokens/s as train_rows.sh takes them: the second half of
# the logged windows) and gpt-plan predicts that one layout (--pipeline-partition, --micro-batch-size,
# --distributed-optimizer, --recompute narrowed to it) on a cluster file whose bandwidths
# `gpt-plan bandwidth` measures first, from PROFILES (layer profiles, e.g. gpt-train
# --profile-layers' files) or, without them, --analytic at EFFICIENCY. A row gpt-train refuses (a
# build without tensor or pipeline parallelism) prints "refused" and is left out of the table.
# Writes OUT (default scripts/bench/planner_accuracy.tsv): layout, predicted_ms, measured_ms, card;
# then, per model and GPU count, the measured time of the row gpt-plan predicts fastest against the
# fastest measured row.
#   BIN=build/bin bash scripts/bench/planner_accuracy.sh 2     # the 2-GPU rows (one 10-minute call)
#   BIN=build/bin bash scripts/bench/planner_accuracy.sh 4
# Env: BIN, PROFILES (space-separated files, of one or several models: each row uses its model's),
# LOGS (a folder that keeps the bandwidth file and each row's gpt-train log, its per-stage report
# among them), MODELS (only the rows of these models, e.g. "gpt2-350m gpt2-1.5b"; two halves may run at once on
# two GPU pairs, appending to one OUT),
# EFFICIENCY (0.5), ITERS (gpt-train iterations, 30),
# OUT, GPU (the cluster file's GPU type, H100). DEVICE=cpu: a dry run of the script's logic on the
# CPU backend (tiny shapes, a CPU "GPU type" of 0.05 TFLOP/s for the analytic profile; its
# predictions mean nothing).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/train_rows.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=${1:?usage: planner_accuracy.sh 2|4}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-$ROOT/scripts/bench/planner_accuracy.tsv}
GPU=${GPU:-H100}
gbs=64 seq=1024
if [[ $DEVICE == cpu ]]; then
  gbs=8 seq=32 GPU=cpu card=cpu
else
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_')
fi

# The bandwidths of this host, measured by the communicator the rows use.
"$BIN/gpt-plan" bandwidth --nproc-per-node "$N" --device "$DEVICE" --sizes 16M,64M -o "$WORK/bw.json" 2> "$WORK/bw.log" \
  || { cat "$WORK/bw.log"; exit 1; }
{
  echo "groups:"
  echo "  - gpu: $GPU"
  echo "    nodes: 1"
  echo "    gpus-per-node: $N"
  echo "    bandwidth-files: [$WORK/bw.json]"
  if [[ $DEVICE == cpu ]]; then printf '    peak-tflops: 0.05\n    memory-bandwidth-gbs: 5\n    memory-gib: 64\n'; fi
} > "$WORK/cluster.yaml"
# The PROFILES files measured for one model shape (hidden size, heads): PROFILES may hold several models'.
profiles_for() {
  python3 - "$@" $PROFILES <<'PY'
import json, sys
hidden, heads = int(sys.argv[1]), int(sys.argv[2])
keep = []
for f in sys.argv[3:]:
    m = json.load(open(f))["model"]
    if (m["hidden-size"], m["num-attention-heads"]) == (hidden, heads):
        keep.append(f)
print(" ".join(keep))
PY
}

# model T P partition micro-batch distributed-optimizer (a row per line; "-": no partition)
if [[ $DEVICE == cpu ]]; then
  rows="4x64x4 1 1 - 2 off
4x64x4 1 1 - 1 on
4x64x4 2 1 - 2 off
4x64x4 1 2 1-3 1 off"
elif ((N == 2)); then
  rows="gpt2-350m 1 1 - 8 off
gpt2-350m 1 1 - 16 on
gpt2-350m 2 1 - 8 off
gpt2-350m 1 2 12-12 4 off
gpt2-350m 1 2 13-11 4 off
gpt2-1.5b 1 1 - 4 on
gpt2-1.5b 1 2 24-24 2 off
gpt2-1.5b 1 2 26-22 2 off
megatron-1.7b 1 1 - 4 on
megatron-1.7b 2 1 - 4 off
megatron-1.7b 1 2 12-12 4 off"
else
  rows="gpt2-350m 1 1 - 16 on
gpt2-350m 2 1 - 8 off
gpt2-350m 1 4 6-6-6-6 4 off
gpt2-1.5b 1 1 - 8 on
gpt2-1.5b 1 1 - 4 off
gpt2-1.5b 1 4 12-12-12-12 2 off
gpt2-1.5b 1 4 13-13-13-9 2 off
megatron-1.7b 1 1 - 4 on
megatron-1.7b 2 1 - 4 off
megatron-1.7b 2 2 12-12 4 off
megatron-1.7b 1 4 6-6-6-6 4 off
megatron-1.7b 1 4 7-7-6-4 4 off"
fi

[[ -s $OUT ]] || printf 'layout\tpredicted_ms\tmeasured_ms\tcard\n' > "$OUT"
: > "$WORK/rows.tsv"
while read -r model T P part mbs dist; do
  [[ -z ${MODELS:-} || " $MODELS " == *" $model "* ]] || continue
  D=$((N / (T * P)))
  layout="$model T$T P$P D$D mbs $mbs"
  flags=(--tensor-model-parallel-size "$T" --pipeline-model-parallel-size "$P" --micro-batch-size "$mbs"
         --global-batch-size "$gbs")
  narrow=(--tensor-model-parallel-size "$T" --pipeline-model-parallel-size "$P" --micro-batch-size "$mbs"
          --distributed-optimizer "$dist" --recompute off)
  if [[ $part != - ]]; then
    layout+=" $part"
    flags+=(--pipeline-partition "$part")
    narrow+=(--pipeline-partition "$part")
  fi
  if [[ $dist == on ]]; then
    layout+=" dist-opt"
    flags+=(--use-distributed-optimizer)
  fi
  if [[ $DEVICE == cpu ]]; then
    IFS=x read -r L d nh <<< "$model"
    shape=(--device cpu --num-layers "$L" --hidden-size "$d" --num-attention-heads "$nh" --vocab-size 512)
  else
    case $model in
      gpt2-350m) L=24 d=1024 nh=16 ;; gpt2-1.5b) L=48 d=1600 nh=25 ;; megatron-1.7b) L=24 d=2304 nh=24 ;;
    esac
    shape=(--device cuda --bf16 --num-layers "$L" --hidden-size "$d" --num-attention-heads "$nh" --vocab-size 50257
           --recompute-gelu-layers -1)
  fi
  if [[ -z ${PROFILES:-} ]]; then
    profile_args=(--analytic --efficiency "${EFFICIENCY:-0.5}")
  else
    files=$(profiles_for "$d" "$nh")
    [[ -n $files ]] || { echo "planner_accuracy.sh: no file in PROFILES for $model (hidden $d, $nh heads)" >&2; exit 1; }
    profile_args=(--profiles $files)
  fi
  log=$WORK/run.log
  if ! "$BIN/gpt-train" --nproc-per-node "$N" "${shape[@]}" --seq-length $seq --max-position-embeddings $seq \
      --mock-data --lr 1e-4 --log-interval 5 --eval-iters 0 --train-iters "${ITERS:-30}" "${flags[@]}" > "$log" 2>&1; then
    echo "$layout: refused or failed: $(grep -m1 'gpt-train: ' "$log" || tail -1 "$log")"
    continue
  fi
  if [[ -n ${LOGS:-} ]]; then
    mkdir -p "$LOGS"
    cp "$WORK/bw.json" "$LOGS/bandwidth-$N.json"
    cp "$log" "$LOGS/$(tr ' ' '_' <<< "$layout").log"
  fi
  tok=$(gt_steady_tokens_per_s "$log")
  measured=$(awk -v t="$tok" -v n=$((gbs * seq)) 'BEGIN { printf "%.1f", n / t * 1000 }')
  plan_model=(--model "$model")
  if [[ $DEVICE == cpu ]]; then plan_model+=(--vocab-size 512); fi
  predicted=$("$BIN/gpt-plan" "${plan_model[@]}" --seq-length $seq --global-batch-size $gbs --cluster "$WORK/cluster.yaml" \
      "${profile_args[@]}" "${narrow[@]}" --json \
    | python3 -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["layouts"][0]["step_ms"])')
  printf '%s\t%s\t%s\t%s\n' "$layout" "$predicted" "$measured" "$card" | tee -a "$OUT" >> "$WORK/rows.tsv"
  awk -v p="$predicted" -v m="$measured" -v l="$layout" 'BEGIN { printf "%s: predicted %s ms, measured %s ms (%+.1f%%)\n", l, p, m, (p - m) / m * 100 }'
done <<< "$rows"
# Per model: is the row predicted fastest within 5% of the fastest measured?
python3 - "$WORK/rows.tsv" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(list)
for layout, p, m, _ in rows:
    by[layout.split()[0]].append((layout, float(p), float(m)))
for model, rs in by.items():
    top = min(rs, key=lambda r: r[1])
    best = min(rs, key=lambda r: r[2])
    print("%s: predicted fastest %s measured %.1f ms; fastest measured %s %.1f ms (%+.1f%%)"
          % (model, top[0], top[2], best[0], best[2], (top[2] - best[2]) / best[2] * 100))
PY
[[ -n ${BENCH_WORK:-} ]] || rm -rf "$WORK"
