# sentence-split: text -> array of sentences, other fields untouched; language per document or
# forced; thread-count independence; --shard; bad input (missing text, invalid UTF-8, wrong type)
# with --on-error=fail|skip; the pipeline into jsonl-to-mmap --split-sentences.
SS=$BIN/sentence-split

printf '%s\n' \
  '{"id": 1, "text": "Mr. Smith went to Washington. He arrived at 5 p.m. It was late.", "meta": {"k": [1, 2.50]}}' \
  '{"id":2,"lang":"de","text":"Das ist z. B. gut. Er kam am 3. Mai."}' \
  '{"text":"Line one\nLine two. Still two","id":3}' > in.jsonl
$SS -q -i in.jsonl > out.jsonl
python3 - <<'PY' || fail "output documents"
import json
docs = [json.loads(l) for l in open("out.jsonl")]
assert docs[0]["text"] == ["Mr. Smith went to Washington.", "He arrived at 5 p.m.", "It was late."], docs[0]
assert docs[1]["text"] == ["Das ist z. B. gut.", "Er kam am 3. Mai."], docs[1]
assert docs[2]["text"] == ["Line one", "Line two.", "Still two"], docs[2]
PY
# Untouched fields keep their bytes and order; the text field keeps its place.
head -1 out.jsonl | grep -q '^{"id":1,"text":\["Mr. Smith went to Washington.",.*\],"meta":{"k": \[1, 2.50\]}}$' \
  || { head -1 out.jsonl; fail "raw fields"; }
# --lang forces a language; --newlines paragraph joins wrapped lines.
$SS -q --lang en -i in.jsonl | sed -n 2p | grep -q '"Er kam am 3."' || fail "--lang en ignores the lang field"
$SS -q --newlines paragraph -i in.jsonl | sed -n 3p | grep -q '\["Line one\\nLine two.","Still two"\]' \
  || fail "--newlines paragraph"
# --keep-whitespace: the sentences concatenate to the text.
$SS -q --keep-whitespace -i in.jsonl | python3 -c '
import json, sys
src = [json.loads(l)["text"] for l in open("in.jsonl")]
out = [json.loads(l)["text"] for l in sys.stdin]
assert ["".join(s) for s in out] == src' || fail "--keep-whitespace"
# --icu-only (plain ICU) splits differently (it breaks at "z." and "3." in the German document).
$SS -q --icu-only -i in.jsonl > icu.jsonl
cmp -s icu.jsonl out.jsonl && fail "--icu-only gives the same output"

# Threads and input format do not change the output.
for i in $(seq 1 300); do sed "s/\"id\": 1,/\"id\": 1$i,/" in.jsonl; done > many.jsonl
zstd -q many.jsonl -o many.jsonl.zst
$SS -q --threads 1 -i many.jsonl > t1.jsonl
$SS -q --threads 3 -i many.jsonl.zst -o t3.jsonl.zst
zstd -dc t3.jsonl.zst | cmp - t1.jsonl || fail "threads/zstd"

# --shard: by file with >= N files, else by line; the shards partition the documents.
$SS -q --shard 0/2 -i many.jsonl > s0.jsonl
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 $SS -q --shard slurm -i many.jsonl > s1.jsonl
[[ $(cat s0.jsonl s1.jsonl | sort | md5sum) == $(sort t1.jsonl | md5sum) ]] || fail "line shards"
[[ $(wc -l < s0.jsonl) == 450 ]] || fail "shard size"
cp in.jsonl a.jsonl; cp many.jsonl b.jsonl
$SS -q --shard 1/2 -i a.jsonl -i b.jsonl | cmp - t1.jsonl || fail "file shards"
expect_exit 2 $SS --shard 2/2 -i in.jsonl
expect_exit 2 $SS --newlines sometimes -i in.jsonl
expect_exit 2 $SS --lang english -i in.jsonl

# Bad input: missing text, text not a string, invalid UTF-8, invalid JSON.
{ echo '{"text": "Good. Fine."}'; echo '{"id": 7}'; echo '{"text": ["already", "split"]}';
  printf '{"text": "bad \xff byte"}\n'; echo '{"text": '; echo '{"text": "Last one."}'; } > bad.jsonl
expect_exit 1 $SS -q -i bad.jsonl
expect_stderr 'sentence-split: bad.jsonl:2: no "text" field'
expect_exit 0 $SS -q --on-error=skip -i bad.jsonl -o kept.jsonl
expect_stderr 'kept 2.*skipped: missing field 1.*skipped: non-string field 1.*skipped: invalid UTF-8 1.*skipped: invalid JSON 1'
[[ $(wc -l < kept.jsonl) == 2 ]] || fail "skip keeps the good documents"
printf '{"text": "bad \xff byte. Next."}\n' > utf.jsonl
expect_exit 0 $SS -q --on-error=replace -i utf.jsonl -o fixed.jsonl
expect_stderr 'replaced: invalid UTF-8 1'
grep -qF '{"text":["bad '$'\xef\xbf\xbd'' byte.","Next."]}' fixed.jsonl || fail "--on-error=replace"

# Pipeline: one Megatron sequence per sentence.
$SS -q -i in.jsonl | $BIN/jsonl-to-mmap -q --split-sentences --output-prefix ds --vocab-file "$VOCAB" \
  --merge-file "$MERGES" --append-eod
$BIN/jsonl-to-mmap --info ds_text_sentence > info.txt
grep -q '^sequences  8$' info.txt && grep -q '^documents  3 (0 empty)$' info.txt || { cat info.txt; fail "sentence dataset"; }
