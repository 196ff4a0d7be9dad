#!/usr/bin/env bash
# The JSONL read + validate + re-emit path of common/ (jsonl-cat) against cat and zstdcat on the
# same input, plain and zstd-compressed; prints MB/s per core and the ratio to the reference.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
copies=${COPIES:-15}
zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" > "$WORK/one.jsonl"
for ((i = 0; i < copies; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/in.jsonl"
zstd -q -3 -T0 -f "$WORK/in.jsonl" -o "$WORK/in.jsonl.zst"
bytes=$(stat -c %s "$WORK/in.jsonl")
echo "input: $((bytes / 1000000)) MB of JSONL ($copies copies of the sample corpus); machine: $(machine)"
printf '%-44s %10s %10s %8s\n' "command" "seconds" "MB/s" "RSS MB"
row() { printf '%-44s %10s %10s %8s\n' "$1" "$LAST_SECONDS" "$(mbps "$bytes" "$LAST_SECONDS")" "$LAST_RSS_MB"; }
measure cat "cat $WORK/in.jsonl > /dev/null"; row "cat (reference)"; cat_s=$LAST_SECONDS
measure ours1 "$BIN/jsonl-cat -q --threads 1 -i $WORK/in.jsonl > /dev/null"; row "jsonl-cat --threads 1 (plain)"; ours1=$LAST_SECONDS
measure ours2 "$BIN/jsonl-cat -q --threads 2 -i $WORK/in.jsonl > /dev/null"; row "jsonl-cat --threads 2 (plain)"
measure zcat "zstdcat $WORK/in.jsonl.zst > /dev/null"; row "zstdcat (reference)"; zcat_s=$LAST_SECONDS
measure oursz "$BIN/jsonl-cat -q --threads 1 -i $WORK/in.jsonl.zst > /dev/null"; row "jsonl-cat --threads 1 (zstd)"; oursz=$LAST_SECONDS
echo "plain: jsonl-cat $(mbps "$bytes" "$ours1") MB/s per core (target >= 300); time ratio to cat: $(ratio "$ours1" "$cat_s")x"
echo "zstd: jsonl-cat $(mbps "$bytes" "$oursz") MB/s per core; time ratio to zstdcat: $(ratio "$oursz" "$zcat_s")x"
rm -rf "$WORK"
