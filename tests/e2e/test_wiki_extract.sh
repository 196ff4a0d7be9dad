# wiki-extract: MediaWiki XML dumps (plain, bzip2, multistream bzip2) to JSONL articles.
WE=$BIN/wiki-extract

# A small hand-written dump: an article, a redirect, a talk page, a template page, a second article.
page() {  # page TITLE NS ID TEXT [redirect-target]
  printf '  <page>\n    <title>%s</title>\n    <ns>%s</ns>\n    <id>%s</id>\n' "$1" "$2" "$3"
  [[ -n ${5:-} ]] && printf '    <redirect title="%s" />\n' "$5"
  printf '    <revision>\n      <id>1</id>\n      <text bytes="1" xml:space="preserve">%s</text>\n    </revision>\n  </page>\n' "$4"
}
header='<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="fr">
  <siteinfo>
    <sitename>Wikipédia</sitename>
    <base>https://fr.wikipedia.org/wiki/Wikip%C3%A9dia:Accueil_principal</base>
  </siteinfo>'
{
  echo "$header"
  page "Tour Eiffel" 0 1 "{{Infobox Monument|nom={{lang|fr|Tour}}}}'''La tour Eiffel''' est une [[tour]] de [[Paris|Paris, France]].&lt;ref&gt;Source.&lt;/ref&gt;
== Histoire ==
* Construite en 1889
{|
| a || b
|}
[[Catégorie:Tour]][[en:Eiffel Tower]]"
  page "Eiffel" 0 2 "#REDIRECT [[Tour Eiffel]]" "Tour Eiffel"
  page "Discussion:Tour Eiffel" 1 3 "Bonjour"
  page "Modèle:Lang" 10 4 "{{{2}}}"
  page "Café &amp; thé" 0 5 "Le [[café]]&amp;nbsp;et le [http://example.org thé]."
  echo "</mediawiki>"
} > dump.xml

$WE -q -i dump.xml -o out.jsonl
python3 - <<'PY'
import json
docs = [json.loads(l) for l in open("out.jsonl")]
assert [d["title"] for d in docs] == ["Tour Eiffel", "Café & thé"], docs
assert [list(d) for d in docs] == [["id", "url", "title", "text"]] * 2
assert docs[0] == {"id": "1", "url": "https://fr.wikipedia.org/wiki/Tour_Eiffel", "title": "Tour Eiffel",
                   "text": "La tour Eiffel est une tour de Paris, France.\nHistoire\nConstruite en 1889"}, docs[0]
assert docs[1]["url"] == "https://fr.wikipedia.org/wiki/Café_%26_thé", docs[1]
assert docs[1]["text"] == "Le café et le thé.", docs[1]
PY

# The summary counts what was left out.
$WE -i dump.xml -o /dev/null 2>stderr
expect_stderr "^wiki-extract: 5 documents, .*kept 2.*redirects 1.*other namespaces 2|^wiki-extract: 5 documents, .*other namespaces 2.*kept 2.*redirects 1"

# bzip2, multistream bzip2 (one stream per page, as Wikimedia's dumps: header, pages, footer), stdin:
# all give the same output. The format comes from the bytes, not the name.
bzip2 -c dump.xml > dump.xml.bz2
python3 - <<'PY'
import bz2, re
xml = open("dump.xml").read()
parts = re.split(r"(?=  <page>)|(?=</mediawiki>)", xml)
with open("multi.xml.bz2", "wb") as f:
    for p in parts:
        f.write(bz2.compress(p.encode()))
print(len(parts), "streams")
PY
cp multi.xml.bz2 misleading.xml
$WE -q -i dump.xml.bz2 -o out.bz2.jsonl
$WE -q -i multi.xml.bz2 -o out.multi.jsonl
$WE -q -i misleading.xml -o out.misleading.jsonl
$WE -q < multi.xml.bz2 > out.stdin.jsonl
same_file out.jsonl out.bz2.jsonl
same_file out.jsonl out.multi.jsonl
same_file out.jsonl out.misleading.jsonl
same_file out.jsonl out.stdin.jsonl
# Two inputs: concatenated in order; --base-url overrides the siteinfo.
$WE -q -i dump.xml -i multi.xml.bz2 > out.two.jsonl
cat out.jsonl out.jsonl | cmp - out.two.jsonl || fail "two inputs"
stdout_matches '"url":"http://mirror\.local/w/Tour_Eiffel"' $WE -q --base-url http://mirror.local/w/ -i dump.xml || fail "--base-url"

