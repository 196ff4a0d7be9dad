# Escaped lone surrogates, --threads out of range, outputs that cannot be written checked before any
# work, and jsonl-to-mmap's progress lines in the shape the README gives.
printf '{"text":"a\\ud800b \\\\ud800 \\ud83d\\ude00 \\udc00"}\n{"text":"ok"}\n' > sur.jsonl
expect_exit 1 $BIN/jsonl-cat -i sur.jsonl
expect_stderr "^jsonl-cat: sur.jsonl:1: invalid JSON: an escaped lone surrogate"
$BIN/jsonl-cat --on-error replace -i sur.jsonl -o fixed.jsonl 2>stderr
# (an escaped backslash before "ud800" and a proper pair stay as they are)
[[ $(head -1 fixed.jsonl) == '{"text":"a\ufffdb \\ud800 \ud83d\ude00 \ufffd"}' ]] || fail "replace gave $(head -1 fixed.jsonl)"
expect_stderr "replaced: lone surrogate 2, kept 2"
[[ $($BIN/sentence-split -q --on-error replace -i sur.jsonl | head -1) == $'{"text":["a\xef\xbf\xbdb \\\\ud800 \xf0\x9f\x98\x80 \xef\xbf\xbd"]}' ]] ||
  fail "sentence-split replace: $($BIN/sentence-split -q --on-error replace -i sur.jsonl | head -1)"

expect_exit 2 $BIN/jsonl-cat --threads 100000 -i sur.jsonl
expect_stderr "^jsonl-cat: --threads must be all or an integer in 1\.\.4096, got '100000'"

# minhash-dedup opens its outputs after reading everything: bad paths are refused first.
printf '{"text":"one two three four five six"}\n' > doc.jsonl
mkdir adir
expect_exit 2 $BIN/minhash-dedup -i doc.jsonl -o missing/out.jsonl
expect_stderr "^minhash-dedup: -o missing/out.jsonl: the folder missing does not exist"
grep -q "documents" stderr && fail "minhash-dedup did the work before refusing the output"
expect_exit 2 $BIN/minhash-dedup -i doc.jsonl -o out.jsonl --removed adir
expect_stderr "^minhash-dedup: --removed adir: is a directory"
[[ ! -e out.jsonl ]] || fail "output written although --removed was refused"
expect_exit 2 $BIN/sentence-split -i doc.jsonl -o adir
expect_stderr "^sentence-split: -o adir: is a directory"

# jsonl-to-mmap: Megatron's progress lines (README): "Opening FILE" on stdout, then every --log-interval
# documents "Processed N documents (X docs/s, Y MB/s)." on stderr, and one closing summary line.
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl
head -250 all.jsonl > in.jsonl
$BIN/jsonl-to-mmap -i in.jsonl --output-prefix p --log-interval 100 --vocab-file "$VOCAB" --merge-file "$MERGES" \
  > stdout 2> stderr
[[ $(cat stdout) == "Opening in.jsonl" ]] || fail "stdout: $(cat stdout)"
[[ $(grep -c . stderr) == 3 ]] || fail "stderr: $(cat stderr)"
grep -Eq '^Processed 100 documents \([0-9.e+-]+ docs/s, [0-9.e+-]+ MB/s\)\.$' stderr || fail "progress: $(cat stderr)"
grep -Eq '^Processed 200 documents ' stderr || fail "progress: $(cat stderr)"
grep -Eq '^jsonl-to-mmap: wrote p_text_document.bin/.idx \(250 documents, uint16\)$' stderr || fail "summary: $(cat stderr)"
