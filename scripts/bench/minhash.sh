#!/usr/bin/env bash
# minhash-dedup: signature-stage MB/s per core and one-process end-to-end MB/s on the sample corpus
# (field text, replicated COPIES times), and peak memory per million documents on generated short
# documents. datatrove cannot be installed here (no PyPI), so its figure is the one recorded in
# /work/shared/specs/filtering-dedup.md §1.7 (issue huggingface/datatrove#298), printed beside ours.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
copies=${COPIES:-4}
docs_big=${DOCS:-1000000}
MD=$BIN/minhash-dedup
zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" > "$WORK/one.jsonl"
for ((i = 0; i < copies; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/in.jsonl"
bytes=$(stat -c %s "$WORK/in.jsonl")
ndocs=$(wc -l < "$WORK/in.jsonl")
# The sample's lines carry other large fields; the "text" field is about a sixth of the bytes.
text_bytes=$(python3 -c 'import json,sys; print(sum(len(json.loads(l)["text"].encode()) for l in open(sys.argv[1])) * int(sys.argv[2]))' "$WORK/one.jsonl" "$copies")
echo "input: $((bytes / 1000000)) MB of JSONL ($((text_bytes / 1000000)) MB in the text field), $ndocs documents ($copies copies of the sample corpus); machine: $(machine)"
printf '%-58s %9s %9s %8s\n' "command" "seconds" "MB/s" "RSS MB"
row() { printf '%-58s %9s %9s %8s\n' "$1" "$LAST_SECONDS" "$(mbps "$2" "$LAST_SECONDS")" "$LAST_RSS_MB"; }
measure sig1 "rm -rf $WORK/wd; $MD -q --threads 1 --stage signatures --shard 0/1 --work-dir $WORK/wd -i $WORK/in.jsonl"
row "signatures stage, --threads 1" "$bytes"; sig1=$(mbps "$bytes" "$LAST_SECONDS"); sig1t=$(mbps "$text_bytes" "$LAST_SECONDS")
measure sig2 "rm -rf $WORK/wd; $MD -q --threads 2 --stage signatures --shard 0/1 --work-dir $WORK/wd -i $WORK/in.jsonl"
row "signatures stage, --threads 2" "$bytes"
measure all1 "$MD -q --threads 1 -i $WORK/in.jsonl -o /dev/null"
row "one process (signatures+cluster+filter), --threads 1" "$bytes"
measure all2 "$MD -q --threads 2 -i $WORK/in.jsonl -o /dev/null"
row "one process (signatures+cluster+filter), --threads 2" "$bytes"; all2=$(mbps "$bytes" "$LAST_SECONDS"); all2t=$(mbps "$text_bytes" "$LAST_SECONDS")
echo "signatures: $sig1 MB/s of JSONL per core, $sig1t MB/s of text per core (target >= 20); datatrove stage 1: ~0.8-0.9 MB/s per task (recorded in the spec, not measured here)"
echo "one process end to end, 2 threads: $all2 MB/s of JSONL, $all2t MB/s of text (target >= 30)"

# Peak memory per million documents: short generated documents (about 25 words), two sizes, slope.
gen() {
  python3 - "$1" <<'PY'
import random, sys
rng = random.Random(5)
words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 8))) for _ in range(20000)]
out = sys.stdout
for i in range(int(sys.argv[1])):
    out.write('{"id":"d%d","text":"%s"}\n' % (i, " ".join(rng.choice(words) for _ in range(25))))
PY
}
small=$((docs_big / 5))
gen "$small" > "$WORK/small.jsonl"
gen "$docs_big" > "$WORK/big.jsonl"
REPEAT=1 measure mem_small "$MD -q --threads 2 -i $WORK/small.jsonl -o /dev/null"; rss_small=$LAST_RSS_MB
REPEAT=1 measure mem_big "$MD -q --threads 2 -i $WORK/big.jsonl -o /dev/null"; rss_big=$LAST_RSS_MB
row "one process, $docs_big short docs, --threads 2" "$(stat -c %s "$WORK/big.jsonl")"
rm -rf "$WORK/wd"
REPEAT=1 measure sig_big "$MD -q --threads 2 --stage signatures --shard 0/1 --work-dir $WORK/wd -i $WORK/big.jsonl"
row "signatures stage, $docs_big short docs" "$(stat -c %s "$WORK/big.jsonl")"; rss_sig=$LAST_RSS_MB
REPEAT=1 measure clu_big "$MD -q --threads 2 --stage cluster --work-dir $WORK/wd"
row "cluster stage, $docs_big short docs" "$(stat -c %s "$WORK/big.jsonl")"; rss_clu=$LAST_RSS_MB
per_m=$(awk -v a="$rss_small" -v b="$rss_big" -v n="$docs_big" -v s="$small" 'BEGIN{printf "%.0f", (b - a) / ((n - s) / 1e6)}')
echo "peak RSS: one process $rss_small MB at $small docs, $rss_big MB at $docs_big docs -> $per_m MB per million documents (slope)"
echo "peak RSS at $docs_big docs: signatures stage $rss_sig MB, cluster stage $rss_clu MB"
rm -rf "$WORK"
