# --shard I/N means one thing in every sharding tool: with at least N inputs, shard I reads the files
# f with f % N == I; with fewer, it reads everything and keeps documents (pages) d % N == I, d counted
# from 0 over all inputs. For N = 1, 3 and 8, by file (8 inputs) and by document (2 inputs), the N
# shards' outputs together are the one-process output (minhash-dedup's stages: test_minhash_dedup.sh).
zstd -qdc "$GOLDEN/fortunes-en.jsonl.zst" > fortunes.jsonl
head -240 fortunes.jsonl > docs.jsonl
python3 - <<'PY'
import json
docs = [json.loads(l) for l in open("docs.jsonl")]
for f in range(8):  # 8 JSONL files with unique URLs (URL dedup is per shard), one blank line each
    with open(f"web-{f}.jsonl", "w") as w:
        for i, d in enumerate(docs[f * 30:(f + 1) * 30]):
            w.write(json.dumps({"url": f"https://s{f}.example/{i}", "text": d["text"]}) + "\n")
            if i == 10:
                w.write("\n")
    with open(f"dump-{f}.xml", "w") as w:  # 8 dumps of 12 pages, every third a redirect
        w.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">\n')
        for i in range(12):
            n = f * 12 + i
            text = "#REDIRECT [[Page 1]]" if i % 3 == 2 else f"Article {n} is about [[thing {n}]]."
            w.write(f"<page><title>Page {n}</title><ns>0</ns><id>{n + 1}</id><revision><id>1</id>"
                    f"<text>{text}</text></revision></page>\n")
        w.write("</mediawiki>\n")
PY

# check_shards N TOOL ARGS... -- INPUTS...: TOOL over INPUTS once, then as N shards; the sorted
# union of the shards' outputs (and rejects, where written) equals the one-process output.
check_shards() {
  local n=$1 tool=$2 i; shift 2
  local args=() inputs=()
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  for f in "$@"; do inputs+=(-i "$f"); done
  rm -f part-*.jsonl rej-*.jsonl
  "$BIN/$tool" -q "${args[@]}" "${inputs[@]}" -o one.jsonl ${REJECTS:+--rejects rej-one.jsonl}
  for ((i = 0; i < n; i++)); do
    "$BIN/$tool" -q --shard $i/$n "${args[@]}" "${inputs[@]}" -o part-$i.jsonl ${REJECTS:+--rejects rej-$i.jsonl}
  done
  sort part-*.jsonl | cmp - <(sort one.jsonl) || fail "$tool, $n shards of $# inputs: not the one-process output"
  [[ -s one.jsonl ]] || fail "$tool wrote nothing"
  if [[ -n ${REJECTS:-} ]]; then
    sort rej-[0-9]*.jsonl | cmp - <(sort rej-one.jsonl) || fail "$tool, $n shards: other rejects"
  fi
}

files=(web-{0..7}.jsonl)
dumps=(dump-{0..7}.xml)
for n in 1 3 8; do
  for set in files docs; do
    if [[ $set == files ]]; then jsonl=("${files[@]}") xml=("${dumps[@]}"); else jsonl=(web-0.jsonl web-1.jsonl) xml=(dump-0.xml dump-1.xml); fi
    REJECTS=1 check_shards $n scrape-filter --rules gopher -- "${jsonl[@]}"
    check_shards $n sentence-split -- "${jsonl[@]}"
    check_shards $n wiki-extract -- "${xml[@]}"
  done
done

# By document: shard I of N keeps documents d with d % N == I (blank lines are no documents), d
# counted over both inputs; wiki pages likewise (page ids are 1.. in dump order, redirects included).
"$BIN/sentence-split" -q --shard 2/8 -i web-0.jsonl -i web-1.jsonl -o part.jsonl
grep -v '^$' web-0.jsonl web-1.jsonl -h | awk 'NR % 8 == 3' | python3 -c '
import json, sys
print("\n".join(json.loads(l)["url"] for l in sys.stdin))' > want-urls
python3 -c '
import json
print("\n".join(json.loads(l)["url"] for l in open("part.jsonl")))' | cmp - want-urls || fail "document rule"
"$BIN/wiki-extract" -q --shard 1/8 -i dump-0.xml -i dump-1.xml -o part.jsonl
python3 -c '
import json
ids = [int(json.loads(l)["id"]) for l in open("part.jsonl")]
assert ids and all((i - 1) % 8 == 1 for i in ids), ids' || fail "page rule"
# By file: shard 1 of 3 over 8 files is files 1, 4 and 7, whole and in order.
"$BIN/sentence-split" -q --shard 1/3 "${files[@]/#/-i}" -o part.jsonl
cat web-1.jsonl web-4.jsonl web-7.jsonl | "$BIN/sentence-split" -q | cmp - part.jsonl || fail "file rule"
# The rule is in every sharding tool's --help.
for t in scrape-filter sentence-split wiki-extract minhash-dedup; do
  stdout_matches 'with fewer, it reads every input and keeps the documents d with d % N == I' "$BIN/$t" --help \
    || fail "$t --help does not explain --shard"
done
expect_exit 2 "$BIN/minhash-dedup" --shard 0/2 -i web-0.jsonl
expect_stderr "--shard goes with --stage signatures or filter"
