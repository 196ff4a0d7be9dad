# bpe-encode: golden ids, Megatron-identical tokens, threads, decode, sentences, specials, errors.
ENC="$BIN/bpe-encode --vocab-file $VOCAB --merge-file $MERGES"

# The golden tricky strings encode to the listed ids (tiktoken-rs 0.6 = HF 0.23.2).
$ENC -q --keep-text -i "$GOLDEN/gpt2-tricky.jsonl" -o tricky.out.jsonl
python3 - "$GOLDEN/gpt2-tricky.jsonl" tricky.out.jsonl <<'EOF'
import json, sys
want = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
got = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert len(want) == len(got) and len(want) > 100, (len(want), len(got))
bad = [(w["text"], w["ids"], g["ids"]) for w, g in zip(want, got) if w["ids"] != g["ids"] or w["text"] != g["text"]]
assert not bad, bad[:5]
EOF

# The fortunes corpus with --append-eod gives exactly Megatron preprocess_data.py's tokens.
$ENC -q --append-eod -i "$GOLDEN/fortunes-en.jsonl.zst" -o fortunes.t1.jsonl --threads 1
$ENC -q --append-eod -i "$GOLDEN/fortunes-en.jsonl.zst" -o fortunes.t2.jsonl --threads 2
same_file fortunes.t1.jsonl fortunes.t2.jsonl
python3 - fortunes.t1.jsonl "$GOLDEN/megatron/fortunes-en_text_document.bin" <<'EOF'
import array, json, sys
assert sys.byteorder == "little"
ids, docs = [], 0
for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    assert "text" not in d and list(d)[-1] == "ids", list(d)
    assert d["ids"][-1] == 50256
    ids += d["ids"]; docs += 1
ref = array.array("H"); ref.frombytes(open(sys.argv[2], "rb").read())
assert docs == 14805, docs
assert len(ids) == len(ref), (len(ids), len(ref))
assert ids == ref.tolist(), next(i for i, (a, b) in enumerate(zip(ids, ref)) if a != b)
EOF
# Other fields pass through (values byte for byte), in input order, ahead of "ids".
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl
head -50 all.jsonl > fifty.jsonl
$ENC -q -i fifty.jsonl > fifty.ids.jsonl
python3 - fifty.jsonl fifty.ids.jsonl <<'EOF'
import json, sys
for a, b in zip(open(sys.argv[1]), open(sys.argv[2])):
    a, b = json.loads(a), json.loads(b)
    assert list(b) == [k for k in a if k != "text"] + ["ids"], (list(a), list(b))
    assert all(a[k] == b[k] for k in a if k != "text")
EOF
printf '%s\n' '{"id": 7, "meta": {"a": [1, 2.50, "x\u00e9"]}, "ids": 3, "text": "t"}' > raw.jsonl
[[ $($ENC -q -i raw.jsonl) == '{"id":7,"meta":{"a": [1, 2.50, "x\u00e9"]},"ids":[83]}' ]] || fail "raw fields: $($ENC -q -i raw.jsonl)"

# Decode round trip: ids -> text gives the original text back (the eod id decodes to its text).
$ENC -q --decode -i fortunes.t1.jsonl -o decoded.jsonl
python3 - all.jsonl decoded.jsonl <<'EOF'
import json, sys
orig = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
back = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert len(back) == 14805
for o, b in zip(orig, back):
    assert b["text"] == o["text"] + "<|endoftext|>", (o, b)
    assert list(b) == list(o)
EOF
$ENC -q --keep-text -i "$GOLDEN/gpt2-tricky.jsonl" | $ENC -q --decode --keep-text > tricky.back.jsonl
python3 - "$GOLDEN/gpt2-tricky.jsonl" tricky.back.jsonl <<'EOF'
import json, sys
for a, b in zip(open(sys.argv[1], encoding="utf-8"), open(sys.argv[2], encoding="utf-8")):
    a, b = json.loads(a), json.loads(b)
    assert a["text"] == b["text"] and a["ids"] == b["ids"], (a, b)
EOF

