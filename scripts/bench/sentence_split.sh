#!/usr/bin/env bash
# sentence-split (ICU + rule pass) against its own --icu-only mode (plain ICU BreakIterator with
# "ss=standard", the reference: no pySBD/NLTK on this machine) and jsonl-cat (the JSONL I/O floor),
# on a corpus of the text fields of data/sample; prints MB/s of JSONL per core at --threads 1.
# Wall time (best of REPEAT) and CPU time (user+sys of that run) are both shown: on a shared
# machine the CPU-time figure is the per-core speed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
copies=${COPIES:-10}
zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" |
  python3 -c 'import json, sys
for line in sys.stdin: print(json.dumps({"text": json.loads(line)["text"]}, ensure_ascii=False))' > "$WORK/one.jsonl"
for ((i = 0; i < copies; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/in.jsonl"
bytes=$(stat -c %s "$WORK/in.jsonl")
echo "input: $((bytes / 1000000)) MB of JSONL ($copies copies of the text fields of data/sample); machine: $(machine)"

# cpu_measure NAME cmd: best wall time of REPEAT runs, with that run's user+sys seconds (LAST_CPU).
cpu_measure() {
  local name=$1; shift
  local best="" cpu="" i t u s
  for ((i = 0; i < ${REPEAT:-3}; i++)); do
    /usr/bin/time -f '%e %U %S' -o "$WORK/time.txt" bash -c "$*" || { echo "bench: '$name' failed" >&2; return 1; }
    read -r t u s < <(tail -1 "$WORK/time.txt")
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then
      best=$t; cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u + s}')
    fi
  done
  LAST_SECONDS=$best; LAST_CPU=$cpu
}
printf '%-46s %8s %10s %8s %12s\n' "command" "wall s" "MB/s wall" "cpu s" "MB/s per cpu"
row() { printf '%-46s %8s %10s %8s %12s\n' "$1" "$LAST_SECONDS" "$(mbps "$bytes" "$LAST_SECONDS")" "$LAST_CPU" "$(mbps "$bytes" "$LAST_CPU")"; }
cpu_measure cat "$BIN/jsonl-cat -q --threads 1 -i $WORK/in.jsonl > /dev/null"; row "jsonl-cat --threads 1 (I/O floor)"
cpu_measure icu "$BIN/sentence-split -q --icu-only --threads 1 -i $WORK/in.jsonl > /dev/null"; row "sentence-split --icu-only --threads 1"
icu_cpu=$LAST_CPU; icu_wall=$LAST_SECONDS
cpu_measure ours "$BIN/sentence-split -q --threads 1 -i $WORK/in.jsonl > $WORK/out.jsonl"; row "sentence-split --threads 1"
ours_cpu=$LAST_CPU; ours_wall=$LAST_SECONDS
cpu_measure ours2 "$BIN/sentence-split -q --threads 2 -i $WORK/in.jsonl > /dev/null"; row "sentence-split --threads 2"
sentences=$(python3 -c 'import json, sys; print(sum(len(json.loads(l)["text"]) for l in open(sys.argv[1])))' "$WORK/out.jsonl")
echo "sentences: $sentences"
echo "sentence-split --threads 1: $(mbps "$bytes" "$ours_wall") MB/s wall, $(mbps "$bytes" "$ours_cpu") MB/s per CPU-second (target >= 50)"
echo "time ratio to --icu-only (plain ICU): wall $(ratio "$ours_wall" "$icu_wall")x, cpu $(ratio "$ours_cpu" "$icu_cpu")x"
rm -rf "$WORK"
