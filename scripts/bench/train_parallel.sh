#!/usr/bin/env bash
# gpt-train --bf16 with tensor and pipeline parallelism on the GPUs of one host (4), against
# Megatron-core itself, back to back in one lease. One part per call, each within a 10-minute
# command:
#   --part xl       GPT-2 XL (48 x 1600, 25 heads), micro-batch 4, global batch 64: P2·D2 (8
#                   micro-batches per pipeline), P4 with the even partition (16 micro-batches),
#                   then P4 with uneven partitions, the fastest kept: gpt-plan's proposal
#                   ($BIN/gpt-plan, when built), the partition that balances the even run's
#                   per-stage report (per-layer time from the middle stages, the first and last
#                   stages' extra time from theirs) and the ends-light 12-13-13-10; the check
#                   measured bubble <= (P-1)/(m+P-1) + 5 points, the even partition's beside it
#   --part 1.7b     Megatron's 1.7B (24 x 2304, 24 heads), sequence 1024, global batch 64,
#                   micro-batch 4: D4 with --use-distributed-optimizer, T2·D2 (also with it), T2·P2,
#                   P4; the check T2·D2 >= 85% of D4's tokens/s. Its rows are kept in
#                   STATE_DIR/1.7b.tsv (and $OUT/ when OUT is a folder) for the megatron part
#   --part 5b       NeMo's 5B shape (24 x 4096, 32 heads), sequence 2048, global batch 64,
#                   micro-batch MBS_5B (1): D4 with the distributed optimizer and T2·D2; the checks
#                   peak <= 79 GiB per GPU and MFU >= 45%
#   --part megatron Megatron-core (scripts/bench/megatron_core_run.sh, MEGATRON_TARBALL) on the
#                   1.7B layouts d4 t2d2 t2p2 p4, and gpt-train / Megatron-core per layout from the
#                   1.7b part's rows in STATE_DIR (acceptance >= 2x)
# gpt-train runs ITERS iterations (30) logged every LOG_INTERVAL (5), timed over the second half of
# the windows (train_rows.sh's gt_steady_tokens_per_s). MFU per GPU: the log's own formula and peak
# at the timed tokens/s (as train_dp_vs_torch.sh). Peak memory per GPU: the "[Rank r] ... max
# allocated" lines. Bubble: the last "[pipeline] ... measured bubble" line of the run (gpt-train's
# per-stage report: 1 - sum of the stages' compute / (P x step time)); its stage lines are printed.
# Prints the cards' UUIDs, a line per run as it ends, then a markdown table (OUT_MD: also written
# there). Every command gets what is left of BUDGET_SECONDS (570).
#   BIN=build/bin bash scripts/bench/train_parallel.sh --part xl
# Env: BIN (gpt-train's folder; LD_LIBRARY_PATH set by the caller), PYTHON (python3 with torch for
# the megatron part), ITERS, LOG_INTERVAL, BUDGET_SECONDS, PEAK_TFLOPS (989.4, H100 SXM bf16
# dense, for Megatron's MFU), GELU_RECOMPUTE (--recompute-gelu-layers: xl 0, 1.7b and 5b -1),
# CLASSIFIER_ROWS (4096), MBS_5B, XL_PARTITIONS (more P4 partitions to try, space-separated),
# STATE_DIR (.e2e/train_parallel), MEGATRON_TARBALL (.e2e/megatron-core.tar.gz), OUT_MD.
# DEVICE=cpu: a dry run of the script's logic on the CPU backend (tiny shapes of the same layer
# counts' ratios, 1 thread a rank, no Megatron).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# NVLink multicast stays off on the shared hosts (NCCL, PyTorch and NVSHMEM spellings).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BIN:-$ROOT/build/bin}
DEVICE=${DEVICE:-cuda}
PEAK=${PEAK_TFLOPS:-989.4}
BUDGET=${BUDGET_SECONDS:-570}
LOGI=${LOG_INTERVAL:-5}
ITERS=${ITERS:-30}
STATE=${STATE_DIR:-$ROOT/.e2e/train_parallel}
TARBALL=${MEGATRON_TARBALL:-$ROOT/.e2e/megatron-core.tar.gz}

