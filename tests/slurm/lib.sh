# Helpers for the tests against the private Slurm (sourced after tests/e2e/lib.sh; SLURM_CONF is set).

# job_state ID: the state of a job (of its first record: an array's tasks are checked by wait_job).
job_state() { scontrol show job -o "$1" 2>/dev/null | head -1 | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

# wait_job ID [SECONDS]: waits until the job and all its array tasks have ended; fails on a timeout.
# A job whose dependency failed stays PENDING for ever: it is cancelled and reported at once.
wait_job() {
  local id=$1 limit=${2:-120} i states
  for ((i = 0; i < limit * 10; i++)); do
    states=$(squeue -h -t all -j "$id" -o %T 2>/dev/null | sort -u | tr '\n' ' ')
    [[ -n $states && ! $states =~ (PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUE|SUSPENDED) ]] && return 0
    if squeue -h -j "$id" -o %r 2>/dev/null | grep -q DependencyNeverSatisfied; then
      scancel "$id"; fail "job $id: a job it depends on failed"
    fi
    sleep 0.1
  done
  scontrol show job "$id" >&2
  fail "job $id still '$states' after ${limit}s"
}

# expect_completed ID: every record of the job (each array task) ended COMPLETED.
expect_completed() {
  local states out
  states=$(squeue -h -t all -j "$1" -o %T | sort -u | tr '\n' ' ')
  [[ $states == "COMPLETED " ]] && return 0
  scontrol show job "$1" >&2
  # Its own output says why: shown here, since run.sh removes the test's folder afterwards.
  out=$(scontrol show job -o "$1" | grep -o 'StdOut=[^ ]*' | cut -d= -f2 || true)
  [[ -n $out && -f $out ]] && { echo "its output ends:" >&2; tail -20 "$out" >&2; }
  fail "job $1 ended '$states'"
}

# wait_until SECONDS WHAT cmd...: polls cmd every 0.1 s until it succeeds.
wait_until() {
  local limit=$1 what=$2 i; shift 2
  for ((i = 0; i < limit * 10; i++)); do "$@" && return 0; sleep 0.1; done
  fail "waited ${limit}s for $what"
}

# A small Megatron dataset at ./data/corpus_text_document (generated documents) with its own 512-token
# BPE vocabulary in ./bpe, so that the tiny model's output layer stays small.
make_dataset() {
  python3 "$ROOT/tests/e2e/minhash_corpus.py" --seed 5 --base 200 --files 1 corpus
  "$BIN/bpe-train" -q -i corpus-00.jsonl --vocab-size 512 --output-dir bpe
  mkdir -p data
  "$BIN/jsonl-to-mmap" -q --input corpus-00.jsonl --output-prefix data/corpus --vocab-file bpe/vocab.json \
    --merge-file bpe/merges.txt --append-eod
}

# train.sbatch's settings for a tiny CPU model on that dataset, one thread, a loss every iteration.
TINY_TRAIN=(DEVICE=cpu "DATA=$PWD/data/corpus_text_document" "VOCAB=$PWD/bpe/vocab.json"
  "MERGES=$PWD/bpe/merges.txt" PRECISION=
  "MODEL=--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32 --cpu-threads 1"
  "BATCH=--micro-batch-size 2 --global-batch-size 4" LOG_INTERVAL=1 EVAL_INTERVAL=1000000 EVAL_ITERS=0
  WARMUP_ITERS=10)

# iters_for SECONDS: how many iterations of the tiny model take about that long on this machine.
iters_for() {
  env "${TINY_TRAIN[@]}" SRUN= CKPT=calibrate TRAIN_ITERS=40 bash "$ROOT/scripts/sbatch/train.sbatch" \
    > calibrate.log 2>&1 || { cat calibrate.log >&2; fail "calibration run"; }
  python3 -c '
import json, sys
records = (json.loads(l) for l in open("calibrate/metrics.jsonl"))
ms = sorted(r["elapsed_ms_per_iteration"] for r in records if r.get("type") == "train")
print(int(float(sys.argv[1]) * 1000 / ms[len(ms) // 2]) + 1)' "$1"
  rm -rf calibrate calibrate.log
}

# follow_requeues ID [SECONDS]: waits until the job has ended, through any number of requeues. A job
# that requeued itself waits ~120 s to be eligible again; once it is PENDING (an update sent while it
# is still COMPLETING is lost) it is made eligible now, but not within two seconds of the requeue:
# slurmd refuses a launch whose credential dates from the second in which it revoked the job's last
# one ("already killed") and the job fails.
follow_requeues() {
  local id=$1 limit=${2:-120} i info st restarts
  for ((i = 0; i < limit * 10; i++)); do
    info=$(scontrol show job -o "$id" 2>/dev/null)
    st=$(grep -o 'JobState=[A-Z_]*' <<< "$info" | cut -d= -f2)
    restarts=$(grep -o 'Restarts=[0-9]*' <<< "$info" | cut -d= -f2)
    case $st in
      PENDING) if ((restarts > 0)) && grep -q 'Reason=BeginTime' <<< "$info"; then
                 sleep 2; scontrol update JobId="$id" StartTime=now 2>/dev/null || true
               fi ;;
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) return 0 ;;
    esac
    sleep 0.1
  done
  scontrol show job "$id" >&2
  fail "job $id still '$st' after ${limit}s"
}

# same_losses A B: two gpt-train metrics files have the same loss at every iteration (the last record
# of an iteration counts: a run stopped between checkpoints repeats the iterations after the last).
same_losses() {
  python3 - "$1" "$2" <<'PY' || fail "losses differ: $1 $2"
import json, sys
def losses(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "train": out[r["iteration"]] = r["lm_loss"]
    return out
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if not a or a != b:
    diff = sorted(set(a) ^ set(b)) or [i for i in sorted(a) if a[i] != b.get(i)]
    sys.exit(f"{len(a)} vs {len(b)} iterations; first difference at iteration {diff[0] if diff else '?'}")
PY
}
