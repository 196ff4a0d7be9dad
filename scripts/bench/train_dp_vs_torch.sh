#!/usr/bin/env bash
# Data-parallel gpt-train --bf16 against PyTorch DDP (scripts/bench/torch_gpt2_reference.py under
# torchrun --standalone: torch.compile, bf16 autocast, fused AdamW, SDPA flash, the same model and
# step) on the GPUs of one host, back to back in one lease. One part per call, each well within a
# 10-minute command:
#   --part 124m   GPT-2 124M, micro-batch 32 per GPU: gpt-train on 1 GPU (every GPU of the host),
#                 2 and 4 GPUs, and 4 GPUs again with --grad-reduce-in-bf16; PyTorch DDP on 2, 4, 1
#   --part 350m   GPT-2 350M (24 x 1024), micro-batch 16 per GPU: the same rows
#   --part xl     GPT-2 XL (48 x 1600, 25 heads), micro-batch 8 per GPU, gpt-train with
#                 --use-distributed-optimizer on 1 GPU (every GPU) and 4, 4 with
#                 --grad-reduce-in-bf16, and 4 without the distributed optimizer (plain DP: its
#                 peak memory against the bound 0.8 x 12 bytes x parameters x (1 - 1/4)); PyTorch
#                 DDP on 4 and 1
#   --part check  the fp32 equivalence checks (scripts/bench/train_dp_check.sh): DP=2 and 4
#                 against DP=1, the distributed optimizer against plain DP, the launchers
# One accumulation step (global batch = micro-batch x GPUs); the row settings of train_rows.sh
# (seq 1024, mock tokens, vocabulary 50257, its lr schedule, --recompute-gelu-layers and
# --classifier-rows of the row: 124M-32 and 350M-16; at XL 0 and 4096) and its timing: gpt-train
# runs ITERS iterations logged every LOG_INTERVAL, timed over the second half of the windows
# (gt_steady_tokens_per_s); PyTorch runs 5 warm-up steps (compilation) then TORCH_ITERS-step
# windows for TORCH_SECONDS, timed over the second half of its windows.
# The one-GPU rows run on every card concurrently (ONE_GPU=concurrent: one gpt-train per card,
# CUDA_VISIBLE_DEVICES=i, all at once: the cards as loaded as in the N-GPU rows, and a quarter of
# the lease time) or one after the other (ONE_GPU=serial). PyTorch's one-GPU row runs on card 0.
# Prints the cards' UUIDs, a line per run as it ends, then a markdown table (OUT_MD: also written
# there): tokens/s of all GPUs; scaling efficiency = tokens/s on N GPUs / (N x the slowest card's
# one-GPU tokens/s) (PyTorch's: against its own one-GPU row); MFU per GPU (gpt-train's: the log's
# own formula and peak, taken at the timed tokens/s; PyTorch's: (6N + 12 L d T) FLOPs per token
# against PEAK_TFLOPS, as train_vs_torch.sh); peak memory per rank (the log's "[Rank r] ... max
# allocated" lines; PyTorch's max_memory_allocated per rank), and gpt-train / PyTorch tokens/s at
# the same GPU count. Every command gets what is left of BUDGET_SECONDS (a run cut off prints
# "timed out" and the table still comes), so a part ends before the call's 10 minutes.
#   BIN=build/bin PYTHON=python3 bash scripts/bench/train_dp_vs_torch.sh --part 124m
# Env: BIN (gpt-train's folder; LD_LIBRARY_PATH set by the caller), PYTHON (python3 with torch;
# torchrun beside it, else on PATH), GPUS (largest N, default every visible GPU up to 4), ITERS
# (gpt-train iterations: 60, XL 40), LOG_INTERVAL (10), TORCH_ITERS (10), TORCH_SECONDS (8),
# TORCH (0: gpt-train rows only; only: PyTorch rows only, e.g. a second call when XL's compilation
# did not fit), ONE_GPU (concurrent | serial), BUDGET_SECONDS (570), PEAK_TFLOPS (989.4, H100 SXM
# bf16 dense), GELU_RECOMPUTE and CLASSIFIER_ROWS (as train_rows.sh), OUT_MD, OVERLAP (1, the
# default as in NeMo's presets: the multi-GPU rows run --overlap-grad-reduce, and
# --overlap-param-gather with the distributed optimizer; 0: neither). DEVICE=cpu: a dry
# run of the script's logic on the CPU backend (tiny shapes, 1 thread a rank, no PyTorch rows);
# with --part check, the checks on the CPU backend.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# NVLink multicast stays off on the shared hosts (NCCL, PyTorch and NVSHMEM spellings).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BIN:-$ROOT/build/bin}
PY=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-$(dirname "$(command -v "$PY" || echo /nonexistent/python3)")/torchrun}
[[ -x $TORCHRUN ]] || TORCHRUN=torchrun
DEVICE=${DEVICE:-cuda}
PEAK=${PEAK_TFLOPS:-989.4}
TORCH_ITERS=${TORCH_ITERS:-10}
TORCH_SECONDS=${TORCH_SECONDS:-8}
ONE_GPU=${ONE_GPU:-concurrent}
BUDGET=${BUDGET_SECONDS:-570}
LOGI=${LOG_INTERVAL:-10}
OVERLAP=${OVERLAP:-1}
[[ $OVERLAP == 0 || $OVERLAP == 1 ]] || { echo "train_dp_vs_torch.sh: OVERLAP must be 0 or 1" >&2; exit 2; }