source "$ROOT/scripts/bench/train_rows.sh"  # bench_part, row_shape, gt_* (the logs' figures)
bench_part "xl|1.7b|5b|megatron" "$@"
case $part in
  xl) L=48 d=1600 nh=25 T=1024 mbs=4 gbs=64 gelu=${GELU_RECOMPUTE:-0} ;;
  1.7b) L=24 d=2304 nh=24 T=1024 mbs=4 gbs=64 gelu=${GELU_RECOMPUTE:--1} ;;
  5b) L=24 d=4096 nh=32 T=2048 mbs=${MBS_5B:-1} gbs=64 gelu=${GELU_RECOMPUTE:--1} ;;
  megatron) L=24 d=2304 nh=24 T=1024 mbs=4 gbs=64 gelu=-1 ;;
  *) echo "train_parallel.sh: --part xl|1.7b|5b|megatron is required" >&2; exit 2 ;;
esac
cls=${CLASSIFIER_ROWS:-4096}
V=50257
# The distributed optimizer's rows overlap its collectives with the passes, as Megatron-core's
# runner does (megatron_core_run.sh).
dopt=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
if [[ $DEVICE == cuda ]]; then
  dev=(--device cuda --bf16 --recompute-gelu-layers "$gelu" --classifier-rows "$cls")
else
  # The same layer counts (partitions stay meaningful), tiny widths; 2 heads split over T=2.
  d=32 nh=4 T=32 mbs=2 gbs=32 V=512 ITERS=${ITERS_CPU:-6} LOGI=2
  dev=(--device cpu --cpu-threads 1)
fi
[[ $part == megatron || -x $BIN/gpt-train ]] ||
  { echo "train_parallel.sh: no $BIN/gpt-train (make first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$STATE"

if [[ $DEVICE == cuda ]]; then
  echo "cards:"
  nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader | sed 's/^/  /'
  cards=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
else
  echo "cards: none (DEVICE=cpu: ranks of the CPU backend)"
  cards=4
fi
((cards >= 4)) || echo "train_parallel.sh: $cards GPU(s); the 4-GPU rows will fail" >&2

ended() { ((rc == 124 || rc == 137)) && echo "timed out" || echo "failed (exit $rc)"; }
num() { [[ -n $1 ]] && printf %.0f "$1" || echo "n/a"; }
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b <= 0) { print "n/a"; exit }
                                   printf "%.3f", a / b }'
}
# The last measured bubble (percent) of the per-stage report; empty without a pipeline.
gt_bubble() {
  { grep -E '^ \[pipeline\] after iteration' "$1" || true; } | tail -1 |
    sed -nE 's/.*measured bubble: ([0-9.]+)%.*/\1/p'
}
# The last report's stage lines.
gt_stage_lines() {
  local it
  it=$({ grep -E '^ \[pipeline\] after iteration' "$1" || true; } | tail -1 |
       sed -E 's/.*iteration ([0-9]+):.*/\1/')
  [[ -n $it ]] || return 0
  grep -E "^ \[pipeline( stage [0-9]+)?\] after iteration $it:" "$1"
}

limited() {
  local left=$((BUDGET - SECONDS))
  ((left > 5)) || return 124
  timeout -k 15 "$left" "$@"
}
# gt LOG T P [FLAG...]: gpt-train on T x P x D = 4 ranks (--nproc-per-node 4).
gt() {
  local log=$1 tp=$2 pp=$3
  shift 3
  limited "$BIN/gpt-train" --nproc-per-node 4 "${dev[@]}" --tensor-model-parallel-size "$tp" \
    --pipeline-model-parallel-size "$pp" --num-layers "$L" --hidden-size "$d" \
    --num-attention-heads "$nh" --seq-length "$T" --max-position-embeddings "$T" \
    --micro-batch-size "$mbs" --global-batch-size "$gbs" --lr 6e-4 --min-lr 6e-5 \
    --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 --adam-beta2 0.95 \
    --clip-grad 1.0 --mock-data --vocab-size "$V" --log-interval "$LOGI" --eval-iters 0 \
    --train-iters "$ITERS" "$@" > "$log" 2>&1
}

