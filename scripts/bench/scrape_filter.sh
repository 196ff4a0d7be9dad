#!/usr/bin/env bash
# scrape-filter with every stage on (URL rules with a 10,000-domain blocklist, repair, --rules all,
# --lang en, decontamination against a small evaluation file) on copies of the sample corpus, in
# text mode and --html mode, one thread; jsonl-cat on the same input is the I/O floor.
# No Python reference (datatrove, trafilatura) is installed on the machine, so none is timed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
copies=${COPIES:-2}
zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" > "$WORK/one.jsonl"
for ((i = 0; i < copies; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/in.jsonl"
bytes=$(stat -c %s "$WORK/in.jsonl")
for ((i = 0; i < 10000; i++)); do echo "blocked-site-$i.example"; done > "$WORK/blocklist.txt"
echo "the committee voted seven to two in favour of the proposal after a long debate" > "$WORK/eval.txt"
all="--rules all --lang en --url-blocklist $WORK/blocklist.txt --decontaminate $WORK/eval.txt"
echo "input: $((bytes / 1000000)) MB of JSONL ($copies copies of the sample corpus, fields id,url,title,text,html); machine: $(machine)"
printf '%-52s %10s %10s %8s\n' "command" "seconds" "MB/s" "RSS MB"
row() { printf '%-52s %10s %10s %8s\n' "$1" "$LAST_SECONDS" "$(mbps "$bytes" "$LAST_SECONDS")" "$LAST_RSS_MB"; }
measure cat "$BIN/jsonl-cat -q --threads 1 -i $WORK/in.jsonl > /dev/null"; row "jsonl-cat --threads 1 (I/O floor)"; cat_s=$LAST_SECONDS
measure text "$BIN/scrape-filter -q --threads 1 $all -i $WORK/in.jsonl > /dev/null"; row "scrape-filter --threads 1 (text, all stages)"; text_s=$LAST_SECONDS
measure html "$BIN/scrape-filter -q --threads 1 --html $all -i $WORK/in.jsonl > /dev/null"; row "scrape-filter --threads 1 --html (all stages)"; html_s=$LAST_SECONDS
measure html2 "$BIN/scrape-filter -q --threads 2 --html $all -i $WORK/in.jsonl > /dev/null"; row "scrape-filter --threads 2 --html (all stages)"
echo "text mode: $(mbps "$bytes" "$text_s") MB/s per core (target >= 20); time ratio to jsonl-cat: $(ratio "$text_s" "$cat_s")x"
echo "html mode: $(mbps "$bytes" "$html_s") MB/s per core (target >= 20); time ratio to jsonl-cat: $(ratio "$html_s" "$cat_s")x"
rm -rf "$WORK"
