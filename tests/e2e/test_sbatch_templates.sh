# scripts/sbatch/*.sbatch run as Slurm would run them, with every variable a real array task has
# (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _MAX, SLURM_ARRAY_JOB_ID, SLURM_JOB_ID; srun replaced by a plain
# call), for arrays of 1, 3 and 8 tasks. Each time the parts together equal one process over the same
# input and every input document is accounted for: per-file cleaning (kept or rejected with a reason),
# staged dedup (kept or reported removed), per-file tokenization plus merge (one dataset document
# per input line). train.sbatch trains, saves and resumes.
SB=$ROOT/scripts/sbatch
export BIN
python3 "$ROOT/tests/e2e/minhash_corpus.py" --seed 3 --base 300 --files 8 c
ls c-0*.jsonl > all-files.txt

# run_array N CMD...: CMD once per task of an array --array=0-(N-1), as Slurm would start it.
run_array() {
  local n=$1 i; shift
  for ((i = 0; i < n; i++)); do
    env SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=$n SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=$((n - 1)) \
      SLURM_ARRAY_JOB_ID=4242 SLURM_JOB_ID=$((4243 + i)) "$@" 2>>array.log || { cat array.log; fail "task $i of $n: $*"; }
  done
}
lines() { cat "$@" | wc -l; }

for n in 1 3 8; do
  head -$n all-files.txt > files.txt
  inputs=$(sed 's/^/-i /' files.txt)
  total=$(lines $(cat files.txt))

  # clean: one file per task, all of it (no --shard); some documents kept, some rejected.
  rm -rf clean
  run_array $n env FILTER_FLAGS="--no-url-rules --rules none --min-words 120" bash "$SB/clean.sbatch"
  "$BIN/scrape-filter" -q --no-url-rules --rules none --min-words 120 $inputs -o kept-one.jsonl --rejects rej-one.jsonl
  zstd -qdc clean/part-*.jsonl.zst > kept-parts.jsonl
  zstd -qdc clean/rejects-*.jsonl.zst > rej-parts.jsonl
  same_file kept-parts.jsonl kept-one.jsonl
  same_file rej-parts.jsonl rej-one.jsonl
  [[ -s kept-parts.jsonl && -s rej-parts.jsonl ]] || fail "clean, $n tasks: expected both kept and rejected documents"
  (($(lines kept-parts.jsonl rej-parts.jsonl) == total)) || fail "clean, $n tasks: documents lost"
  (($(grep -c '"rejected_by":"min_words"' rej-parts.jsonl) == $(lines rej-parts.jsonl))) || fail "rejects without a reason"

  # dedup over 3 files: signatures on N tasks, cluster, filter on N tasks (--shard slurm: by file,
  # by document at 8 tasks) == one process.
  rm -rf dedup dedup-work
  head -3 all-files.txt > dedup-files.txt
  total=$(lines $(cat dedup-files.txt))
  run_array $n env FILES=dedup-files.txt bash "$SB/dedup.sbatch" signatures
  FILES=dedup-files.txt bash "$SB/dedup.sbatch" cluster 2>>array.log
  run_array $n env FILES=dedup-files.txt bash "$SB/dedup.sbatch" filter
  "$BIN/minhash-dedup" -q $(sed 's/^/-i /' dedup-files.txt) -o one.jsonl --removed removed-one.jsonl
  zstd -qdc dedup/kept-*.jsonl.zst | sort > staged.sorted
  sort one.jsonl > one.sorted
  same_file staged.sorted one.sorted
  sort dedup/removed.jsonl | cmp - <(sort removed-one.jsonl) || fail "dedup, $n tasks: other removed documents"
  [[ -s one.sorted && -s removed-one.jsonl ]] || fail "dedup, $n tasks: expected kept and removed documents"
  (($(lines staged.sorted dedup/removed.jsonl) == total)) || fail "dedup, $n tasks: documents lost"

  total=$(lines $(cat files.txt))
  # tokenize: one file per task, then merge == tokenizing the concatenation in one run.
  rm -rf shards data
  run_array $n env VOCAB="$VOCAB" MERGES="$MERGES" bash "$SB/tokenize.sbatch"
  OUTPUT_PREFIX=data/corpus_text_document bash "$SB/tokenize.sbatch" merge > merge.log 2>&1
  cat $(cat files.txt) | "$BIN/jsonl-to-mmap" -q --output-prefix one --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod
  same_file data/corpus_text_document.bin one_text_document.bin
  same_file data/corpus_text_document.idx one_text_document.idx
  grep -Eq "^documents +$total " merge.log || { cat merge.log; fail "tokenize, $n tasks: not $total documents"; }
done
expect_exit 2 env SLURM_ARRAY_TASK_ID=9 bash "$SB/tokenize.sbatch"
expect_stderr "no line 10 in files.txt"
# A dedup array stage outside an array is a usage error naming the missing variable.
expect_exit 2 env -u SLURM_ARRAY_TASK_ID bash "$SB/dedup.sbatch" signatures
expect_stderr "SLURM_ARRAY_TASK_ID is not set"

# train: a tiny CPU model for 4 iterations, then the same job with 6 resumes from iteration 4.
tiny=(DEVICE=cpu SRUN= DATA=data/corpus_text_document VOCAB=$VOCAB MERGES=$MERGES CKPT=ckpt PRECISION=
      "MODEL=--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32"
      "BATCH=--micro-batch-size 2 --global-batch-size 4" LOG_INTERVAL=1 EVAL_INTERVAL=2 EVAL_ITERS=1 SAVE_INTERVAL=2 WARMUP_ITERS=1)
env "${tiny[@]}" TRAIN_ITERS=4 bash "$SB/train.sbatch" > train1.log 2>&1 || { cat train1.log; fail "train.sbatch"; }
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == 4 ]] || fail "no checkpoint at iteration 4"
env "${tiny[@]}" TRAIN_ITERS=6 bash "$SB/train.sbatch" > train2.log 2>&1 || { cat train2.log; fail "train.sbatch resume"; }
grep -q "iteration        5/" train2.log || { cat train2.log; fail "resume did not continue at iteration 5"; }
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == 6 ]] || fail "no checkpoint at iteration 6"
