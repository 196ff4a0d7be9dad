# scrape-filter end to end: language identification on a fortune-file test set (>= 97% keep/drop
# accuracy for --lang en), the error policy on bad input, determinism across thread counts,
# sharding, URL duplicates, rejects, field preservation, --html and --decontaminate.
SF=$BIN/scrape-filter

# --- Language identification: 500 short documents per language from Debian's fortune files.
python3 "$ROOT/tests/e2e/fortune_langid_set.py" > langset.jsonl
$SF -q --rules none --lang en -i langset.jsonl -o kept.jsonl --rejects rejected.jsonl
python3 - <<'PY'
import json, collections, sys
kept = collections.Counter(json.loads(l)["truth"] for l in open("kept.jsonl"))
dropped = collections.Counter(json.loads(l)["truth"] for l in open("rejected.jsonl"))
print("scrape-filter --lang en on fortunes: language x kept/dropped")
print("| language | kept | dropped | correct |")
print("|---|---|---|---|")
right = total = 0
for lang in ["en", "de", "es", "ru", "zh"]:
    k, d = kept[lang], dropped[lang]
    ok = k if lang == "en" else d
    right += ok
    total += k + d
    print(f"| {lang} | {k} | {d} | {ok}/{k + d} |")
acc = right / total
print(f"accuracy {right}/{total} = {100 * acc:.2f}%")
if total != 2500:
    sys.exit(f"FAILED: expected 2500 documents, got {total}")
if acc < 0.97:
    sys.exit("FAILED: accuracy under 97%")
PY
# Every kept document carries lang and lang_score as its last fields.
head -1 kept.jsonl | grep -Eq '"lang":"en","lang_score":[01]\.[0-9]{2}\}$' || fail "lang fields missing: $(head -c 300 kept.jsonl)"

# --- Bad input: the foundation's error policy.
printf '%s\n' '{"id":1,"text":"no url here"}' > nourl.jsonl
expect_exit 1 $SF -q -i nourl.jsonl -o out.jsonl
expect_stderr '^scrape-filter: nourl.jsonl:1: no "url" field$'
printf '%s\n' '{"url":"https://a.example/1","text":42}' '{"url":"https://a.example/2","text":"ok text"}' > nonstring.jsonl
expect_exit 1 $SF -q --rules none -i nonstring.jsonl -o out.jsonl
expect_stderr 'nonstring.jsonl:1: '
expect_exit 0 $SF --rules none --on-error=skip -i nonstring.jsonl -o out.jsonl
[[ $(wc -l < out.jsonl) == 1 ]] || fail "skip should keep the valid document"
expect_stderr 'skipped: '
printf '{"url":"https://a.example/1","text":"bad \xff byte"}\n{"url":"https://a.example/2","text":"fine"}\n' > badutf8.jsonl
expect_exit 1 $SF -q --rules none -i badutf8.jsonl -o out.jsonl
expect_stderr 'badutf8.jsonl:1: .*UTF-8'
expect_exit 0 $SF --rules none --on-error=skip -i badutf8.jsonl -o out.jsonl
expect_stderr 'skipped: invalid UTF-8 +1'
expect_exit 0 $SF -q --rules none --on-error=replace -i badutf8.jsonl -o out.jsonl
[[ $(wc -l < out.jsonl) == 2 ]] || fail "--on-error=replace keeps both documents"
# A 100 MB document is filtered like any other (here: too many words for Gopher) ...
python3 -c "
import sys
sys.stdout.write('{\"url\":\"https://big.example/x\",\"text\":\"' + 'words of text. ' * 7000000 + '\"}\n')
sys.stdout.write('{\"url\":\"https://big.example/y\",\"text\":\"small\"}\n')" > big.jsonl
expect_exit 0 $SF --rules gopher -i big.jsonl -o out.jsonl
expect_stderr 'dropped: gopher_long_doc +1 '
# ... and a line limit turns it into a skip (or an error without --on-error=skip).
expect_exit 1 $SF -q --rules none --max-line-bytes 1000000 -i big.jsonl -o out.jsonl
expect_stderr 'big.jsonl:1: line longer than'
expect_exit 0 $SF --rules none --max-line-bytes 1000000 --on-error=skip -i big.jsonl -o out.jsonl
expect_stderr 'skipped: line too long +1'
grep -q '"https://big.example/y"' out.jsonl || fail "the document after the long line is lost"
expect_exit 2 $SF --rules bogus -i nourl.jsonl
expect_stderr 'unknown rule set'

