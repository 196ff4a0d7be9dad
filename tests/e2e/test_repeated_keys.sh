# A repeated key in a JSONL document: every tool reads the LAST value, as Python's json does (and so
# Megatron's preprocess_data.py and datatrove); a rewritten field is written once, at its first
# position; every other field passes byte for byte.
TOK=(--vocab-file "$VOCAB" --merge-file "$MERGES")
printf '{"url":"https://example.org/a","text":"First value. Not this.","id":7,"text":"Last value. Is this.","meta":{"a":1,"a":2}}\n' > dup.jsonl
printf '{"url":"https://example.org/a","text":"Last value. Is this.","id":7,"meta":{"a":1,"a":2}}\n' > last.jsonl

[[ $($BIN/sentence-split -q -i dup.jsonl) == '{"url":"https://example.org/a","text":["Last value.","Is this."],"id":7,"meta":{"a":1,"a":2}}' ]] ||
  fail "sentence-split: $($BIN/sentence-split -q -i dup.jsonl)"
[[ $($BIN/bpe-encode -q "${TOK[@]}" -i dup.jsonl) == "$($BIN/bpe-encode -q "${TOK[@]}" -i last.jsonl)" ]] ||
  fail "bpe-encode: $($BIN/bpe-encode -q "${TOK[@]}" -i dup.jsonl)"
$BIN/jsonl-to-mmap -q "${TOK[@]}" -i dup.jsonl --output-prefix dup
$BIN/jsonl-to-mmap -q "${TOK[@]}" -i last.jsonl --output-prefix last
same_file dup_text_document.bin last_text_document.bin
# ... and for ids input.
printf '{"ids":[1,2],"ids":[3,4,5]}\n' | $BIN/jsonl-to-mmap -q --vocab-size 100 --output-prefix ids
printf '{"ids":[3,4,5]}\n' | $BIN/jsonl-to-mmap -q --vocab-size 100 --output-prefix ids-last
same_file ids_text_document.bin ids-last_text_document.bin
# scrape-filter rewrites the text (repair: CRLF to LF) from the last value, once.
printf '{"url":"https://example.org/a","text":"first","id":7,"text":"Last\\r\\nvalue"}\n' > crlf.jsonl
[[ $($BIN/scrape-filter -q --rules none -i crlf.jsonl) == '{"url":"https://example.org/a","text":"Last\nvalue","id":7}' ]] ||
  fail "scrape-filter: $($BIN/scrape-filter -q --rules none -i crlf.jsonl)"
# bpe-train counts the last value: the first value's words leave no trace in the merges.
printf '{"text":"zzzzzzzz zzzzzzzz","text":"abab abab"}\n' > train.jsonl
$BIN/bpe-train -q -i train.jsonl --alphabet seen --special-tokens --vocab-size 100 --output-dir tok
grep -q z tok/vocab.json && fail "bpe-train counted the first value: $(cat tok/vocab.json)"
grep -q '"ab"' tok/vocab.json || fail "bpe-train did not count the last value: $(cat tok/vocab.json)"
# minhash-dedup reads the last text and the last id: the two lines below are the same document.
printf '{"id":"x","id":"a","text":"other words entirely here","text":"the same text in both lines of this file"}\n{"id":"b","text":"the same text in both lines of this file"}\n' > md.jsonl
$BIN/minhash-dedup -q -i md.jsonl -o kept.jsonl --removed removed.jsonl
[[ $(wc -l < kept.jsonl) == 1 ]] || fail "minhash-dedup kept $(cat kept.jsonl)"
[[ $(cat removed.jsonl) == '{"id":"b","cluster":"a","duplicate_of":"a","match":"exact"}' ]] ||
  fail "minhash-dedup reported $(cat removed.jsonl)"
