# jsonl-to-mmap: byte-identical to Megatron preprocess_data.py (cd760a9e0e) on the fortunes corpus,
# from raw text and from bpe-encode ids; thread count; --merge; a killed run; .idx validation; flags.
G=$GOLDEN/megatron/fortunes-en_text_document
T2M=$BIN/jsonl-to-mmap
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > fortunes.jsonl

# Raw text, tokenized in-process, on 1 and 2 threads: identical to the golden pair.
$T2M -q --input "$GOLDEN/fortunes-en.jsonl.zst" --output-prefix t1 --vocab-file "$VOCAB" --merge-file "$MERGES" \
  --tokenizer-type GPT2BPETokenizer --dataset-impl mmap --append-eod --threads 1
same_file t1_text_document.bin "$G.bin"
same_file t1_text_document.idx "$G.idx"
$T2M -q --input fortunes.jsonl --output-prefix t2 --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod --workers 2
same_file t2_text_document.bin "$G.bin"
same_file t2_text_document.idx "$G.idx"

# Pre-tokenized ids from bpe-encode (piped; no vocabulary needed here: GPT-2 ids fit uint16).
if [[ -x $BIN/bpe-encode ]]; then
  $BIN/bpe-encode -q -i "$GOLDEN/fortunes-en.jsonl.zst" --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod \
    | $T2M -q --output-prefix ids --json-keys text --threads 2
  same_file ids_text_document.bin "$G.bin"
  same_file ids_text_document.idx "$G.idx"
else
  echo "note: $BIN/bpe-encode not built; the piped-ids case is covered by hand-written ids below only"
fi

# Hand-written ids, the layouts bpe-encode uses: "ids" (one key), "K_ids" (several keys), sentence arrays.
printf '%s\n' '{"ids": [15496, 995]}' '{"ids": []}' '{"ids": [40, 1842]}' > ids.jsonl
$T2M -q -i ids.jsonl --output-prefix h --append-eod
$T2M --info h_text_document > info.txt
grep -q '^sequences  2$' info.txt || { cat info.txt; fail "sequences"; }
grep -q '^documents  3 (1 empty)$' info.txt || { cat info.txt; fail "empty document is a zero-sequence document"; }
grep -q '^tokens     6$' info.txt || { cat info.txt; fail "tokens (EOD counted)"; }
grep -q '^token ids  min 40, max 50256$' info.txt || { cat info.txt; fail "token ids"; }
# The spec's worked example (§1.11), empty document aside: the .bin bytes.
printf '%s\n' '{"ids": [15496, 995, 50256]}' '{"ids": [40, 1842, 50256]}' > ex.jsonl
$T2M -q -i ex.jsonl --output-prefix ex
[[ $(od -An -tx1 ex_text_document.bin | tr -d ' \n') == 883ce30350c42800320750c4 ]] || fail "worked example .bin"
[[ $(stat -c %s ex_text_document.idx) == 82 ]] || fail "worked example .idx size"
printf '%s\n' '{"a_ids": [1, 2], "b_ids": [3]}' '{"a_ids": [4], "b_ids": []}' > two.jsonl
$T2M -q -i two.jsonl --output-prefix k --json-keys a b
stdout_matches '^tokens     3$' $T2M --info k_a_document || fail "key a"
stdout_matches '^documents  2 \(1 empty\)$' $T2M --info k_b_document || fail "key b"
printf '%s\n' '{"ids": [[1, 2], [], [3]]}' '{"ids": [[4]]}' > sent.jsonl
$T2M -q -i sent.jsonl --output-prefix s
$T2M --info s_text_sentence > info.txt
grep -q '^sequences  3$' info.txt && grep -q '^documents  2 (0 empty)$' info.txt || { cat info.txt; fail "sentence arrays"; }

# dtype: ids above uint16 without a vocabulary are an error naming file:line and the flags; with
# --vocab-size (Megatron's rule: >= 65500 -> int32) they fit.
printf '%s\n' '{"ids": [1, 2]}' '{"ids": [70000]}' > big.jsonl
expect_exit 1 $T2M -q -i big.jsonl --output-prefix big
expect_stderr "big.jsonl:2: .*70000.*(--vocab-size|--dtype)"
[[ ! -e big_text_document.idx ]] || fail "a failed run left an .idx"
$T2M -q -i big.jsonl --output-prefix big --vocab-size 100000
stdout_matches '^dtype      int32$' $T2M --info big_text_document || fail "int32 for a large vocabulary"
expect_exit 1 $T2M -q -i big.jsonl --output-prefix big2 --vocab-size 50257
expect_stderr "big.jsonl:2: .*70000"

