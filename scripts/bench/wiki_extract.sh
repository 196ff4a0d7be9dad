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
printf '%-52s %9s %9s %13s %8s\n' "command" "seconds" "MB/s" "MB/s per core" "RSS MB"
row() {  # row LABEL CORES
  local m; m=$(mbps "$bytes" "$LAST_SECONDS")
  printf '%-52s %9s %9s %13s %8s\n' "$1" "$LAST_SECONDS" "$m" "$(awk -v m="$m" -v c="$2" 'BEGIN{printf "%.1f", m / c}')" "$LAST_RSS_MB"
}
measure plain1 "$WE -q --threads 1 -i $WORK/dump.xml -o /dev/null"; row "wiki-extract plain, --threads 1" 1; p1=$(mbps "$bytes" "$LAST_SECONDS")
measure plainN "$WE -q --threads $cores -i $WORK/dump.xml -o /dev/null"; row "wiki-extract plain, --threads $cores" "$cores"
measure bz1 "$WE -q --threads 1 -i $WORK/dump.xml.bz2 -o /dev/null"; row "wiki-extract bz2, --threads 1" 1; b1=$(mbps "$bytes" "$LAST_SECONDS")
measure bzN "$WE -q --threads $cores -i $WORK/dump.xml.bz2 -o /dev/null"; row "wiki-extract bz2, --threads $cores" "$cores"; bN=$(mbps "$bytes" "$LAST_SECONDS")
measure ref "bzip2 -dc $WORK/dump.xml.bz2 > /dev/null"; row "reference: bzip2 -dc (decompression only)" 1; r=$(mbps "$bytes" "$LAST_SECONDS")
echo "plain: $p1 MB/s per core; bz2: $b1 MB/s on 1 core, $bN MB/s on $cores (target >= 20 MB/s per core)"
echo "bz2 one thread vs bzip2 -dc alone: $(ratio "$b1" "$r")x; all cores vs bzip2 -dc: $(ratio "$bN" "$r")x"
rm -f "$WORK/dump.xml" "$WORK/dump.xml.bz2"