# A generated dump: output identical for any thread count, plain or multistream bzip2, and the
# shards of --shard I/N (page k goes to shard k % N) together give the whole output.
python3 "$ROOT/scripts/bench/gen_wiki_dump.py" --mb 4 -o gen.xml --bz2 gen.xml.bz2 > /dev/null
$WE -q --threads 1 -i gen.xml -o gen.t1.jsonl
$WE -q --threads 3 -i gen.xml -o gen.t3.jsonl
$WE -q --threads 2 -i gen.xml.bz2 -o gen.bz2.jsonl.zst
same_file gen.t1.jsonl gen.t3.jsonl
zstd -dc gen.bz2.jsonl.zst | cmp - gen.t1.jsonl || fail "bz2 multistream output differs"
[[ $(wc -l < gen.t1.jsonl) -gt 1000 ]] || fail "too few articles from the generated dump"
for i in 0 1 2; do $WE -q --shard $i/3 -i gen.xml -o shard$i.jsonl; done
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0 $WE -q --shard slurm -i gen.xml -o shard1.env.jsonl
same_file shard1.jsonl shard1.env.jsonl
cat shard0.jsonl shard1.jsonl shard2.jsonl | sort | cmp - <(sort gen.t1.jsonl) || fail "shards do not add up"
python3 - <<'PY'
import json
# Page ids are 1..N in dump order, so page k (0-based over all pages) has id k+1: check the k % 3 rule.
for i in range(3):
    for line in open(f"shard{i}.jsonl"):
        assert (int(json.loads(line)["id"]) - 1) % 3 == i
PY

# The demo's sample dump: ten articles, no redirect, talk, template or category page.
$WE -q -i "$ROOT/data/sample/wiki-sample.xml.bz2" -o sample.jsonl
[[ $(wc -l < sample.jsonl) == 10 ]] || fail "sample: expected 10 articles"
! grep -Eq '"title":"(Bike|Talk:|Template:|Category:)' sample.jsonl || fail "sample: a skipped page was kept"
! grep -Eq '\{\{|\}\}|\[\[|<ref|&lt;|&nbsp;' sample.jsonl || fail "sample: markup left in the text"

# Truncated input: one line `wiki-extract: file:line: what`, exit 1, no output file, whatever --on-error.
head -c $(( $(stat -c %s gen.xml.bz2) / 2 )) gen.xml.bz2 > cut.xml.bz2
expect_exit 1 $WE -q -i cut.xml.bz2 -o never.jsonl
expect_stderr "^wiki-extract: cut.xml.bz2:[0-9]+: truncated bzip2 stream"
[[ $(wc -l < stderr) == 1 ]] || fail "more than one line of error"
[[ ! -e never.jsonl ]] || fail "a failed run left its output file"
expect_exit 1 $WE -q --on-error=skip -i cut.xml.bz2 -o never.jsonl
head -c 3000000 gen.xml > cut.xml
expect_exit 1 $WE -q -i cut.xml -o never.jsonl
expect_stderr "^wiki-extract: cut.xml:[0-9]+: unexpected end of file inside <page> \(truncated dump\?\)$"
head -n -1 dump.xml > nofooter.xml
expect_exit 1 $WE -q -i nofooter.xml
expect_stderr "^wiki-extract: nofooter.xml:[0-9]+: unexpected end of file: no </mediawiki>"
# --max-line-bytes bounds the page held in memory (the sample's pages are a few hundred bytes and up).
expect_exit 1 $WE -q --max-line-bytes 200 -i "$ROOT/data/sample/wiki-sample.xml.bz2" -o never.jsonl
expect_stderr "^wiki-extract: .*wiki-sample.xml.bz2:[0-9]+: element longer than --max-line-bytes \(200 bytes\)$"
$WE -q --max-line-bytes 100000 -i "$ROOT/data/sample/wiki-sample.xml.bz2" | cmp -s - sample.jsonl || fail "a roomy limit changed the output"
echo '{"text": "not a dump"}' > not.xml
expect_exit 1 $WE -q -i not.xml
expect_stderr "^wiki-extract: not.xml:1: not a MediaWiki XML dump"

# Malformed pages: exit 1 at the page's line, or with --on-error=skip counted and left out.
{
  echo "$header"
  page "Good" 0 1 "good"
  printf '  <page>\n    <title>No id</title>\n    <ns>0</ns>\n    <revision><text>x</text></revision>\n  </page>\n'
  page "Bad byte" 0 3 $'bad \xff byte'
  page "Also good" 0 4 "also good"
  echo "</mediawiki>"
} > bad.xml
expect_exit 1 $WE -q -i bad.xml -o never.jsonl
expect_stderr "^wiki-extract: bad.xml:15: malformed page: bad or missing page <id>$"
expect_exit 0 $WE -q --on-error=skip -i bad.xml -o skipped.jsonl
expect_stderr "kept 2, skipped: malformed page 1, skipped: invalid UTF-8 1"
[[ $(wc -l < skipped.jsonl) == 2 ]] || fail "skip: expected 2 articles"
expect_exit 0 $WE -q --on-error=replace -i bad.xml -o replaced.jsonl
grep -q 'bad � byte' replaced.jsonl || fail "replace: U+FFFD expected"

# Usage.
$WE --help > help.txt
grep -q "wiki-extract -i enwiki" help.txt || fail "--help has no example"
expect_exit 2 $WE --shard 3/2 -i dump.xml
