# The rows of the gpt-train benchmark table (sourced by train_vs_torch.sh, ab_train.sh,
# trace_step.sh, train_dp_vs_torch.sh and train_parallel.sh):
# GPT-2 124M at micro-batch 16 and 32, GPT-2 350M (24×1024) at 16, seq 1024; and the models past
# GPT-2: Megatron's 1.7B (24×2304, 24 heads: head size 96) at seq 1024 and GPT-3 XL 1.3B (24×2048,
# 16 heads: head size 128) at seq 2048, micro-batch 4, each also as ROW-drop with attention and
# hidden dropout 0.1 (1.7B-4, 1.7B-4-drop, 1.3B-4, 1.3B-4-drop). Mock tokens, bf16, AdamW with
# gradient clipping, the flags the PyTorch reference mirrors.
#   row_shape ROW        sets L, d, nh, T, mbs, gelu (--recompute-gelu-layers), cls
#                        (--classifier-rows), drop (attention and hidden dropout, 0 or 0.1),
#                        name (the table's label) and steady (iterations that take about 30 s on
#                        an H100, for train_vs_torch.sh's steady-state window; estimated at 50%
#                        MFU for the 1.7B and 1.3B rows) for ROW
#   gt_row GT ROW LOG [FLAG...]
#                        runs gpt-train binary GT for ROW with ITERS iterations, log in LOG; the
#                        FLAGs go last, so they replace the row's own (gpt-train keeps a repeated
#                        flag's last value)
#   gt_windows LOG       the logged tokens/s, one line per --log-interval window
#   gt_tokens_per_s LOG [N]
#                        the last logged tokens/s (the mean of the last --log-interval
#                        iterations), or the Nth logged one
#   gt_steady_tokens_per_s LOG
#                        tokens/s over the second half of the logged windows (all their tokens
#                        over all their time; the first window, with the start-up, not counted)
#   gt_peak_mb LOG       the last logged max allocated MB
# GELU_RECOMPUTE overrides --recompute-gelu-layers for every row: by default 0 at 124M, where
# keeping every layer's GELU output stays under the reference's peak memory, and 5 of 24 at 350M,
# where keeping all 24 would not (128 MiB per kept layer at micro-batch 16: 19,896 MB at 8, 20,280
# at 5, 20,408 at 4, against the reference's 20,422; a kept layer's GELU backward is ~23 µs
# faster; of the 5, the last keeps its output in the shared buffer).
# CLASSIFIER_ROWS overrides --classifier-rows (default 4096) for every row. 8192 at 124M-32 (4
# chunks instead of 8, +393 MiB, still under the reference's peak) measured +1.2% on an H200 and
# -0.2% on an H100 (RESULTS.md, twenty-second round); at the other rows it would pass the
# reference's peak.
# The 1.7B and 1.3B rows recompute every layer's GELU output (-1): keeping them measured no
# faster (RESULTS.md: 16 of 24 kept at 1.3B-4 gave 135.8 against 134.4 ms a step, 18 of 24 a
# ratio of 1.150 against 1.155), for 128 MiB (1.3B) or 72 MiB (1.7B) of memory per kept layer.
row_shape() {
  local base=${1%-drop}
  drop=0
  [[ $base != "$1" ]] && drop=0.1
  mbs=${base#*-} T=1024
  case ${base%-*} in
    124M) L=12 d=768 nh=12 gelu=${GELU_RECOMPUTE:-0} name="GPT-2 124M"
      steady=$((mbs == 16 ? 1000 : 520)) ;;
    350M) L=24 d=1024 nh=16 gelu=${GELU_RECOMPUTE:-5} steady=380 name="GPT-2 350M" ;;
    1.7B) L=24 d=2304 nh=24 gelu=${GELU_RECOMPUTE:--1} steady=340 name="Megatron 1.7B" ;;
    1.3B) L=24 d=2048 nh=16 gelu=${GELU_RECOMPUTE:--1} steady=200 T=2048 name="GPT-3 XL 1.3B" ;;
    *) echo "train_rows.sh: unknown row $1" >&2; return 2 ;;
  esac
  [[ $drop != 0 ]] && name+=" dropout 0.1"
  cls=${CLASSIFIER_ROWS:-4096}
}

