#!/usr/bin/env bash
# Data-parallel gpt-train against PyTorch DDP (scripts/bench/torch_gpt2_reference.py under
# torchrun: torch.compile, bf16 autocast, fused AdamW, one micro-batch per step) on the GPUs of one
# host, back to back in one lease. One part per call, each within a 10-minute command:
#   --part 124m   GPT-2 124M, micro-batch 32 per GPU: gpt-train on 1 GPU (each GPU of the host in
#                 turn), 2 and 4 GPUs (fp32 reduction; the largest also --grad-reduce-in-bf16),
#                 PyTorch on 1, 2 and 4
#   --part 350m   GPT-2 350M (24 x 1024), micro-batch 16 per GPU: the same rows
#   --part xl     GPT-2 XL (48 x 1600, 25 heads), micro-batch 8: gpt-train with
#                 --use-distributed-optimizer on 1 and 4 GPUs, PyTorch on 1 and 4
# One accumulation step (global batch = micro-batch x GPUs), seq 1024, mock tokens. Prints the
# cards' UUIDs, then per row tokens/s (all GPUs), scaling efficiency = tokens/s on N GPUs / (N x
# the slowest card's one-GPU tokens/s), MFU per GPU ((6N + 12 L d T) FLOPs per token against
# PEAK_TFLOPS), peak memory per rank and the ratio to PyTorch with the same GPUs; a markdown table
# at the end (OUT_MD: also written there).
#   BIN=build/bin bash scripts/bench/train_dp_vs_torch.sh --part 124m
# Env: BIN, PYTHON (python3 with torch; torchrun beside it or on PATH), GPUS (default: every
# visible GPU, at most 4), ITERS (gpt-train iterations, default 100 at 124M/350M, 40 at XL),
# TORCH_ITERS (20, a window), TORCH_SECONDS (20 per PyTorch row), PEAK_TFLOPS (989.4, H100 SXM
# bf16 dense).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
PY=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-$(dirname "$(command -v "$PY")")/torchrun}
[[ -x $TORCHRUN ]] || TORCHRUN=torchrun
PEAK=${PEAK_TFLOPS:-989.4}
TORCH_ITERS=${TORCH_ITERS:-20}
TORCH_SECONDS=${TORCH_SECONDS:-20}
# NVLink multicast stays off on the shared hosts (NCCL, PyTorch and NVSHMEM spellings).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

part=
while (($#)); do
  case $1 in
    --part) part=${2:-}; shift 2 ;;
    --part=*) part=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "train_dp_vs_torch.sh: unknown argument '$1' (--part 124m|350m|xl)" >&2; exit 2 ;;
  esac
done
case $part in
  124m) L=12 d=768 nh=12 mbs=32 ns="1 2 4" dopt=() iters=${ITERS:-100} ;;
  350m) L=24 d=1024 nh=16 mbs=16 ns="1 2 4" dopt=() iters=${ITERS:-100} ;;
  xl) L=48 d=1600 nh=25 mbs=8 ns="1 4" dopt=(--use-distributed-optimizer) iters=${ITERS:-40} ;;
  *) echo "train_dp_vs_torch.sh: --part 124m|350m|xl is required" >&2; exit 2 ;;
esac
T=1024
[[ -x $BIN/gpt-train ]] || { echo "train_dp_vs_torch.sh: no $BIN/gpt-train (make first)" >&2; exit 1; }
source "$ROOT/scripts/bench/train_rows.sh"  # gt_windows, gt_steady_tokens_per_s

echo "cards:"
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader | sed 's/^/  /'
visible=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
gpus=${GPUS:-$((visible < 4 ? visible : 4))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

flops_per_token() {  # 6N + 12·L·d·T, N as gpt-train counts it (vocabulary padded to 128)
  awk -v L="$L" -v d="$d" -v T="$T" 'BEGIN {
    V = int((50257 + 127) / 128) * 128; F = 4 * d
    per = 2*d + (3*d*d + 3*d) + (d*d + d) + 2*d + (F*d + F) + (d*F + d)
    N = V*d + T*d + L*per + 2*d
    printf "%.6e", 6*N + 12*L*d*T }'
}
fpt=$(flops_per_token)
mfu() { awk -v f="$fpt" -v t="$1" -v n="$2" -v p="$PEAK" 'BEGIN { printf "%.1f", 100 * f * t / n / (p * 1e12) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) { print "n/a"; exit } printf "%.3f", a / b }'; }
eff() { awk -v t="$1" -v n="$2" -v one="$3" 'BEGIN { if (one <= 0) { print "n/a"; exit } printf "%.1f%%", 100 * t / (n * one) }'; }