# Text without a vocabulary, a missing field: exit 1, named.
expect_exit 1 $T2M -q -i fortunes.jsonl --output-prefix nv
expect_stderr "--vocab-file"
expect_exit 1 $T2M -q -i fortunes.jsonl --output-prefix nk --json-keys body --vocab-file "$VOCAB" --merge-file "$MERGES"
expect_stderr "fortunes.jsonl:1: .*'body'"

# Progress lines in Megatron's shape every --log-interval documents.
$T2M -i fortunes.jsonl --output-prefix p --vocab-file "$VOCAB" --merge-file "$MERGES" --log-interval 5000 \
  --threads 2 > stdout 2> progress
grep -q '^Opening fortunes.jsonl$' stdout || fail "Opening line"
[[ $(grep -cE '^Processed (5000|10000) documents \([0-9.e+-]+ docs/s, [0-9.e+-]+ MB/s\)\.$' progress) == 2 ]] \
  || { cat progress; fail "progress lines"; }

# --merge of two shards equals the whole (prefixes, and a directory as merge_datasets.py).
head -7000 fortunes.jsonl > a.jsonl
tail -n +7001 fortunes.jsonl > b.jsonl
mkdir shards
$T2M -q -i a.jsonl --output-prefix shards/part0 --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod
$T2M -q -i b.jsonl --output-prefix shards/part1 --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod
$T2M -q --merge merged shards/part0_text_document shards/part1_text_document
same_file merged.bin "$G.bin"
same_file merged.idx "$G.idx"
$T2M -q --merge merged_dir shards
same_file merged_dir.bin "$G.bin"
same_file merged_dir.idx "$G.idx"

# --info: counts of the golden dataset and the text of a document.
$T2M --info "$G" --show-doc 0 --vocab-file "$VOCAB" --merge-file "$MERGES" > info.txt
grep -q '^sequences  14805$' info.txt || { cat info.txt; fail "--info sequences"; }
first=$(head -1 fortunes.jsonl | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["text"][:40])')
grep -qF -- "$first" info.txt || { cat info.txt; fail "--show-doc text"; }
grep -q '<|endoftext|>' info.txt || fail "--show-doc EOD"

# A run killed with SIGKILL leaves no pair that --info accepts.
for i in $(seq 20); do cat fortunes.jsonl; done > large.jsonl
rc=0
timeout -s KILL 0.3 $T2M -q -i large.jsonl --output-prefix killed --vocab-file "$VOCAB" --merge-file "$MERGES" \
  --threads 2 || rc=$?
if [[ $rc == 137 ]]; then
  expect_exit 1 $T2M --info killed_text_document
else
  echo "note: the conversion finished within 0.3 s (rc $rc); its pair must then be complete"
  $T2M --info killed_text_document > /dev/null
fi

# The .idx reader: truncated, wrong magic, unknown version and dtype, pointer past the end.
patch() {  # patch OFFSET HEXBYTES FILE
  python3 -c 'import sys; p=sys.argv[3]; b=bytearray(open(p,"rb").read()); v=bytes.fromhex(sys.argv[2]); o=int(sys.argv[1]); b[o:o+len(v)]=v; open(p,"wb").write(b)' "$@"
}
bad() { cp "$G.bin" "$1.bin"; cp "$G.idx" "$1.idx"; }
bad trunc; head -c 1000 "$G.idx" > trunc.idx
expect_exit 1 $T2M --info trunc; expect_stderr "trunc.idx: size"
bad magic; patch 0 4e "magic.idx"
expect_exit 1 $T2M --info magic; expect_stderr "magic.idx: magic"
bad version; patch 9 02 "version.idx"
expect_exit 1 $T2M --info version; expect_stderr "version.idx: version"
bad dtype; patch 17 09 "dtype.idx"
expect_exit 1 $T2M --info dtype; expect_stderr "dtype.idx: dtype"
bad pointer; patch $((34 + 4 * 14805 + 8)) ffffff7f "pointer.idx"
expect_exit 1 $T2M --info pointer; expect_stderr "pointer.idx: sequence_pointers\[1\]"
bad short; head -c 1000 "$G.bin" > short.bin
expect_exit 1 $T2M --info short; expect_stderr "short.idx: sequence_lengths\[[0-9]+\]: .*past the end of short.bin"

# Bad flags: exit 2.
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --tokenizer-type BertWordPieceCase
expect_stderr "tokenizer-type"
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --dataset-impl lazy
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --partitions 2
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --dtype float32
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --no-such-flag
expect_exit 2 $T2M --input fortunes.jsonl
expect_exit 2 $T2M --input fortunes.jsonl --output-prefix x --vocab-file "$VOCAB"
[[ ! -e x_text_document.bin ]] || fail "a usage error wrote output"
