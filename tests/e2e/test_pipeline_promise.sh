# The bpe-encode | jsonl-to-mmap pipeline (README, scripts/sbatch/tokenize.sbatch): when bpe-encode is
# killed mid-stream, the job fails and no dataset appears at the final prefix; a rerun completes it.
SB=$ROOT/scripts/sbatch
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl
head -300 all.jsonl > in.jsonl
echo in.jsonl > files.txt
# A bpe-encode that is killed after its first 100 lines (a complete prefix of the real output).
mkdir killbin
for t in "$BIN"/*; do ln -s "$t" killbin/; done
rm killbin/bpe-encode
cat > killbin/bpe-encode <<SH
#!/usr/bin/env bash
"$BIN/bpe-encode" "\$@" | head -100
kill -9 \$\$
SH
chmod +x killbin/bpe-encode

expect_exit 137 env BIN=$PWD/killbin VOCAB=$VOCAB MERGES=$MERGES SLURM_ARRAY_TASK_ID=0 bash "$SB/tokenize.sbatch"
[[ -z $(ls -A shards) ]] || fail "a killed tokenize task left $(ls -A shards)"
# An earlier complete shard is not replaced by a partial one, and stays a matching pair.
BIN=$BIN VOCAB=$VOCAB MERGES=$MERGES SLURM_ARRAY_TASK_ID=0 bash "$SB/tokenize.sbatch"
cp shards/part-00000_text_document.bin good.bin
cp shards/part-00000_text_document.idx good.idx
expect_exit 137 env BIN=$PWD/killbin VOCAB=$VOCAB MERGES=$MERGES SLURM_ARRAY_TASK_ID=0 bash "$SB/tokenize.sbatch"
same_file shards/part-00000_text_document.bin good.bin
same_file shards/part-00000_text_document.idx good.idx
[[ $(ls -A shards | wc -l) == 2 ]] || fail "left: $(ls -A shards)"
"$BIN/bpe-encode" -q -i in.jsonl --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod |
  "$BIN/jsonl-to-mmap" -q --output-prefix ref --json-keys text
same_file good.bin ref_text_document.bin

# The README's form of the pipeline, with the killed bpe-encode: nothing at data/crawl.
mkdir data
readme_pipeline() {  # BPE_ENCODE: the bpe-encode to run
  set -o pipefail
  $BPE_ENCODE -q -i in.jsonl --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod \
    | "$BIN/jsonl-to-mmap" -q --output-prefix data/.crawl.tmp --json-keys text &&
    rm -f data/crawl_text_document.idx && mv data/.crawl.tmp_text_document.bin data/crawl_text_document.bin &&
    mv data/.crawl.tmp_text_document.idx data/crawl_text_document.idx
}
rc=0
BPE_ENCODE=killbin/bpe-encode readme_pipeline 2>/dev/null || rc=$?
[[ $rc == 137 ]] || fail "the README pipeline with a killed bpe-encode exited $rc"
[[ ! -e data/crawl_text_document.bin && ! -e data/crawl_text_document.idx ]] || fail "a killed pipeline left data/crawl"
BPE_ENCODE=$BIN/bpe-encode readme_pipeline
same_file data/crawl_text_document.bin ref_text_document.bin
same_file data/crawl_text_document.idx ref_text_document.idx
