#!/usr/bin/env bash
# Megatron-core itself (pretrain_gpt.py of a fetched snapshot, packed by megatron_core_pack.sh) on
# the 1.7B model of Megatron's table (24 x 2304, 24 heads, sequence 1024, global batch 64,
# micro-batch 4, bf16, mock data, dropout 0 as gpt-train's default) under torchrun on the GPUs of
# one host, one layout after the other, with the flags these hosts need
# (../shared/specs/distributed-training.md section 10: --transformer-impl local and the fused
# kernels off, NullTokenizer, no --sequence-parallel, CUDA_DEVICE_MAX_CONNECTIONS=1, NVLink
# multicast off). Layouts: d4 (--use-distributed-optimizer --overlap-grad-reduce
# --overlap-param-gather), t2d2 (the same data-parallel flags), t2p2, p4.
# Prints for each layout one line "megatron LAYOUT: TOKENS tok/s, STEP ms/step, peak MB r0/r1/..."
# (tokens/s over the logged windows after the first: 64 x 1024 / their mean "elapsed time per
# iteration (ms)"), or why it failed with the end of its log; the logs are kept in LOG_DIR.
#   bash scripts/bench/megatron_core_run.sh .e2e/megatron-core.tar.gz d4 t2d2 t2p2 p4
# Env: PYTHON (python3 with torch; torchrun beside it, else on PATH), ITERS (20), LOG_INTERVAL (5),
# BUDGET_SECONDS (570: each layout gets what is left), LOG_DIR (default a temporary folder,
# removed), MEGATRON_DIR (where the tarball is unpacked, default a temporary folder),
# EXTRA_ARGS (more pretrain_gpt.py flags, e.g. "--num-layers 2" for a quick try).
set -euo pipefail
# shellcheck source=scripts/bench/megatron_core_env.sh
source "$(dirname "$0")/megatron_core_env.sh"
[[ $# -ge 2 ]] || { echo "usage: megatron_core_run.sh TARBALL LAYOUT... (d4 t2d2 t2p2 p4)" >&2; exit 2; }
tarball=$1
shift
for l in "$@"; do
  case $l in d4|t2d2|t2p2|p4) ;; *) echo "megatron_core_run.sh: unknown layout '$l'" >&2; exit 2 ;; esac
done
ITERS=${ITERS:-20}
LOGI=${LOG_INTERVAL:-5}
BUDGET=${BUDGET_SECONDS:-570}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
logs=${LOG_DIR:-$tmp/logs}
mkdir -p "$logs"
megatron_core_setup megatron_core_run.sh "$tarball" "${MEGATRON_DIR:-$tmp}" || exit 1

gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
model=(--num-layers 24 --hidden-size 2304 --num-attention-heads 24 --seq-length 1024
       --max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 64 --bf16
       --attention-dropout 0 --hidden-dropout 0
       --lr 6e-4 --min-lr 6e-5 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1
       --adam-beta2 0.95 --clip-grad 1.0 --train-iters "$ITERS" --log-interval "$LOGI"
       --eval-iters 0 --eval-interval 1000000 "${megatron_local_flags[@]}"
       --tokenizer-type NullTokenizer --vocab-size 50257 --mock-data)
dopt=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
failures=0
for l in "$@"; do
  case $l in
    d4) n=4 par=(--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "${dopt[@]}") ;;
    t2d2) n=4 par=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 "${dopt[@]}") ;;
    t2p2) n=4 par=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2) ;;
    p4) n=4 par=(--tensor-model-parallel-size 1 --pipeline-model-parallel-size 4) ;;
  esac
  log=$logs/megatron-$l.txt
  if ((gpus < n)); then
    echo "megatron $l: skipped ($gpus GPU(s), needs $n)"
    continue
  fi
  left=$((BUDGET - SECONDS))
  start=$SECONDS rc=0
  if ((left > 5)); then
    # shellcheck disable=SC2086
    (cd "$mc" && timeout -k 15 "$left" "$TORCHRUN" --standalone --nproc_per_node "$n" \
       pretrain_gpt.py "${model[@]}" "${par[@]}" ${EXTRA_ARGS:-}) > "$log" 2>&1 || rc=$?
  else
    rc=124
  fi
  # Mean step time over the windows after the first (start-up and warm-up).
  read -r ms windows < <(grep -o 'elapsed time per iteration (ms): [0-9.]*' "$log" |
    awk '{ v[NR] = $NF } END { n = 0; s = 0; for (i = 2; i <= NR; i++) { s += v[i]; n++ }
                               if (n == 0 && NR > 0) { s = v[1]; n = 1 }
                               if (n) printf "%.1f %d\n", s / n, n; else print "- 0" }')
  # Each reporting rank's largest peak (Megatron prints it on data-parallel rank 0 of each group).
  peaks=$(sed -nE 's/.*\[Rank ([0-9]+)\] .*max allocated: ([0-9.]+).*/\1 \2/p' "$log" |
          awk '{ if (!($1 in m) || $2 > m[$1]) m[$1] = $2 } END { for (r in m) print r, m[r] }' |
          sort -n | awk '{ printf "%s%.0f", (NR > 1 ? "/" : ""), $2 }')
  if ((rc == 0)) && [[ $ms != - ]]; then
    tps=$(awk -v ms="$ms" 'BEGIN { printf "%.0f", 64 * 1024 / (ms / 1000) }')
    echo "megatron $l: $tps tok/s, $ms ms/step ($windows window(s)), peak MB ${peaks:-n/a} ($((SECONDS - start)) s)"
  else
    why=$( ((rc == 124 || rc == 137)) && echo "timed out" || echo "failed (exit $rc)")
    echo "megatron $l: $why ($((SECONDS - start)) s); its log ends:"
    tail -12 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
done
((failures == 0))
