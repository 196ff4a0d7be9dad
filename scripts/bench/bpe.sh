#!/usr/bin/env bash
# bpe-encode and bpe-train against tiktoken-rs 0.6 and HF tokenizers 0.23.2 (npm packages, cached
# under build/npm-oracles) on the same input: the text of the sample corpus (COPIES copies, default 12: 126 MB, so that
# process start and vocabulary load do not hide the 2-thread scaling).
#   encode: bpe-encode --threads 1 vs tiktoken-rs on one thread (target >= 3x its MB/s);
#           --threads 2 vs --threads 1 (target >= 1.8x); peak RSS.
#   train:  bpe-train vs HF's train(files) (BpeTrainer defaults, vocab 30,000) on the same lines
#           (target <= 0.5x its time, no more memory).
#   pathological inputs: 1 MB of one character, 1 MB without whitespace, a 100,000-character
#           whitespace run, each timed (tiktoken-rs alongside, killed after PATHO_LIMIT seconds).
# MB/s are of text bytes (UTF-8 of the "text" fields). bpe-encode is timed end to end (process
# start, vocabulary load, JSON in and out); tiktoken-rs only around its encode calls.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
copies=${COPIES:-12}
ORACLES=$ROOT/build/npm-oracles
if [[ ! -f $ORACLES/node_modules/tokenizers/package.json || ! -d $ORACLES/node_modules/tiktoken-rs-node-linux-x64-gnu ]]; then
  npm install --prefix "$ORACLES" --no-save --no-audit --no-fund --no-package-lock \
    tiktoken-rs-node-linux-x64-gnu@1.0.6 tokenizers@0.23.2 >/dev/null
fi
export NODE_PATH=$ORACLES/node_modules
ORACLE="node $ROOT/tests/e2e/bpe_diff.mjs"
V="--vocab-file $ROOT/data/gpt2/vocab.json --merge-file $ROOT/data/gpt2/merges.txt"

zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" | python3 -c "
import json, sys
with open('$WORK/one.jsonl', 'w', encoding='utf-8') as j, open('$WORK/lines.txt', 'w', encoding='utf-8', newline='') as t:
    for l in sys.stdin:
        s = json.loads(l)['text']
        j.write(json.dumps({'text': s}, ensure_ascii=False) + '\n')
        t.write(s if s.endswith('\n') else s + '\n')"
