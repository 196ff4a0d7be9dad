# Input formats at the edges: gzip, lzma-alone, pzstd's skippable frame, refused compression magics,
# byte-order marks, trailing data after a compressed stream, and output suffixes we cannot write.
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl
head -200 all.jsonl > plain.jsonl

# gzip (one member and two members), lzma-alone, and zstd with skippable frames first and between frames.
gzip -c plain.jsonl > doc.gz
{ gzip -c plain.jsonl; gzip -c plain.jsonl; } > two.gz
lzma -c plain.jsonl > doc.lzma
pzstd -q -p 1 -c plain.jsonl > doc.pzstd.zst
[[ $(head -c 4 doc.pzstd.zst | od -An -tx1 | tr -d ' ') == 502a4d18 ]] || fail "pzstd wrote no skippable frame"
{ printf '\x5f\x2a\x4d\x18\x03\x00\x00\x00abc'; zstd -q -c plain.jsonl; printf '\x50\x2a\x4d\x18\x00\x00\x00\x00';
  zstd -q -c plain.jsonl; } > skippable.zst
for f in doc.gz doc.lzma doc.pzstd.zst; do
  $BIN/jsonl-cat -q -i $f > out.$f
  same_file plain.jsonl out.$f
done
cat plain.jsonl plain.jsonl > twice.jsonl
$BIN/jsonl-cat -q -i two.gz > out.two
same_file twice.jsonl out.two
$BIN/jsonl-cat -q -i skippable.zst > out.skippable
same_file twice.jsonl out.skippable
# ... also from stdin, and with --on-error skip nothing is skipped.
$BIN/jsonl-cat --on-error skip < doc.gz > out.stdin 2>stderr
same_file plain.jsonl out.stdin
grep -q skipped stderr && fail "gzip input: lines skipped: $(cat stderr)"

# A known compression magic we do not decode is refused by name, never read as text.
printf '\x04\x22\x4d\x18\x64\x40\xa7\x00\x00\x00\x00' > doc.lz4
expect_exit 1 $BIN/jsonl-cat --on-error skip -i doc.lz4 -o never.jsonl
expect_stderr "^jsonl-cat: doc.lz4: is lz4-compressed, which is not supported"
[[ ! -e never.jsonl ]] || fail "a refused input left an output"

# Trailing bytes after a complete stream are named as such (not "corrupt" or "truncated").
for codec in "gzip -c" "xz -c" "bzip2 -c" "zstd -q -c" "lzma -c"; do
  { $codec plain.jsonl; printf 'garbage\n'; } > trailing
  expect_exit 1 $BIN/jsonl-cat -q -i trailing -o never.jsonl
  expect_stderr "^jsonl-cat: trailing: trailing data after the end of a complete (gzip|xz|bzip2|zstd|lzma) stream"
  { $codec plain.jsonl; printf 'x'; } > trailing
  expect_exit 1 $BIN/jsonl-cat -q -i trailing -o never.jsonl
  expect_stderr "trailing data after the end of a complete"
  [[ ! -e never.jsonl ]] || fail "trailing data: an output was committed"
done
# xz stream padding (zero bytes in fours) between and after streams is part of the format.
{ xz -c plain.jsonl; printf '\0\0\0\0'; xz -c plain.jsonl; printf '\0\0\0\0'; } > padded.xz
$BIN/jsonl-cat -q -i padded.xz > out.padded
same_file twice.jsonl out.padded
# A truncated gzip stream is still "truncated".
head -c 2000 doc.gz > cut.gz
expect_exit 1 $BIN/jsonl-cat -q -i cut.gz
expect_stderr "^jsonl-cat: cut.gz: truncated gzip stream"

# A UTF-8 byte-order mark at the start is skipped (document 1 is kept, also under --on-error skip);
# UTF-16 is refused naming UTF-16.
{ printf '\xef\xbb\xbf'; cat plain.jsonl; } > bom.jsonl
$BIN/jsonl-cat --on-error skip -i bom.jsonl > out.bom 2>stderr
same_file plain.jsonl out.bom
grep -q skipped stderr && fail "BOM: $(cat stderr)"
{ printf '\xef\xbb\xbf'; cat plain.jsonl; } | gzip -c > bom.gz
$BIN/jsonl-cat -q -i bom.gz > out.bomgz
same_file plain.jsonl out.bomgz
printf '\xff\xfe{\0"\0' > utf16.jsonl
expect_exit 1 $BIN/jsonl-cat --on-error skip -i utf16.jsonl
expect_stderr "^jsonl-cat: utf16.jsonl: UTF-16 text .*not supported"
printf '\xfe\xff\0{' > utf16be.jsonl
expect_exit 1 $BIN/jsonl-cat -i utf16be.jsonl
expect_stderr "UTF-16 text \(byte-order mark FE FF\) is not supported"
# ... and in an XML dump.
printf '\xef\xbb\xbf<mediawiki>\n  <siteinfo>\n    <base>https://en.wikipedia.org/wiki/Main_Page</base>\n  </siteinfo>\n  <page>\n    <title>A</title>\n    <ns>0</ns>\n    <id>1</id>\n    <revision>\n      <id>1</id>\n      <text xml:space="preserve">Body text.</text>\n    </revision>\n  </page>\n</mediawiki>\n' > bom.xml
$BIN/wiki-extract -q -i bom.xml -o wiki.jsonl
grep -q '"text":"Body text."' wiki.jsonl || fail "wiki-extract with a BOM: $(cat wiki.jsonl)"

# Output: .gz and .bz2 are written compressed; suffixes we cannot write are a usage error before any work;
# -o on a directory or in a missing folder fails at start.
$BIN/jsonl-cat -q -i plain.jsonl -o back.jsonl.gz
gzip -dc back.jsonl.gz | cmp - plain.jsonl || fail "gz output"
$BIN/jsonl-cat -q -i plain.jsonl -o back.jsonl.bz2
bzip2 -dc back.jsonl.bz2 | cmp - plain.jsonl || fail "bz2 output"
for suffix in lz4 lzma zip; do
  expect_exit 2 $BIN/jsonl-cat -q -i plain.jsonl -o back.jsonl.$suffix
  expect_stderr "cannot write \.$suffix files"
  [[ ! -e back.jsonl.$suffix ]] || fail "plain text written under a .$suffix name"
done
mkdir outdir
expect_exit 2 $BIN/jsonl-cat -q -i plain.jsonl -o outdir
expect_stderr "outdir: is a directory"
expect_exit 2 $BIN/jsonl-cat -q -i plain.jsonl -o missing/out.jsonl
expect_stderr "the folder missing does not exist"
