# scripts/sbatch/*.sbatch run as Slurm would run them (array variables set, srun replaced by a plain
# call): per-file cleaning equals one scrape-filter run over the files (URL dedup aside: none repeat);
# staged dedup over 3 array tasks keeps what one process keeps; per-shard tokenization plus
# merge gives the dataset one jsonl-to-mmap run gives; train.sbatch trains, saves and resumes.
SB=$ROOT/scripts/sbatch
export BIN
python3 "$ROOT/tests/e2e/minhash_corpus.py" --seed 3 --base 300 --files 4 c
ls c-0*.jsonl > files.txt

# clean: one array task per file, no HTML stage (the generated corpus has text only), no quality rules.
for i in 0 1 2 3; do
  SLURM_ARRAY_TASK_ID=$i FILTER_FLAGS="--rules none --no-url-rules" bash "$SB/clean.sbatch" 2>/dev/null
done
"$BIN/scrape-filter" -q --rules none --no-url-rules $(sed 's/^/-i /' files.txt) -o clean-one.jsonl
zstd -qdc clean/part-0000{0,1,2,3}.jsonl.zst > clean-parts.jsonl
same_file clean-parts.jsonl clean-one.jsonl
[[ $(wc -l < clean-one.jsonl) == $(cat $(cat files.txt) | wc -l) ]] || fail "clean dropped documents"

# dedup: signatures x3, cluster, filter x3 (SLURM_ARRAY_TASK_COUNT=3) == one process.
for stage in signatures cluster filter; do
  if [[ $stage == cluster ]]; then
    bash "$SB/dedup.sbatch" cluster 2>/dev/null
  else
    for i in 0 1 2; do SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 bash "$SB/dedup.sbatch" "$stage" 2>/dev/null; done
  fi
done
"$BIN/minhash-dedup" -q $(sed 's/^/-i /' files.txt) -o one.jsonl
zstd -qdc dedup/kept-{0,1,2}.jsonl.zst | sort > staged.sorted
sort one.jsonl > one.sorted
same_file staged.sorted one.sorted
[[ -s one.sorted ]] || fail "dedup kept nothing"

# tokenize: one array task per file, then merge == tokenizing the concatenation in one run.
for i in 0 1 2 3; do SLURM_ARRAY_TASK_ID=$i VOCAB=$VOCAB MERGES=$MERGES bash "$SB/tokenize.sbatch" 2>/dev/null; done
OUTPUT_PREFIX=data/corpus_text_document bash "$SB/tokenize.sbatch" merge > merge.log 2>&1
cat $(cat files.txt) | "$BIN/jsonl-to-mmap" -q --output-prefix one --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod
same_file data/corpus_text_document.bin one_text_document.bin
same_file data/corpus_text_document.idx one_text_document.idx
expect_exit 2 env SLURM_ARRAY_TASK_ID=9 bash "$SB/tokenize.sbatch"
expect_stderr "no line 10 in files.txt"

# train: a tiny CPU model for 4 iterations, then the same job with 6 resumes from iteration 4.
tiny=(DEVICE=cpu SRUN= DATA=data/corpus_text_document VOCAB=$VOCAB MERGES=$MERGES CKPT=ckpt PRECISION=
      "MODEL=--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32"
      "BATCH=--micro-batch-size 2 --global-batch-size 4" LOG_INTERVAL=1 EVAL_INTERVAL=2 EVAL_ITERS=1 SAVE_INTERVAL=2 WARMUP_ITERS=1)
env "${tiny[@]}" TRAIN_ITERS=4 bash "$SB/train.sbatch" > train1.log 2>&1 || { cat train1.log; fail "train.sbatch"; }
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == 4 ]] || fail "no checkpoint at iteration 4"
env "${tiny[@]}" TRAIN_ITERS=6 bash "$SB/train.sbatch" > train2.log 2>&1 || { cat train2.log; fail "train.sbatch resume"; }
grep -q "iteration        5/" train2.log || { cat train2.log; fail "resume did not continue at iteration 5"; }
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == 6 ]] || fail "no checkpoint at iteration 6"