failures=0
table="| model | layout | partition | gpt-train tok/s | MFU/GPU | peak MB per rank | bubble (measured) | 1F1B bubble (P-1)/(m+P-1) |
| --- | --- | --- | --- | --- | --- | --- | --- |"
declare -A tok=() logs=()
# run KEY LABEL T P [FLAG...]: one gpt-train row; its tokens/s in tok[KEY] ("" if it failed).
run() {
  local key=$1 label=$2 tp=$3 pp=$4
  shift 4
  local log=$work/$key.txt start=$SECONDS rc=0 t=
  gt "$log" "$tp" "$pp" "$@" || rc=$?
  logs[$key]=$log
  local dp=$((4 / (tp * pp))) m
  m=$((gbs / (mbs * dp)))
  local pt=-
  if ((pp > 1)); then
    pt=$(sed -nE 's/^> transformer layers per pipeline stage: (.*)/\1/p' "$log" | head -1)
    [[ -n $pt ]] || pt=even
  fi
  local ideal=-
  ((pp > 1)) && ideal=$(awk -v p="$pp" -v m="$m" 'BEGIN { printf "%.1f%%", 100 * (p - 1) / (m + p - 1) }')
  if ((rc == 0)); then
    t=$(gt_steady_tokens_per_s "$log")
    local b
    b=$(gt_bubble "$log")
    echo "  $label ($pt): $(num "$t") tok/s, MFU/GPU $(gt_mfu "$log" "$t"), peak MB $(gt_peaks "$log")" \
         "${b:+, bubble $b% (1F1B $ideal)} ($((SECONDS - start)) s)"
    if ((pp > 1)); then gt_stage_lines "$log" | sed 's/^/    /' || true; fi
    table+=$'\n'"| $part_name | $label | $pt | $(num "$t") | $(gt_mfu "$log" "$t") | $(gt_peaks "$log") | ${b:+$b%} | $ideal |"
  else
    echo "  $label: $(ended) ($((SECONDS - start)) s); its log ends:"
    tail -8 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
    table+=$'\n'"| $part_name | $label | $pt | $(ended) | | | | $ideal |"
  fi
  tok[$key]=$t
  return 0
}

# The P4 partition that balances the even run's report: per-layer time t from the middle
# stages, the first and last stages' extra time e and h; layers n_s minimising the slowest of
# n_0 t + e, n_i t, n_3 t + h with sum n_s = L (zeros allowed at the ends).
balanced_partition() {
  gt_stage_lines "$1" | grep 'pipeline stage' | sed -E 's/.*\(([0-9]+)[,)].*compute \(ms per iteration\): ([0-9.]+).*/\1 \2/' |
    awk -v L="$L" '{ n[NR - 1] = $1; c[NR - 1] = $2; P = NR }
      END {
        if (P < 3) exit
        tl = 0; nl = 0
        for (s = 1; s < P - 1; s++) { tl += c[s]; nl += n[s] }
        if (nl == 0) exit
        t = tl / nl; e = c[0] - n[0] * t; h = c[P - 1] - n[P - 1] * t
        best = -1
        for (a = 0; a <= L; a++) for (z = 0; a + z <= L; z++) {
          mid = L - a - z; q = int(mid / (P - 2)); r = mid - q * (P - 2)
          worst = a * t + e; if (z * t + h > worst) worst = z * t + h
          mt = (q + (r > 0)) * t; if (mt > worst) worst = mt
          if (best < 0 || worst < best) { best = worst; ba = a; bz = z; bq = q; br = r }
        }
        out = ba
        for (s = 1; s < P - 1; s++) out = out "-" (bq + (s - 1 < br))
        print out "-" bz
      }'
}
# gpt-plan's P4 partition for this model on this host's 4 GPUs (analytic profiles of an H100, the
# bandwidths measured here by the communicator the runs use).
plan_partition() {
  [[ -x $BIN/gpt-plan ]] || return 0
  "$BIN/gpt-plan" bandwidth --nproc-per-node 4 --device "$DEVICE" --sizes 16M,64M -o "$work/bw.json" \
    2> "$work/plan.err" || { echo "  (gpt-plan bandwidth failed: $(tail -1 "$work/plan.err"))" >&2; return 0; }
  {
    echo "groups:"
    echo "  - gpu: H100"
    echo "    nodes: 1"
    echo "    gpus-per-node: 4"
    echo "    bandwidth-files: [$work/bw.json]"
    if [[ $DEVICE == cpu ]]; then printf '    peak-tflops: 0.05\n    memory-bandwidth-gbs: 5\n    memory-gib: 64\n'; fi
  } > "$work/cluster.yaml"
  "$BIN/gpt-plan" --num-layers "$L" --hidden-size "$d" --num-attention-heads "$nh" \
    --vocab-size "$V" --seq-length "$T" --global-batch-size "$gbs" --cluster "$work/cluster.yaml" \
    --analytic --tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 \
    --micro-batch-size "$mbs" --json 2> "$work/plan.err" |
    python3 -c 'import json, sys; print("-".join(str(n) for n in json.load(sys.stdin)["layouts"][0]["partition"]))' \
    2>> "$work/plan.err" || { echo "  (gpt-plan proposed nothing: $(tail -1 "$work/plan.err"))" >&2; }
}