source "$ROOT/scripts/bench/train_rows.sh"  # bench_part, row_shape, gt_* (the logs' figures)
bench_part "124m|350m|xl|check" "$@"
[[ $ONE_GPU == concurrent || $ONE_GPU == serial ]] ||
  { echo "train_dp_vs_torch.sh: ONE_GPU must be concurrent or serial" >&2; exit 2; }
[[ $part == check ]] && exec bash "$ROOT/scripts/bench/train_dp_check.sh"
case $part in
  124m) row_shape 124M-32; ns="1 2 4" dopt=() iters=${ITERS:-60} ;;
  350m) row_shape 350M-16; ns="1 2 4" dopt=() iters=${ITERS:-60} ;;
  xl) L=48 d=1600 nh=25 mbs=8 T=1024 gelu=${GELU_RECOMPUTE:-0} cls=${CLASSIFIER_ROWS:-4096}
      ns="1 4" dopt=(--use-distributed-optimizer) iters=${ITERS:-40} ;;
  *) echo "train_dp_vs_torch.sh: --part 124m|350m|xl|check is required" >&2; exit 2 ;;
esac
V=50257
# The shape's flags, the precision and the row's CUDA settings; on the CPU a tiny model.
if [[ $DEVICE == cuda ]]; then
  dev=(--device cuda --bf16 --recompute-gelu-layers "$gelu" --classifier-rows "$cls")
  torch=${TORCH:-1}
  [[ $torch == 0 || $torch == 1 || $torch == only ]] ||
    { echo "train_dp_vs_torch.sh: TORCH must be 0, 1 or only" >&2; exit 2; }
else
  L=2 d=64 nh=4 T=64 mbs=2 V=512 iters=${ITERS:-20} LOGI=${LOG_INTERVAL:-5}
  dev=(--device cpu --cpu-threads 1)
  torch=0