for ((i = 0; i < copies; i++)); do cat "$WORK/one.jsonl"; done > "$WORK/in.jsonl"
text_bytes=$(python3 -c "
import json; print(sum(len(json.loads(l)['text'].encode()) for l in open('$WORK/in.jsonl', encoding='utf-8')))")
echo "input: $((text_bytes / 1000000)) MB of text in $(($(stat -c %s "$WORK/in.jsonl") / 1000000)) MB of JSONL ($copies copies of the sample corpus); machine: $(machine)"
printf '%-52s %9s %9s %8s\n' "command" "seconds" "MB/s" "RSS MB"
row() { printf '%-52s %9s %9s %8s\n' "$1" "$2" "$(mbps "$3" "$2")" "$4"; }

# tiktoken-rs: best of REPEAT runs of its encode loop.
best_tiktoken() {
  local best="" s i
  for ((i = 0; i < ${REPEAT:-3}; i++)); do
    read -r s _ < <($ORACLE bench-tiktoken "$1")
    if [[ -z $best ]] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; fi
  done
  echo "$best"
}
tk=$(best_tiktoken "$WORK/in.jsonl"); row "tiktoken-rs 0.6 (npm), 1 thread, encode only" "$tk" "$text_bytes" "-"
measure enc1 "$BIN/bpe-encode -q $V --threads 1 -i $WORK/in.jsonl > /dev/null"
enc1=$LAST_SECONDS; row "bpe-encode --threads 1" "$enc1" "$text_bytes" "$LAST_RSS_MB"
measure enc2 "$BIN/bpe-encode -q $V --threads 2 -i $WORK/in.jsonl > /dev/null"
enc2=$LAST_SECONDS; row "bpe-encode --threads 2" "$enc2" "$text_bytes" "$LAST_RSS_MB"; rss2=$LAST_RSS_MB
measure enc2o "$BIN/bpe-encode -q $V --threads 2 --append-eod -i $WORK/in.jsonl -o $WORK/out.jsonl.zst"
row "bpe-encode --threads 2 --append-eod -o out.jsonl.zst" "$LAST_SECONDS" "$text_bytes" "$LAST_RSS_MB"

lines_bytes=$(stat -c %s "$WORK/lines.txt")
measure hf "$ORACLE train $WORK/lines.txt $WORK/hf > /dev/null"
hf=$LAST_SECONDS; hf_rss=$LAST_RSS_MB; row "HF train(files), vocab 30000 (node, rayon)" "$hf" "$lines_bytes" "$hf_rss"
measure ours "$BIN/bpe-train -q --input-format lines -i $WORK/lines.txt --alphabet seen --special-tokens --vocab-size 30000 --threads 2 --output-dir $WORK/ours"
tr=$LAST_SECONDS; tr_rss=$LAST_RSS_MB; row "bpe-train --threads 2, vocab 30000, same lines" "$tr" "$lines_bytes" "$tr_rss"
cmp -s "$WORK/hf/merges.txt" "$WORK/ours/merges.txt" && same=identical || same=DIFFERENT

# Pathological inputs, 1 thread.
python3 - "$WORK" <<'EOF'
import json, random, sys
w = sys.argv[1]
rnd = random.Random(7)
alphabet = "abcXYZ019_.,;:!?()[]{}<>/\\|'\"-+=*&^%$#@~`éßж中🙂"
cases = {
    "one-char": "a" * 1_000_000,
    "no-space": "".join(rnd.choice(alphabet) for _ in range(400_000)),
    "space-run": "x" + " " * 100_000 + "y" + "\n" * 50_000 + "\t \u3000" * 10_000 + "z",
}
for name, text in cases.items():
    with open(f"{w}/{name}.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
EOF
limit=${PATHO_LIMIT:-20}
for name in one-char no-space space-run; do
  b=$(python3 -c "import json; print(len(json.loads(open('$WORK/$name.jsonl', encoding='utf-8').read())['text'].encode()))")
  measure p "$BIN/bpe-encode -q $V --threads 1 -i $WORK/$name.jsonl > /dev/null"
  row "pathological $name ($b bytes): bpe-encode" "$LAST_SECONDS" "$b" "$LAST_RSS_MB"
  rc=0; out=$(timeout "$limit" $ORACLE bench-tiktoken "$WORK/$name.jsonl" 2> "$WORK/tk.err") || rc=$?
  if ((rc == 0)); then
    row "pathological $name: tiktoken-rs" "${out%% *}" "$b" "-"
  elif ((rc == 124)); then
    printf '%-52s %9s\n' "pathological $name: tiktoken-rs" ">$limit (killed)"
  else
    printf '%-52s %9s\n' "pathological $name: tiktoken-rs" "failed: $(grep -m1 -o 'panicked at [^ ]*' "$WORK/tk.err" | sed 's|at .*/|at |' || echo "exit $rc")"
  fi
done

echo "encode, 1 thread: bpe-encode $(mbps "$text_bytes" "$enc1") MB/s vs tiktoken-rs $(mbps "$text_bytes" "$tk") MB/s: $(ratio "$tk" "$enc1")x (target >= 3)"
echo "encode, 2 threads vs 1: $(ratio "$enc1" "$enc2")x (target >= 1.8); peak RSS at 2 threads $rss2 MB (target < 200)"
echo "train: bpe-train $(ratio "$tr" "$hf")x HF's time (target <= 0.5), RSS $tr_rss MB vs $hf_rss MB; merges $same"
rm -rf "$WORK"
