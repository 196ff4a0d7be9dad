# bpe-train: HF BpeTrainer merge order on worked examples, GPT-2 layout, thread independence,
# files that bpe-encode loads and that round-trip, error handling.
merges_of() { tail -n +2 "$1/merges.txt" | tr '\n' '|'; }

# Worked examples from the real HF trainer (spec §2.1), plain text fed line by line, alphabet of
# seen bytes, no special tokens: same merges in the same order (ties to the smaller ids).
printf 'aaabdaaabac\n' > one.txt
$BIN/bpe-train -q --input-format lines -i one.txt --alphabet seen --special-tokens --vocab-size 100 --output-dir one
[[ $(merges_of one) == 'a a|a b|aa ab|a c|d aaab|aaab daaab|aaabdaaab ac|' ]] || fail "aaabdaaabac: $(merges_of one)"
# Training stops when no pair is left: alphabet {Ċ a b c d} + 7 merges.
python3 -c "import json,sys; v=json.load(open('one/vocab.json')); assert len(v)==12 and v['a']==0 and v['Ċ']==4 and v['aaabdaaabac']==11, v"
printf 'low lower lowest newer wider new\n' > low.txt
$BIN/bpe-train -q --input-format lines -i low.txt --alphabet seen --special-tokens --vocab-size 1000 --output-dir low
[[ $(merges_of low) == 'e r|l o|lo w|e w|n ew|Ġ low|Ġ new|d er|e s|i der|w ider|Ġ wider|'* ]] || fail "low: $(merges_of low)"
# --min-frequency is inclusive: only "a a" (4 times) reaches 3.
$BIN/bpe-train -q --input-format lines -i one.txt --alphabet seen --special-tokens --min-frequency 3 --output-dir minf
[[ $(merges_of minf) == 'a a|' ]] || fail "min-frequency: $(merges_of minf)"
# --specials-first puts them at 0..k-1 (HF layout); default is GPT-2's (after the merges).
$BIN/bpe-train -q --input-format lines -i one.txt --specials-first --special-tokens '<pad>' '<|endoftext|>' --vocab-size 270 --output-dir first
python3 -c "import json; v=json.load(open('first/vocab.json')); assert v['<pad>']==0 and v['<|endoftext|>']==1 and v['!']==2 and len(v)==265, len(v)"

# GPT-2 layout on a real corpus: 256 byte tokens first, merges, <|endoftext|> last.
$BIN/bpe-train -q -i "$GOLDEN/fortunes-en.jsonl.zst" --vocab-size 3000 --threads 1 --output-dir t1
$BIN/bpe-train -q -i "$GOLDEN/fortunes-en.jsonl.zst" --vocab-size 3000 --threads 2 --output-dir t2
same_file t1/vocab.json t2/vocab.json
same_file t1/merges.txt t2/merges.txt
[[ $(ls -A t1 | tr '\n' ' ') == 'merges.txt vocab.json ' ]] || fail "output dir holds $(ls -A t1)"
python3 - t1 <<'EOF'
import json, sys
d = sys.argv[1]
v = json.load(open(f"{d}/vocab.json", encoding="utf-8"))
m = open(f"{d}/merges.txt", encoding="utf-8").read().splitlines()
assert len(v) == 3000 and v["<|endoftext|>"] == 2999, len(v)
assert m[0].startswith("#version") and len(m) - 1 == 3000 - 257, len(m)
first = m[1].split(" ")
assert v[first[0] + first[1]] == 256, m[1]
EOF
# The same byte tokens in the same ids as GPT-2's vocabulary.
python3 -c "
import json; a=json.load(open('t1/vocab.json')); g=json.load(open('$VOCAB'))
assert [k for k in a if a[k]<256] == [k for k in g if g[k]<256]"

# bpe-encode loads the trained files, and decoding gives the text back.
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > plain.jsonl
ENC="$BIN/bpe-encode -q --vocab-file t1/vocab.json --merge-file t1/merges.txt"
$ENC --append-eod -i plain.jsonl -o ids.jsonl
$ENC --decode -i ids.jsonl -o back.jsonl
python3 - plain.jsonl back.jsonl ids.jsonl <<'EOF'
import json, sys
a = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
b = [json.loads(l)["text"] for l in open(sys.argv[2], encoding="utf-8")]
ids = [json.loads(l)["ids"] for l in open(sys.argv[3], encoding="utf-8")]
assert len(a) == len(b) == 14805
assert all(x + "<|endoftext|>" == y for x, y in zip(a, b))
assert all(i[-1] == 2999 and max(i) < 3000 for i in ids)
n_tok = sum(map(len, ids)); n_bytes = sum(len(x.encode()) for x in a)
assert n_bytes / n_tok > 2.5, n_bytes / n_tok  # merges were learnt: well above one byte per token
EOF
# <|endoftext|> in the training text is cut out, never counted as words.
printf '{"text":"ab<|endoftext|>ab"}\n{"text":["ab ab","cd"]}\n' > special.jsonl
$BIN/bpe-train -q -i special.jsonl --alphabet seen --vocab-size 100 --output-dir sp
! grep -q '|' sp/merges.txt || fail "special token text was counted: $(cat sp/merges.txt)"
grep -qx 'a b' sp/merges.txt && grep -qx 'c d' sp/merges.txt || fail "sentence arrays not counted"

# Errors: invalid UTF-8 names the line (replace/skip go on), bad documents, usage errors.
printf 'good line\nbad \xff line\n' > bad.txt
expect_exit 1 $BIN/bpe-train --input-format lines -i bad.txt --output-dir never
expect_stderr "^bpe-train: bad.txt:2: invalid UTF-8"
[[ ! -e never/vocab.json ]] || fail "a failed run wrote a vocabulary"
expect_exit 0 $BIN/bpe-train -q --on-error=skip --input-format lines -i bad.txt --output-dir skip
expect_stderr "skipped: invalid UTF-8 1"
printf '{"text":"ok"}\n{"text":3}\n' > types.jsonl
expect_exit 1 $BIN/bpe-train -i types.jsonl --output-dir never
expect_stderr "types.jsonl:2: .*not a string"
expect_exit 2 $BIN/bpe-train -i types.jsonl
expect_exit 2 $BIN/bpe-train -i one.txt --alphabet some --output-dir x
expect_exit 2 $BIN/bpe-train -i one.txt --input-format csv --output-dir x
expect_exit 1 $BIN/bpe-train -i missing.jsonl --output-dir x
expect_stderr "missing.jsonl"