fi
[[ -x $BIN/gpt-train ]] || { echo "train_dp_vs_torch.sh: no $BIN/gpt-train (make first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $DEVICE == cuda ]]; then
  echo "cards:"
  nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader | sed 's/^/  /'
  cards=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
else
  echo "cards: none (DEVICE=cpu: ranks of the CPU backend)"
  cards=${GPUS:-4}
fi
gpus=${GPUS:-$((cards < 4 ? cards : 4))}
ns=$(for n in $ns; do if ((n <= gpus)); then echo "$n"; fi; done | xargs)
nmax=${ns##* }

# flops_per_token and params: 6N + 12 L d T, N as gpt-train counts it (vocabulary padded to 128).
model_sums() {
  awk -v L="$L" -v d="$d" -v T="$T" -v V0="$V" 'BEGIN {
    V = int((V0 + 127) / 128) * 128; F = 4 * d
    per = 2*d + (3*d*d + 3*d) + (d*d + d) + 2*d + (F*d + F) + (d*F + d)
    N = V*d + T*d + L*per + 2*d
    printf "%.6e %d\n", 6*N + 12*L*d*T, N }'
}
read -r fpt params < <(model_sums)
torch_mfu() {  # TOKENS_PER_S N
  awk -v f="$fpt" -v t="$1" -v n="$2" -v p="$PEAK" 'BEGIN { printf "%.1f%%", 100 * f * t / n / (p * 1e12) }'
}
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b <= 0) { print "n/a"; exit }
                                   printf "%.3f", a / b }'
}
eff() {  # TOKENS_PER_S N ONE_GPU_TOKENS_PER_S
  awk -v t="$1" -v n="$2" -v one="$3" 'BEGIN { if (t == "" || one == "" || one <= 0) { print "n/a"; exit }
                                               printf "%.1f%%", 100 * t / (n * one) }'
}
ended() { ((rc == 124 || rc == 137)) && echo "timed out" || echo "failed (exit $rc)"; }
num() { [[ -n $1 ]] && printf %.0f "$1" || echo "n/a"; }

# limited CMD...: CMD within what is left of the budget (exit 124 when cut off).
limited() {
  local left=$((BUDGET - SECONDS))
  ((left > 5)) || return 124
  timeout -k 15 "$left" "$@"
}
# gt N LOG [FLAG...]: gpt-train on the first N visible GPUs (--nproc-per-node N when N > 1), one
# micro-batch per GPU per step; the FLAGs go last (a repeated flag keeps its last value). Prints
# nothing; its status says whether the log has the timed windows.
gt() {
  local n=$1 log=$2
  shift 2
  [[ $torch == only ]] && { : > "$log"; return 3; }
  local launch=()
  ((n > 1)) && launch=(--nproc-per-node "$n")
  if ((n > 1)) && [[ $OVERLAP == 1 ]]; then
    launch+=(--overlap-grad-reduce)
    [[ " $* " == *" --use-distributed-optimizer "* ]] && launch+=(--overlap-param-gather)
  fi
  limited "$BIN/gpt-train" "${launch[@]}" "${dev[@]}" --num-layers "$L" --hidden-size "$d" \
    --num-attention-heads "$nh" --seq-length "$T" --max-position-embeddings "$T" \
    --micro-batch-size "$mbs" --global-batch-size $((mbs * n)) --lr 6e-4 --min-lr 6e-5 \
    --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --adam-beta2 0.95 \
    --clip-grad 1.0 --mock-data --vocab-size "$V" --log-interval "$LOGI" --eval-iters 0 \
    --train-iters "$iters" "$@" > "$log" 2>&1
}
# gt_report WHAT LOG STATUS START: the run's line; its tokens/s in $t ("" if it failed).
gt_report() {
  local what=$1 log=$2 rc=$3 start=$4
  t=
  if ((rc == 3)); then
    echo "  $what: skipped (TORCH=only)"
  elif ((rc == 0)); then
    t=$(gt_steady_tokens_per_s "$log")
    echo "  $what: $(num "$t") tok/s, MFU/GPU $(gt_mfu "$log" "$t"), peak MB $(gt_peaks "$log")" \
         "($((SECONDS - start)) s)"
  else
    echo "  $what: $(ended) ($((SECONDS - start)) s); its log ends:"
    tail -8 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}