# Sentence arrays: one id array per sentence; --append-eod goes to the last non-empty sentence.
printf '%s\n' '{"text":["Hello world.","","hello world"]}' '{"text":["hello",""]}' '{"text":[]}' '{"text":""}' > sent.jsonl
$ENC -q --append-eod -i sent.jsonl > sent.out
[[ $(cat sent.out) == '{"ids":[[15496,995,13],[],[31373,995,50256]]}
{"ids":[[31373,50256],[]]}
{"ids":[]}
{"ids":[]}' ]] || fail "sentences: $(cat sent.out)"
$ENC -q --decode -i sent.out > sent.back
[[ $(head -1 sent.back) == '{"text":["Hello world.","","hello world<|endoftext|>"]}' ]] || fail "sentence decode: $(head -1 sent.back)"

# Several keys: "<key>_ids" per key, in --json-keys order.
echo '{"title":"hello","n":1,"body":" world"}' > keys.jsonl
[[ $($ENC -q --json-keys body title -i keys.jsonl) == '{"n":1,"body_ids":[995],"title_ids":[31373]}' ]] ||
  fail "keys: $($ENC -q --json-keys body title -i keys.jsonl)"

# <|endoftext|> is ordinary text by default, its id with --allow-special.
echo '{"text":"a<|endoftext|>b"}' > special.jsonl
[[ $($ENC -q -i special.jsonl) == '{"ids":[64,27,91,437,1659,5239,91,29,65]}' ]] || fail "ordinary special: $($ENC -q -i special.jsonl)"
[[ $($ENC -q --allow-special -i special.jsonl) == '{"ids":[64,50256,65]}' ]] || fail "allow-special"

# Invalid UTF-8 on line 3: fail naming it; replace gives U+FFFD's ids; skip drops the line.
printf '{"text":"ok"}\n{"text":"fine"}\n{"text":"a\xffb"}\n{"text":"end"}\n' > bad.jsonl
expect_exit 1 $ENC -i bad.jsonl -o never.jsonl
expect_stderr "^bpe-encode: bad.jsonl:3: invalid UTF-8"
[[ ! -e never.jsonl ]] || fail "failed run left output"
expect_exit 0 $ENC -q --on-error=replace -i bad.jsonl -o replaced.jsonl
[[ $(sed -n 3p replaced.jsonl) == '{"ids":[64,4210,65]}' ]] || fail "replace: $(sed -n 3p replaced.jsonl)"
expect_stderr "replaced: invalid UTF-8 1"
expect_exit 0 $ENC -q --on-error=skip -i bad.jsonl -o skipped.jsonl
[[ $(wc -l < skipped.jsonl) == 3 ]] || fail "skip"
expect_stderr "skipped: invalid UTF-8 1"

# Missing or non-string text: a document error (fails naming the line; skip counts it).
printf '{"text":"ok"}\n{"text":5}\n{"other":"x"}\n{"text":["a",1]}\n' > types.jsonl
expect_exit 1 $ENC -i types.jsonl
expect_stderr "types.jsonl:2: .*\"text\" is not a string"
expect_exit 0 $ENC -q --on-error=skip -i types.jsonl -o types.out
[[ $(cat types.out) == '{"ids":[482]}' ]] || fail "types skip: $(cat types.out)"
expect_stderr "skipped: non-string field 2, skipped: missing field 1|skipped: non-string field 2.*missing field 1"
# Decoding: ids out of range or not integers are document errors.
echo '{"ids":[31373,99999]}' > range.jsonl
expect_exit 1 $ENC --decode -i range.jsonl
expect_stderr "range.jsonl:1: .*99999"

# Missing vocabulary file: exit 1 naming it; usage errors: exit 2.
expect_exit 1 $BIN/bpe-encode --vocab-file nope.json --merge-file "$MERGES" -i fifty.jsonl
expect_stderr "nope.json"
expect_exit 2 $BIN/bpe-encode --merge-file "$MERGES" -i fifty.jsonl
expect_exit 2 $ENC --no-such-flag -i fifty.jsonl
expect_exit 2 $ENC --decode --append-eod -i fifty.jsonl
$ENC --help > help.txt
grep -q "Example" help.txt && grep -q '"ids":\[31373,995,50256\]' help.txt || fail "help"
