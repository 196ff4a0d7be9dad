# train.sbatch under the private Slurm, with real signals: `scancel --batch -s USR1` (what Slurm's
# --signal=B:USR1@T sends at the time limit) makes gpt-train save at the end of its iteration; the
# job requeues itself, resumes from that checkpoint and ends with the losses of an uninterrupted
# run. A plain `scancel` mid-run leaves the last complete checkpoint loadable, and training resumed
# from it again ends with the same losses.
SB=$ROOT/scripts/sbatch
make_dataset
mkdir -p logs
n=$(iters_for 4)
env "${TINY_TRAIN[@]}" SRUN= CKPT=ref TRAIN_ITERS="$n" bash "$SB/train.sbatch" > ref.log 2>&1 \
  || { cat ref.log; fail "uninterrupted run"; }
sb=(sbatch --parsable --gpus-per-node=0 --cpus-per-task=1 --chdir="$PWD")

# The signal: once the run is past iteration 10, USR1 to the batch shell.
id=$(env "${TINY_TRAIN[@]}" CKPT=ckpt TRAIN_ITERS="$n" "${sb[@]}" --output=logs/train-%j.out \
     --open-mode=append --signal=B:USR1@5 --requeue "$SB/train.sbatch")
wait_until 60 "iteration 10 of job $id" \
  bash -c "[[ -s ckpt/metrics.jsonl && \$(wc -l < ckpt/metrics.jsonl) -ge 10 ]]"
scancel --batch -s USR1 "$id"
follow_requeues "$id" 120
expect_completed "$id"
restarts=$(scontrol show job -o "$id" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
((restarts == 1)) || fail "job $id restarted $restarts times, not once"
log=logs/train-$id.out
saved=$(grep -o 'saved checkpoint from iteration *[0-9]*' "$log" | head -1 | grep -o '[0-9]*$')
[[ -n $saved ]] && ((saved >= 10 && saved < n)) \
  || { cat "$log"; fail "the signalled run did not save mid-run ($saved of $n)"; }
grep -q "exiting program at iteration $saved (signal 10)" "$log" || fail "no exit on the signal"
grep -q "requeueing job $id" "$log" || fail "the job did not requeue itself"
grep -Eq "iteration +$((saved + 1))/" "$log" || fail "the requeued run did not resume"
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == "$n" ]] || fail "no final checkpoint"
same_losses ckpt/metrics.jsonl ref/metrics.jsonl

# scancel mid-run (SIGTERM, then SIGKILL after KillWait): the job is not requeued, and the last
# checkpoint loads and training from it ends with the same losses.
id=$(env "${TINY_TRAIN[@]}" CKPT=cancel TRAIN_ITERS="$n" SAVE_INTERVAL=5 "${sb[@]}" \
     --output=logs/cancel-%j.out --requeue "$SB/train.sbatch")
wait_until 60 "a checkpoint of job $id" test -s cancel/latest_checkpointed_iteration.txt
scancel "$id"
wait_job "$id" 60
[[ $(job_state "$id") == CANCELLED ]] || fail "job $id ended $(job_state "$id"), not CANCELLED"
last=$(cat cancel/latest_checkpointed_iteration.txt)
((last >= 5 && last < n)) || fail "last checkpoint at iteration $last of $n"
env "${TINY_TRAIN[@]}" SRUN= CKPT=cancel TRAIN_ITERS="$n" bash "$SB/train.sbatch" > resume.log 2>&1 \
  || { cat resume.log; fail "resuming from the cancelled job's checkpoint"; }
grep -Eq "iteration +$((last + 1))/" resume.log || { cat resume.log; fail "did not resume at $((last + 1))"; }
same_losses cancel/metrics.jsonl ref/metrics.jsonl