# th N: the reference on the first N GPUs (N > 1: torchrun --standalone, DDP); its JSON line in
# th_json[N].
declare -A th_json=()
th() {
  local n=$1 start=$SECONDS rc=0
  local out=$work/torch-$n.json err=$work/torch-$n.err
  local args=(--layers "$L" --hidden "$d" --heads "$nh" --seq "$T" --vocab "$V" --micro-batch "$mbs"
              --iters "$TORCH_ITERS" --min-seconds "$TORCH_SECONDS")
  if ((n == 1)); then
    CUDA_VISIBLE_DEVICES=0 limited "$PY" "$ROOT/scripts/bench/torch_gpt2_reference.py" "${args[@]}" \
      > "$out" 2> "$err" || rc=$?
  else
    limited "$TORCHRUN" --standalone --nproc_per_node "$n" "$ROOT/scripts/bench/torch_gpt2_reference.py" \
      "${args[@]}" > "$out" 2> "$err" || rc=$?
  fi
  local j
  j=$(grep '^{' "$out" | tail -1 || true)
  if ((rc == 0)) && [[ -n $j ]]; then
    th_json[$n]=$j
    echo "  PyTorch DDP $n GPU(s): $(num "$(field "$n" tokens_per_second)") tok/s," \
         "peak MB $(field "$n" max_allocated_mb_per_rank), windows $(field "$n" window_tokens_per_second)" \
         "($((SECONDS - start)) s, torch $(field "$n" torch))"
  else
    echo "  PyTorch DDP $n GPU(s): $(ended) ($((SECONDS - start)) s); its stderr ends:"
    tail -8 "$err" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}
# field N KEY: KEY of th_json[N] (lists joined with "/", numbers rounded); empty without a row.
field() {
  [[ -n ${th_json[$1]:-} ]] || return 0
  echo "${th_json[$1]}" | "$PY" -c "
import json, sys
v = json.load(sys.stdin)['$2']
print('/'.join(str(round(x)) for x in v) if isinstance(v, list) else v)"
}

failures=0
echo "part $part: L=$L d=$d heads=$nh seq $T micro-batch $mbs per GPU, one accumulation step," \
     "GPUs: $ns (of $cards); gpt-train ${dopt[*]:-plain DP}, $iters iterations logged every $LOGI," \
     "${dev[*]}; one-GPU rows $ONE_GPU;" \
     "multi-GPU rows $( ((OVERLAP)) && echo "with" || echo "without") --overlap-grad-reduce"
echo "  $params parameters, $fpt FLOPs per token"

# One GPU: every card (the slowest is the scaling baseline).
declare -A one=()
start=$SECONDS
if [[ $ONE_GPU == concurrent ]]; then
  pids=()
  for ((g = 0; g < cards; g++)); do
    CUDA_VISIBLE_DEVICES=$g gt 1 "$work/one-$g.txt" "${dopt[@]}" & pids+=($!)
  done
fi
for ((g = 0; g < cards; g++)); do
  rc=0
  if [[ $ONE_GPU == concurrent ]]; then
    wait "${pids[$g]}" || rc=$?
  else
    start=$SECONDS
    CUDA_VISIBLE_DEVICES=$g gt 1 "$work/one-$g.txt" "${dopt[@]}" || rc=$?
  fi
  gt_report "gpt-train 1 GPU (card $g)" "$work/one-$g.txt" "$rc" "$start"
  one[$g]=$t
done
slowest=$(for g in "${!one[@]}"; do if [[ -n ${one[$g]} ]]; then echo "${one[$g]}"; fi; done | sort -g |
          head -1)
echo "  slowest card: $(num "$slowest") tok/s"

declare -A gt_t=() gt_log=()
gt_t[1]=${one[0]:-}
gt_log[1]=$work/one-0.txt
for n in $ns; do
  ((n > 1)) || continue
  start=$SECONDS rc=0
  gt "$n" "$work/gt-$n.txt" "${dopt[@]}" || rc=$?
  gt_report "gpt-train $n GPUs" "$work/gt-$n.txt" "$rc" "$start"
  gt_t[$n]=$t
  gt_log[$n]=$work/gt-$n.txt
