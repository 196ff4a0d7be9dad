# Every template in scripts/sbatch/ submitted to the private Slurm as its header says: cleaning and
# tokenizing as array jobs, the three dedup stages chained with --dependency=afterok, the merge after
# the tokenizing array. Each result equals one process over all files, byte for byte (dedup: the
# same kept lines). Real array tasks carry SLURM_ARRAY_TASK_ID/COUNT in their environment, which is
# how a template whose tool also shards by them loses data.
SB=$ROOT/scripts/sbatch
python3 "$ROOT/tests/e2e/minhash_corpus.py" --seed 3 --base 300 --files 4 c
ls "$PWD"/c-0*.jsonl > files.txt
mkdir -p logs
export FILTER_FLAGS="--rules none --no-url-rules" VOCAB MERGES OUTPUT_PREFIX=data/corpus_text_document
sb=(sbatch --parsable --cpus-per-task=1 --chdir="$PWD")
clean=$("${sb[@]}" --array=0-3 "$SB/clean.sbatch")
sig=$("${sb[@]}" --array=0-2 "$SB/dedup.sbatch" signatures)
clu=$("${sb[@]}" --dependency=afterok:"$sig" "$SB/dedup.sbatch" cluster)
filt=$("${sb[@]}" --array=0-2 --dependency=afterok:"$clu" "$SB/dedup.sbatch" filter)
tok=$("${sb[@]}" --array=0-3 "$SB/tokenize.sbatch")
merge=$("${sb[@]}" --dependency=afterok:"$tok" "$SB/tokenize.sbatch" merge)
for j in $clean $sig $clu $filt $tok $merge; do wait_job "$j" 180; done
for j in $clean $sig $clu $filt $tok $merge; do
  expect_completed "$j" || { tail -n 5 logs/* >&2; exit 1; }
done

# clean: the parts of the four array tasks == one scrape-filter run over the four files.
"$BIN/scrape-filter" -q $FILTER_FLAGS $(sed 's/^/-i /' files.txt) -o clean-one.jsonl
zstd -qdc clean/part-0000{0,1,2,3}.jsonl.zst > clean-parts.jsonl
same_file clean-parts.jsonl clean-one.jsonl
[[ $(wc -l < clean-one.jsonl) == $(cat $(cat files.txt) | wc -l) ]] || fail "clean dropped documents"

# dedup: what the three filter tasks keep == what one minhash-dedup process keeps.
"$BIN/minhash-dedup" -q $(sed 's/^/-i /' files.txt) -o one.jsonl
zstd -qdc dedup/kept-{0,1,2}.jsonl.zst | sort > staged.sorted
sort one.jsonl > one.sorted
same_file staged.sorted one.sorted
[[ -s one.sorted && $(wc -l < one.sorted) -lt $(cat $(cat files.txt) | wc -l) ]] \
  || fail "dedup kept nothing or removed nothing"

# tokenize + merge == tokenizing the concatenation in one jsonl-to-mmap run.
cat $(cat files.txt) | "$BIN/jsonl-to-mmap" -q --output-prefix one --vocab-file "$VOCAB" \
  --merge-file "$MERGES" --append-eod
same_file data/corpus_text_document.bin one_text_document.bin
same_file data/corpus_text_document.idx one_text_document.idx