part_name=$part
case $part in
  xl)
    echo "part xl: GPT-2 XL L=$L d=$d heads=$nh seq $T micro-batch $mbs global batch $gbs," \
         "$ITERS iterations logged every $LOGI, ${dev[*]}"
    run p2d2 "P2·D2" 1 2
    run p4even "P4 even" 1 4
    cands=()
    p=$(plan_partition || true)
    [[ -n $p ]] && cands+=("$p") && echo "  gpt-plan proposes $p"
    p=$(balanced_partition "${logs[p4even]}" || true)
    [[ -n $p ]] && echo "  the even run's report balances to $p"
    [[ -n $p ]] && cands+=("$p")
    cands+=(12-13-13-10 ${XL_PARTITIONS:-})
    tried=" 12-12-12-12 "
    best= best_t=0
    for c in "${cands[@]}"; do
      [[ $tried == *" $c "* ]] && continue
      tried+="$c "
      run "p4-$c" "P4 $c" 1 4 --pipeline-partition "$c"
      if [[ -n ${tok[p4-$c]} ]] && awk -v a="${tok[p4-$c]}" -v b="$best_t" 'BEGIN { exit !(a > b) }'; then
        best=$c best_t=${tok[p4-$c]}
      fi
    done
    echo
    echo "$table"
    if [[ -n $best ]]; then
      m=$((gbs / mbs))
      bb=$(gt_bubble "${logs[p4-$best]}") be=$(gt_bubble "${logs[p4even]}")
      awk -v b="$bb" -v e="${be:-n/a}" -v m="$m" -v p="$best" -v t="$best_t" -v te="${tok[p4even]:-0}" 'BEGIN {
        bound = 100 * 3 / (m + 3) + 5
        printf "\nP4 best uneven partition %s: %.0f tok/s (%.3fx the even one); measured bubble %.1f%%", p, t, (te > 0 ? t / te : 0), b
        printf " against (P-1)/(m+P-1) + 5 points = %.1f%% (m = %d): %s; the even partition'"'"'s bubble %s%%\n",
               bound, m, (b != "" && b <= bound) ? "met" : "NOT met", e }'
    fi
    ;;
  1.7b)
    echo "part 1.7b: L=$L d=$d heads=$nh seq $T micro-batch $mbs global batch $gbs," \
         "$ITERS iterations logged every $LOGI, ${dev[*]}"
    run d4 "D4 distributed optimizer" 1 1 "${dopt[@]}"
    run t2d2 "T2·D2 distributed optimizer" 2 1 "${dopt[@]}"
    run t2p2 "T2·P2" 2 2
    run p4 "P4" 1 4
    echo
    echo "$table"
    printf 'd4\t%s\nt2d2\t%s\nt2p2\t%s\np4\t%s\n' "${tok[d4]}" "${tok[t2d2]}" "${tok[t2p2]}" "${tok[p4]}" \
      > "$STATE/1.7b.tsv"
    if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then cp "$STATE/1.7b.tsv" "$OUT/"; fi
    awk -v a="${tok[t2d2]}" -v b="${tok[d4]}" 'BEGIN { if (a == "" || b == "") exit
      printf "\nT2·D2 / D4 = %.1f%% (acceptance >= 85%%): %s\n", 100 * a / b, (a >= 0.85 * b) ? "met" : "NOT met" }'
    ;;
  5b)
    echo "part 5b: L=$L d=$d heads=$nh seq $T micro-batch $mbs global batch $gbs," \
         "$ITERS iterations logged every $LOGI, ${dev[*]}"
    run d4 "D4 distributed optimizer" 1 1 "${dopt[@]}"
    run t2d2 "T2·D2 distributed optimizer" 2 1 "${dopt[@]}"
    echo
    echo "$table"
    for k in d4 t2d2; do
      [[ -n ${tok[$k]} ]] || continue
      pk=$(gt_peak_max "${logs[$k]}")
      mf=$(gt_mfu "${logs[$k]}" "${tok[$k]}")
      awk -v k="$k" -v pk="${pk:-0}" -v mf="${mf%\%}" 'BEGIN {
        printf "5B %s: peak %.0f MB = %.1f GiB (<= 79: %s), MFU %s%% (>= 45: %s)\n", k, pk, pk / 1024,
               (pk / 1024 <= 79) ? "met" : "NOT met", mf, (mf != "n/a" && mf + 0 >= 45) ? "met" : "NOT met" }'
    done
    ;;
  megatron)
    [[ $DEVICE == cuda ]] || { echo "train_parallel.sh: --part megatron needs DEVICE=cuda" >&2; exit 2; }
    echo "part megatron: Megatron-core on the 1.7B layouts (L=$L d=$d heads=$nh seq $T micro-batch $mbs" \
         "global batch $gbs) from $TARBALL"
    BUDGET_SECONDS=$((BUDGET - SECONDS)) LOG_DIR=$work/megatron \
      bash "$ROOT/scripts/bench/megatron_core_run.sh" "$TARBALL" d4 t2d2 t2p2 p4 | tee "$work/megatron.txt" ||
      failures=$((failures + 1))
    table="| layout | gpt-train tok/s | Megatron-core tok/s | Megatron-core MFU/GPU | Megatron-core peak MB | gpt-train / Megatron-core (>= 2) |