gt_row() {
  local gt=$1 row=$2 log=$3
  shift 3
  row_shape "$row" || return
  "$gt" --device cuda --bf16 --num-layers $L --hidden-size $d --num-attention-heads $nh \
    --seq-length $T --max-position-embeddings $T --micro-batch-size $mbs --global-batch-size $mbs \
    --lr 6e-4 --min-lr 6e-5 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1 \
    --adam-beta2 0.95 --clip-grad 1.0 --mock-data --vocab-size 50257 --log-interval 20 \
    --eval-iters 0 --train-iters "${ITERS:-40}" --recompute-gelu-layers "$gelu" --classifier-rows "$cls" \
    --attention-dropout "$drop" --hidden-dropout "$drop" "$@" > "$log" 2>&1 ||
    { tail -20 "$log"; echo "gpt-train $row failed" >&2; return 1; }
}

# The tokens/s of each logged window, one per line.
gt_windows() { grep -E '^ iteration' "$1" | sed -E 's/.*tokens per second: ([0-9.]+).*/\1/'; }
gt_tokens_per_s() { gt_windows "$1" | if [[ -n ${2:-} ]]; then sed -n "${2}p"; else tail -1; fi; }
gt_steady_tokens_per_s() {
  gt_windows "$1" |
    awk '{ w[NR] = $1 }
         END { n = NR - 1; if (n < 1) { print w[NR]; exit }
               k = 0; s = 0; for (i = NR - int((n + 1) / 2) + 1; i <= NR; i++) { s += 1 / w[i]; k++ }
               printf "%.1f\n", k / s }'
}
# gpt-train's MFU at tokens/s T: the log's own MFU / tokens-per-second factor (its formula and
# peak, per GPU), from its last window.
gt_mfu() {
  [[ -n $2 ]] || { echo "n/a"; return; }
  { grep -E '^ iteration' "$1" || true; } | tail -1 | awk -v t="$2" '{
    s = $0; sub(/.*tokens per second: /, "", s); sub(/ .*/, "", s)
    m = $0; if (m !~ /MFU: [0-9.]+%/) { print "n/a"; exit }
    sub(/.*MFU: /, "", m); sub(/%.*/, "", m); printf "%.1f%%", m / s * t }
    END { if (NR == 0) print "n/a" }'
}
# Peak allocated MB of each rank, "r0/r1/..." in rank order (gt_peaks); the largest (gt_peak_max).
gt_peaks() {
  local p
  p=$(sed -nE 's/^\[Rank ([0-9]+)\] .*memory \(MB\).* max allocated: ([0-9.]+).*/\1 \2/p' "$1" |
      sort -n | awk '{ printf "%s%.0f", (NR > 1 ? "/" : ""), $2 }')
  echo "${p:-n/a}"
}
gt_peak_max() { sed -nE 's/^\[Rank [0-9]+\] .*max allocated: ([0-9.]+).*/\1/p' "$1" | sort -g | tail -1; }
gt_peak_mb() {
  local m
  m=$(grep -E 'memory \(MB\)' "$1" | tail -1 | sed -E 's/.*max allocated: ([0-9.]+).*/\1/')
  echo "${m:-0}"
}

# bench_part PARTS ARGS...: sets part from --part P (or --part=P) in ARGS; -h or --help prints the
# calling script's header comment; anything else is a usage error that names PARTS. DEVICE must
# be cuda or cpu.
bench_part() {
  local parts=$1
  shift
  part=
  while (($#)); do
    case $1 in
      --part) part=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
      --part=*) part=${1#*=}; shift ;;
      -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) echo "${0##*/}: unknown argument '$1' (--part $parts)" >&2; exit 2 ;;
    esac
  done
  [[ $DEVICE == cuda || $DEVICE == cpu ]] || { echo "${0##*/}: DEVICE must be cuda or cpu" >&2; exit 2; }
}
