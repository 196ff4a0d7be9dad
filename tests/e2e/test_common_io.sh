# The document path of common/ (compressed input, error policy, atomic output), through jsonl-cat.
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > plain.jsonl
xz -k -c plain.jsonl > doc.jsonl.xz
bzip2 -k -c plain.jsonl > doc.jsonl.bz2
cp "$GOLDEN/fortunes-en.jsonl.zst" doc.jsonl.zst

# zstd-, xz- and bzip2-compressed input give output identical to plain input (format by content,
# not by name: the xz file is also read under a misleading name).
$BIN/jsonl-cat -q -i plain.jsonl > out.plain
$BIN/jsonl-cat -q -i doc.jsonl.zst > out.zst
$BIN/jsonl-cat -q -i doc.jsonl.xz > out.xz
$BIN/jsonl-cat -q -i doc.jsonl.bz2 > out.bz2
cp doc.jsonl.xz misleading.jsonl
$BIN/jsonl-cat -q -i misleading.jsonl > out.misleading
same_file plain.jsonl out.plain
same_file out.plain out.zst
same_file out.plain out.xz
same_file out.plain out.bz2
same_file out.plain out.misleading
# Thread count never changes the output.
$BIN/jsonl-cat -q --threads 2 -i doc.jsonl.zst > out.t2
same_file out.plain out.t2
# stdin, and several inputs concatenated in order.
$BIN/jsonl-cat -q < doc.jsonl.zst > out.stdin
same_file out.plain out.stdin
$BIN/jsonl-cat -q -i doc.jsonl.zst -i doc.jsonl.xz > out.two
cat plain.jsonl plain.jsonl | cmp - out.two || fail "two inputs"

# Compressed output by extension, readable back.
$BIN/jsonl-cat -q -i plain.jsonl -o back.jsonl.zst
$BIN/jsonl-cat -q -i plain.jsonl -o back.jsonl.xz
zstd -dc back.jsonl.zst | cmp - plain.jsonl || fail "zst output"
xz -dc back.jsonl.xz | cmp - plain.jsonl || fail "xz output"

# Truncated compressed input: exit 1 naming the file.
head -c 200000 doc.jsonl.zst > cut.jsonl.zst
head -c 200000 doc.jsonl.xz > cut.jsonl.xz
expect_exit 1 $BIN/jsonl-cat -q -i cut.jsonl.zst -o never.jsonl
expect_stderr "^jsonl-cat: cut.jsonl.zst: truncated zstd stream"
[[ ! -e never.jsonl ]] || fail "a failed run left its output file"
[[ $(ls -a) != *.tmp.* ]] || fail "a failed run left its hidden temporary file (.never.jsonl.tmp.*)"
expect_exit 1 $BIN/jsonl-cat -q -i cut.jsonl.xz
expect_stderr "^jsonl-cat: cut.jsonl.xz: truncated xz stream"

# Invalid JSON on line 7: exit 1 naming line 7; with --on-error=skip the rest passes and is counted.
head -6 plain.jsonl > bad.jsonl
echo '{"text": "unterminated}' >> bad.jsonl
sed -n 7,10p plain.jsonl >> bad.jsonl
expect_exit 1 $BIN/jsonl-cat -i bad.jsonl
expect_stderr "^jsonl-cat: bad.jsonl:7: invalid JSON"
expect_exit 0 $BIN/jsonl-cat --on-error=skip -i bad.jsonl -o kept.jsonl
[[ $(wc -l < kept.jsonl) == 10 ]] || fail "skip kept $(wc -l < kept.jsonl) lines"
expect_stderr "kept 10, skipped: invalid JSON 1"
# ... and the skip count is reported even with --quiet.
expect_exit 0 $BIN/jsonl-cat --quiet --on-error=skip -i bad.jsonl -o kept.jsonl
expect_stderr "skipped: invalid JSON 1"

# Invalid UTF-8: fail by default, U+FFFD per maximal invalid subpart with replace.
printf '{"text":"ok"}\n{"text":"a\xff\xe2\x82b"}\n' > utf8.jsonl
expect_exit 1 $BIN/jsonl-cat -i utf8.jsonl
expect_stderr "utf8.jsonl:2: invalid UTF-8"
expect_exit 0 $BIN/jsonl-cat -q --on-error=replace -i utf8.jsonl -o fixed.jsonl
[[ $(sed -n 2p fixed.jsonl) == $'{"text":"a\xef\xbf\xbd\xef\xbf\xbdb"}' ]] || fail "replace gave $(sed -n 2p fixed.jsonl)"
expect_stderr "replaced: invalid UTF-8 1"

# Not an object, and a field filter passing other fields through unchanged.
echo '[1,2]' > array.jsonl
expect_exit 1 $BIN/jsonl-cat -i array.jsonl
expect_stderr "array.jsonl:1: not a JSON object"
printf '{"id": 7, "meta": {"a": [1, 2.50, "x"]}, "text": "t\\u00e9"}\n' > fields.jsonl
$BIN/jsonl-cat -q -i fields.jsonl --fields meta text > picked.jsonl
[[ $(cat picked.jsonl) == '{"meta":{"a": [1, 2.50, "x"]},"text":"t\u00e9"}' ]] || fail "fields: $(cat picked.jsonl)"

# Empty input: empty output, exit 0.
: > empty.jsonl
expect_exit 0 $BIN/jsonl-cat -i empty.jsonl -o empty.out
[[ -f empty.out && ! -s empty.out ]] || fail "empty input"

# Unreadable file and usage errors.
expect_exit 1 $BIN/jsonl-cat -i does-not-exist.jsonl
expect_stderr "^jsonl-cat: does-not-exist.jsonl: cannot open"
expect_exit 2 $BIN/jsonl-cat --threads zero
expect_exit 2 $BIN/jsonl-cat --on-error=ignore
stdout_matches "Example:" $BIN/jsonl-cat --help || fail "--help has no example"
stdout_matches "^jsonl-cat [0-9]+\.[0-9]+\.[0-9]+" $BIN/jsonl-cat --version || fail "--version"

# Over-long lines: fail naming the line, or skip without holding the line.
{ head -2 plain.jsonl; printf '{"text":"%s"}\n' "$(head -c 5000 /dev/zero | tr '\0' a)"; head -2 plain.jsonl; } > long.jsonl
expect_exit 1 $BIN/jsonl-cat --max-line-bytes 4096 -i long.jsonl
expect_stderr "long.jsonl:3: line longer than 4096 bytes"
expect_exit 0 $BIN/jsonl-cat --max-line-bytes 4096 --on-error=skip -i long.jsonl -o short.jsonl
[[ $(wc -l < short.jsonl) == 4 ]] || fail "long line skip"
expect_stderr "skipped: line too long 1"