done
bf16_t=
if ((nmax > 1)); then
  start=$SECONDS rc=0
  gt "$nmax" "$work/bf16.txt" "${dopt[@]}" --grad-reduce-in-bf16 || rc=$?
  gt_report "gpt-train $nmax GPUs --grad-reduce-in-bf16" "$work/bf16.txt" "$rc" "$start"
  bf16_t=$t
fi
plain_t=
if ((${#dopt[@]} > 0 && nmax > 1)); then
  start=$SECONDS rc=0
  gt "$nmax" "$work/plain.txt" || rc=$?
  gt_report "gpt-train $nmax GPUs, plain DP (no distributed optimizer)" "$work/plain.txt" "$rc" "$start"
  plain_t=$t
fi

# PyTorch: the multi-GPU rows first (the ones the acceptance compares), its one-GPU row last.
if [[ $torch != 0 ]]; then
  for n in $ns; do if ((n > 1)); then th "$n"; fi; done
  if [[ " $ns " == *" 1 "* ]]; then th 1; fi
fi

table="| model | GPUs | gpt-train tok/s | scaling | MFU/GPU | peak MB per rank | PyTorch DDP tok/s | PyTorch scaling | PyTorch MFU/GPU | PyTorch peak MB per rank | ratio |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
t_one=$(field 1 tokens_per_second)
row() {  # LABEL GPUS GT_TOKS LOG [TORCH_N]
  local tt="" tm="" tp="" ts=""
  if [[ -n ${5:-} && -n ${th_json[$5]:-} ]]; then
    tt=$(field "$5" tokens_per_second)
    tm=$(torch_mfu "$tt" "$5")
    tp=$(field "$5" max_allocated_mb_per_rank)
    ts=$(eff "$tt" "$5" "$t_one")
  fi
  local line
  line="| $1 | $2 | $(num "$3") | $(eff "$3" "$2" "$slowest") | $(gt_mfu "$4" "$3") | $(gt_peaks "$4")"
  line+=" | $(num "$tt") | ${ts:-n/a} | ${tm:-n/a} | ${tp:-n/a} | $(ratio "$3" "$tt") |"
  table+=$'\n'"$line"
}
for ((g = 0; g < cards; g++)); do
  row "$part (card $g)" 1 "${one[$g]}" "$work/one-$g.txt" "$( ((g == 0)) && echo 1)"
done
lbl="$part${dopt[*]:+ ${dopt[*]}}"
for n in $ns; do if ((n > 1)); then row "$lbl" "$n" "${gt_t[$n]}" "${gt_log[$n]}" "$n"; fi; done
if ((nmax > 1)); then row "$lbl --grad-reduce-in-bf16" "$nmax" "$bf16_t" "$work/bf16.txt" "$nmax"; fi
if [[ -f $work/plain.txt ]]; then
  row "$part plain DP" "$nmax" "$plain_t" "$work/plain.txt" "$nmax"
fi
echo
echo "$table"
# The distributed optimizer's saving of peak memory per rank against plain DP, and the bound.
if [[ -f $work/plain.txt && -f ${gt_log[$nmax]:-} ]]; then
  zp=$(gt_peak_max "${gt_log[$nmax]}") pp=$(gt_peak_max "$work/plain.txt")
  if [[ -n $zp && -n $pp ]]; then
    awk -v z="$zp" -v p="$pp" -v N="$params" -v D="$nmax" 'BEGIN {
      b = 0.8 * 12 * N * (1 - 1 / D) / 2^20
      printf "\ndistributed optimizer at %d GPUs: peak %.0f MB per rank against plain DP %.0f MB:", D, z, p
      printf " %.0f MB less; bound 0.8 x 12 B x %d x (1 - 1/%d) = %.0f MB: %s\n",
        p - z, N, D, b, ((p - z >= b) ? "met" : "NOT met") }'
  fi
fi
if [[ -n ${OUT_MD:-} ]]; then echo "$table" > "$OUT_MD"; fi
echo "part $part: $SECONDS s, $failures run(s) failed or timed out"
((failures == 0))
