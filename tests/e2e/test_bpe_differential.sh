# Randomized differential test of bpe-encode against tiktoken-rs 0.6 and HF tokenizers 0.23.2
# (both from npm, cached under build/npm-oracles), lossless decoding, and bpe-train against HF's
# BpeTrainer on the sample corpus. Needs node + npm; an unreachable registry is a failure.
ORACLES=$ROOT/build/npm-oracles
PINNED=(tiktoken-rs-node-linux-x64-gnu@1.0.6 tokenizers@0.23.2)
installed() {
  local spec name version
  for spec in "${PINNED[@]}"; do
    name=${spec%@*}; version=${spec##*@}
    [[ -f $ORACLES/node_modules/$name/package.json ]] || return 1
    grep -q "\"version\": *\"$version\"" "$ORACLES/node_modules/$name/package.json" || return 1
  done
}
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed for the oracles"
if ! installed; then
  mkdir -p "$ORACLES"
  npm install --prefix "$ORACLES" --no-save --no-audit --no-fund --no-package-lock "${PINNED[@]}" >npm.log 2>&1 ||
    { cat npm.log >&2; fail "cannot install ${PINNED[*]} from npm (registry unreachable?)"; }
  installed || fail "npm did not install ${PINNED[*]}"
fi
export NODE_PATH=$ORACLES/node_modules
DIFF="node $ROOT/tests/e2e/bpe_diff.mjs"
ENC="$BIN/bpe-encode -q --vocab-file $VOCAB --merge-file $MERGES"

# Thousands of random strings (fixed seed): every Unicode class, whitespace runs, contractions,
# long runs; the same ids as both oracles; decoding gives the original text back.
$DIFF gen 20260722 5000 fuzz.jsonl
$ENC --threads 2 -i fuzz.jsonl -o fuzz.ids.jsonl
$DIFF check "$VOCAB" "$MERGES" fuzz.jsonl fuzz.ids.jsonl
$ENC --decode -i fuzz.ids.jsonl -o fuzz.back.jsonl
python3 - fuzz.jsonl fuzz.back.jsonl <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
b = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert len(a) == len(b) == 5000
bad = [x["n"] for x, y in zip(a, b) if x != y]
assert not bad, bad[:10]
EOF
# The golden tricky strings too (they include <|endoftext|>-free edge cases of every kind).
$ENC -i "$GOLDEN/gpt2-tricky.jsonl" -o tricky.ids.jsonl
$DIFF check "$VOCAB" "$MERGES" "$GOLDEN/gpt2-tricky.jsonl" tricky.ids.jsonl

# bpe-train vs HF's train(files) (BpeTrainer defaults: vocab 30,000, min_frequency 0, no initial
# alphabet, no specials) on the same lines: identical merges in the same order and identical vocab.
zstd -dc "$ROOT/data/sample/python-docs.jsonl.zst" |
  python3 -c "
import json, sys
out = open('lines.txt', 'w', encoding='utf-8', newline='')
for l in sys.stdin:
    t = json.loads(l)['text']
    out.write(t if t.endswith('\n') else t + '\n')"
$DIFF train lines.txt hf
$BIN/bpe-train -q --input-format lines -i lines.txt --alphabet seen --special-tokens --vocab-size 30000 --threads 2 \
  --output-dir ours
python3 - hf ours <<'EOF'
import json, sys
hf, ours = sys.argv[1], sys.argv[2]
m_hf = open(f"{hf}/merges.txt", encoding="utf-8").read().splitlines()[1:]
m_ours = open(f"{ours}/merges.txt", encoding="utf-8").read().splitlines()[1:]
assert len(m_hf) > 20000, len(m_hf)
first = next((i for i, (a, b) in enumerate(zip(m_hf, m_ours)) if a != b), None)
assert first is None and len(m_hf) == len(m_ours), (first, len(m_hf), len(m_ours), first is not None and (m_hf[first], m_ours[first]))
v_hf = json.load(open(f"{hf}/vocab.json", encoding="utf-8"))
v_ours = json.load(open(f"{ours}/vocab.json", encoding="utf-8"))
assert v_hf == v_ours, (len(v_hf), len(v_ours))
print(f"HF and bpe-train agree: {len(m_hf)} merges, vocab {len(v_hf)}")
EOF