# --- Deterministic for any thread count; shards partition the input.
{ cat langset.jsonl; head -300 langset.jsonl; } > mixed.jsonl   # 300 URL duplicates at the end
$SF -q --rules all --lang en,de --threads 1 -i mixed.jsonl -o t1.jsonl --rejects r1.jsonl
$SF -q --rules all --lang en,de --threads 4 -i mixed.jsonl -o t4.jsonl --rejects r4.jsonl
same_file t1.jsonl t4.jsonl
same_file r1.jsonl r4.jsonl
[[ $(grep -c '"rejected_by":"url_duplicate"' r1.jsonl) -ge 1 ]] || fail "URL duplicates not rejected"
$SF -q --rules none --no-url-dedup --shard 0/2 -i langset.jsonl -o s0.jsonl
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 $SF -q --shard slurm --rules none --no-url-dedup -i langset.jsonl -o s1.jsonl
$SF -q --rules none --no-url-dedup -i langset.jsonl -o all.jsonl
[[ $(cat s0.jsonl s1.jsonl | sort | md5sum) == $(sort all.jsonl | md5sum) ]] || fail "shards do not partition the input"

# --- URL rules, rejects with the rule, fields kept byte for byte, text rewritten in place.
cat > urls.jsonl <<'J'
{"id":1,"url":"https://blog.example.org/post","score":1.50,"text":"Caf\u00c3\u00a9 time.\r\n","meta":{"a":[1,2]}}
{"id":2,"url":"https://www.Blocked.COM/page","text":"anything"}
{"id":3,"url":"https://example.org/file.pdf","text":"anything"}
{"id":4,"url":"https://blog.example.org/post","text":"a duplicate URL"}
{"id":5,"url":"notaurl","text":"anything"}
J
echo "blocked.com" > blocklist.txt
$SF -q --rules none --url-blocklist blocklist.txt -i urls.jsonl -o out.jsonl --rejects rej.jsonl
[[ $(cat out.jsonl) == '{"id":1,"url":"https://blog.example.org/post","score":1.50,"text":"Café time.","meta":{"a":[1,2]}}' ]] ||
  fail "kept document: $(cat out.jsonl)"
grep -q '"id":2,.*"rejected_by":"url_blocklist"}$' rej.jsonl || fail "blocklist reject: $(cat rej.jsonl)"
grep -q '"id":3,.*"rejected_by":"url_extension"}$' rej.jsonl || fail "extension reject"
grep -q '"id":4,.*"rejected_by":"url_duplicate"}$' rej.jsonl || fail "duplicate reject"
grep -q '"id":5,.*"rejected_by":"url_too_short"}$' rej.jsonl || fail "short URL reject"
$SF --rules none --url-blocklist blocklist.txt -i urls.jsonl -o out.jsonl 2> stderr
expect_stderr 'dropped: url_blocklist +1 docs'

# --- HTML main text and decontamination through the command line.
printf '%s\n' '{"url":"https://docs.example.org/a","html":"<html><body><nav>Menu</nav><script>x()</script><p>Hello <b>world</b>.</p><footer>(c)</footer></body></html>"}' > page.jsonl
$SF -q --html --rules none -i page.jsonl -o out.jsonl
grep -q '"text":"Hello world."}$' out.jsonl || fail "html: $(cat out.jsonl)"
eval_text="the committee voted seven to two in favour of the proposal after a long debate"
echo "$eval_text" > eval.txt
python3 -c "
import json
pad = ' '.join(['filler'] * 60)
print(json.dumps({'url': 'https://n.example/1', 'text': pad + ' $eval_text ' + pad}))
print(json.dumps({'url': 'https://n.example/2', 'text': 'clean text only'}))" > contaminated.jsonl
$SF -q --rules none --decontaminate eval.txt -i contaminated.jsonl -o out.jsonl
[[ $(wc -l < out.jsonl) == 3 ]] || fail "split: expected 2 pieces and 1 clean document, got $(wc -l < out.jsonl)"
grep -q committee out.jsonl && fail "the evaluation n-gram survived"
$SF -q --rules none --decontaminate eval.txt --decontaminate-mode drop -i contaminated.jsonl -o out.jsonl
[[ $(wc -l < out.jsonl) == 1 ]] || fail "drop mode"
echo ok