| --- | --- | --- | --- | --- | --- |"
    fpt=$(awk -v L="$L" -v d="$d" -v T="$T" 'BEGIN { V = 50304; F = 4 * d
      per = 2*d + (3*d*d + 3*d) + (d*d + d) + 2*d + (F*d + F) + (d*F + d)
      N = V*d + T*d + L*per + 2*d; printf "%.6e", 6*N + 12*L*d*T }')
    for l in d4 t2d2 t2p2 p4; do
      g=$(awk -F'\t' -v l="$l" '$1 == l { print $2 }' "$STATE/1.7b.tsv" 2>/dev/null || true)
      mt=$(sed -nE "s/^megatron $l: ([0-9]+) tok\/s.*/\1/p" "$work/megatron.txt")
      mp=$(sed -nE "s/^megatron $l: .*peak MB ([^ ]+) .*/\1/p" "$work/megatron.txt")
      mm=$( [[ -n $mt ]] && awk -v f="$fpt" -v t="$mt" -v p="$PEAK" 'BEGIN { printf "%.1f%%", 100 * f * t / 4 / (p * 1e12) }')
      table+=$'\n'"| $l | $(num "$g") | $(num "$mt") | ${mm:-n/a} | ${mp:-n/a} | $(ratio "$g" "$mt") |"
    done
    [[ -f $STATE/1.7b.tsv ]] || echo "(no $STATE/1.7b.tsv: run --part 1.7b first on this machine for the ratios)"
    echo
    echo "$table"
    ;;
esac
if [[ -n ${OUT_MD:-} ]]; then echo "$table" > "$OUT_MD"; fi
echo "part $part: $SECONDS s, $failures run(s) failed or timed out"
((failures == 0))
