# jsonl-to-mmap: --split-sentences refuses plain text (it does not split sentences), and
# --merge OUT DIR/ with OUT inside DIR merges the same data on a rerun, skipping killed runs' temporaries.
TOK=(--vocab-file "$VOCAB" --merge-file "$MERGES")
printf '{"text":"One sentence. Another one."}\n{"text":"Third."}\n' > plain.jsonl
expect_exit 1 $BIN/jsonl-to-mmap -q "${TOK[@]}" --split-sentences -i plain.jsonl --output-prefix s
expect_stderr "^jsonl-to-mmap: plain.jsonl:1: field 'text' is plain text, but --split-sentences needs sentence lists"
expect_exit 1 $BIN/jsonl-to-mmap -q "${TOK[@]}" --split-sentences --on-error skip -i plain.jsonl --output-prefix s
[[ -z $(ls s_* 2>/dev/null) ]] || fail "a refused run wrote $(ls s_*)"
# Sentence lists are what it takes.
$BIN/sentence-split -q -i plain.jsonl -o split.jsonl
$BIN/jsonl-to-mmap -q "${TOK[@]}" --split-sentences -i split.jsonl --output-prefix s
[[ -e s_text_sentence.idx ]] || fail "no sentence-level dataset"
expect_exit 0 $BIN/jsonl-to-mmap --info s_text_sentence
stdout_matches "^sequences +3$" $BIN/jsonl-to-mmap --info s_text_sentence || fail "sentence-level dataset: not 3 sequences"

# --merge OUT DIR/ with OUT inside DIR: the rerun gives the same dataset.
mkdir shards
$BIN/jsonl-to-mmap -q "${TOK[@]}" -i plain.jsonl --output-prefix shards/a
$BIN/jsonl-to-mmap -q "${TOK[@]}" -i split.jsonl --output-prefix shards/b --json-keys text
cp shards/a_text_document.bin a.bin
$BIN/jsonl-to-mmap -q --merge shards/all shards/
cp shards/all.bin first.bin
cp shards/all.idx first.idx
# A killed writer's temporaries and lock file are in the directory too.
: > shards/.c_text_document.bin.tmp.Ab12Cd
: > shards/c_text_document.lock
$BIN/jsonl-to-mmap -q --merge shards/all shards/
same_file shards/all.bin first.bin
same_file shards/all.idx first.idx
$BIN/jsonl-to-mmap -q --merge ./shards/../shards/all shards
same_file shards/all.idx first.idx
