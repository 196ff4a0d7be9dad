#!/usr/bin/env bash
# wiki-extract: MB/s of XML per core on a generated dump (SIZE_MB, default 300), plain and multistream
# bzip2, one thread and all cores. No Wikipedia extractor can be installed here (WikiExtractor and
# mwparserfromhell need PyPI), so the reference printed beside ours is `bzip2 -dc` alone: the floor
# that any extractor reading .bz2 on one core pays before doing any work.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
size_mb=${SIZE_MB:-300}
cores=$(nproc)
WE=$BIN/wiki-extract
python3 "$ROOT/scripts/bench/gen_wiki_dump.py" --mb "$size_mb" -o "$WORK/dump.xml" --bz2 "$WORK/dump.xml.bz2"
bytes=$(stat -c %s "$WORK/dump.xml")
echo "input: $((bytes / 1000000)) MB of XML, $(($(stat -c %s "$WORK/dump.xml.bz2") / 1000000)) MB as multistream bzip2; machine: $(machine)"
# On a shared machine wall time per core understates multi-threaded runs, so the last column divides
# by the CPU time actually used (user + sys of one more run).
printf '%-46s %8s %8s %13s %13s %7s\n' "command" "seconds" "MB/s" "MB/s per core" "MB per CPU-s" "RSS MB"
row() {  # row LABEL CORES CMD
  local m cpu; m=$(mbps "$bytes" "$LAST_SECONDS")
  /usr/bin/time -f '%U %S' -o "$WORK/cpu.txt" bash -c "$3"
  cpu=$(awk '{print $1 + $2}' "$WORK/cpu.txt")
  printf '%-46s %8s %8s %13s %13s %7s\n' "$1" "$LAST_SECONDS" "$m" "$(awk -v m="$m" -v c="$2" 'BEGIN{printf "%.1f", m / c}')" \
    "$(mbps "$bytes" "$cpu")" "$LAST_RSS_MB"
}
run_row() {  # run_row VAR LABEL CORES CMD: measure, print the row, VAR=MB/s
  measure "$1" "$4"; row "$2" "$3" "$4"; printf -v "$1" '%s' "$(mbps "$bytes" "$LAST_SECONDS")"
}
run_row p1 "wiki-extract plain, --threads 1" 1 "$WE -q --threads 1 -i $WORK/dump.xml -o /dev/null"
run_row pN "wiki-extract plain, --threads $cores" "$cores" "$WE -q --threads $cores -i $WORK/dump.xml -o /dev/null"
run_row b1 "wiki-extract bz2, --threads 1" 1 "$WE -q --threads 1 -i $WORK/dump.xml.bz2 -o /dev/null"
run_row bN "wiki-extract bz2, --threads $cores" "$cores" "$WE -q --threads $cores -i $WORK/dump.xml.bz2 -o /dev/null"
run_row r "reference: bzip2 -dc (decompression only)" 1 "bzip2 -dc $WORK/dump.xml.bz2 > /dev/null"
echo "plain: $p1 MB/s on 1 core, $pN MB/s on $cores; bz2: $b1 MB/s on 1 core, $bN MB/s on $cores (target >= 20 MB/s per core)"
echo "bz2 one thread vs bzip2 -dc alone: $(ratio "$b1" "$r")x; all cores vs bzip2 -dc: $(ratio "$bN" "$r")x"
rm -f "$WORK/dump.xml" "$WORK/dump.xml.bz2"