# gt N LOG [FLAGS]: gpt-train on the first N visible GPUs (--nproc-per-node N), one micro-batch
# per GPU per step.
gt() {
  local n=$1 log=$2
  shift 2
  "$BIN/gpt-train" --nproc-per-node "$n" --device cuda --bf16 --num-layers $L --hidden-size $d \
    --num-attention-heads $nh --seq-length $T --max-position-embeddings $T \
    --micro-batch-size $mbs --global-batch-size $((mbs * n)) --lr 6e-4 --min-lr 6e-5 \
    --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --adam-beta2 0.95 \
    --clip-grad 1.0 --mock-data --vocab-size 50257 --log-interval 20 --eval-iters 0 \
    --train-iters "$iters" "$@" > "$log" 2>&1 ||
    { tail -20 "$log"; echo "gpt-train on $n GPUs failed" >&2; return 1; }
}
# Peak allocated MB of each rank, "r0/r1/...".
gt_peaks() {
  grep -E '^\[Rank [0-9]+\] .*memory \(MB\)' "$1" |
    sed -E 's/^\[Rank ([0-9]+)\].*max allocated: ([0-9.]+).*/\1 \2/' | sort -n | awk '{ printf "%s%.0f", NR > 1 ? "/" : "", $2 }'
}
# th N: the reference on the first N GPUs; its JSON line in $tj.
th() {
  local n=$1
  if ((n == 1)); then
    tj=$("$PY" "$ROOT/scripts/bench/torch_gpt2_reference.py" --layers $L --hidden $d --heads $nh \
          --seq $T --micro-batch $mbs --iters "$TORCH_ITERS" --min-seconds "$TORCH_SECONDS" \
          2> "$work/torch-$n.err" | tail -1)
  else
    tj=$("$TORCHRUN" --standalone --nproc-per-node "$n" "$ROOT/scripts/bench/torch_gpt2_reference.py" \
          --layers $L --hidden $d --heads $nh --seq $T --micro-batch $mbs --iters "$TORCH_ITERS" \
          --min-seconds "$TORCH_SECONDS" 2> "$work/torch-$n.err" | tail -1)
  fi
  [[ $tj == \{* ]] || { tail -20 "$work/torch-$n.err"; echo "torch reference on $n GPUs failed" >&2; return 1; }
}
field() { echo "$tj" | "$PY" -c "import json,sys; v=json.load(sys.stdin)['$1']; print('/'.join(str(round(x)) for x in v) if isinstance(v, list) else v)"; }

echo "part $part: L=$L d=$d heads=$nh micro-batch $mbs per GPU, ${gpus} GPU(s) visible, gpt-train ${dopt[*]:-plain DP}"
# One GPU: every card in turn (the slowest is the scaling baseline).
one=0
for ((g = 0; g < gpus; g++)); do
  CUDA_VISIBLE_DEVICES=$g gt 1 "$work/one-$g.txt" "${dopt[@]}"
  t=$(gt_steady_tokens_per_s "$work/one-$g.txt")
  echo "  gpt-train 1 GPU (card $g): $(printf %.0f "$t") tok/s, MFU $(mfu "$t" 1)%, peak $(gt_peaks "$work/one-$g.txt") MB"
  one=$(awk -v a="$one" -v b="$t" 'BEGIN { print (a == 0 || b < a) ? b : a }')
  ((g == 0)) && cp "$work/one-$g.txt" "$work/gt-1.txt"
done
table="| model | GPUs | gpt-train tok/s | scaling | MFU/GPU | peak MB per rank | PyTorch DDP tok/s | PyTorch scaling | PyTorch peak MB | ratio |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
t_one=0
for n in $ns; do
  ((n <= gpus)) || { echo "  (skipping $n GPUs: $gpus visible)"; continue; }
  ((n == 1)) || gt "$n" "$work/gt-$n.txt" "${dopt[@]}"
  t=$(gt_steady_tokens_per_s "$work/gt-$n.txt")
  ((n == 1)) && t=$one
  th "$n"
  tt=$(field tokens_per_second)
  ((n == 1)) && t_one=$tt
  line="| $part | $n | $(printf %.0f "$t") | $(eff "$t" "$n" "$one") | $(mfu "$t" "$n")% | $(gt_peaks "$work/gt-$n.txt") | $(printf %.0f "$tt") | $(eff "$tt" "$n" "$t_one") | $(field max_allocated_mb_per_rank) | $(ratio "$t" "$tt") |"
  echo "$line"
  table+=$'\n'"$line"
done
# The largest run again with bf16 gradient reduction.
nmax=$(for n in $ns; do ((n <= gpus)) && echo "$n"; done | tail -1)
if ((nmax > 1)); then
  gt "$nmax" "$work/bf16.txt" "${dopt[@]}" --grad-reduce-in-bf16
  t=$(gt_steady_tokens_per_s "$work/bf16.txt")
  line="| $part --grad-reduce-in-bf16 | $nmax | $(printf %.0f "$t") | $(eff "$t" "$nmax" "$one") | $(mfu "$t" "$nmax")% | $(gt_peaks "$work/bf16.txt") | | | | |"
  echo "$line"
  table+=$'\n'"$line"
fi
echo
echo "$table"
[[ -n ${OUT_MD:-} ]] && echo "$table" > "$OUT_MD"
exit 0
