# train.sbatch under a real one-minute time limit: Slurm itself sends USR1 (--signal=B:USR1@30, i.e.
# at the first tick of slurmctld's 30-second timer at which at most 60 s remain, which for a
# one-minute job is its first tick: anywhere in its first 30 s), gpt-train saves, the job requeues
# itself (each run gets a fresh minute) until training is done, and the losses equal those of the
# same training run uninterrupted as a second job beside it. Training lasts ~70 s (calibrated on this machine,
# with margin for a calibration taken under load), so that at least
# one tick falls inside it. The slowest test here (about a minute).
SB=$ROOT/scripts/sbatch
make_dataset
mkdir -p logs
n=$(iters_for 70)
sb=(sbatch --parsable --gpus-per-node=0 --cpus-per-task=1 --chdir="$PWD")
ref=$(env "${TINY_TRAIN[@]}" CKPT=ref TRAIN_ITERS="$n" "${sb[@]}" --output=logs/ref-%j.out "$SB/train.sbatch")
id=$(env "${TINY_TRAIN[@]}" CKPT=ckpt TRAIN_ITERS="$n" "${sb[@]}" --output=logs/train-%j.out \
     --open-mode=append --time=1 --signal=B:USR1@30 --requeue "$SB/train.sbatch")
follow_requeues "$id" 240
wait_job "$ref" 60
expect_completed "$ref"
expect_completed "$id"
log=logs/train-$id.out
restarts=$(scontrol show job -o "$id" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
((restarts >= 1)) || { cat "$log"; fail "job $id was never requeued (the time-limit signal did not come)"; }
grep -Eq "exiting program at iteration +[0-9]+ \(signal 10\)" "$log" \
  || { cat "$log"; fail "no run saved on the time-limit signal"; }
grep -q 'DUE TO TIME LIMIT' "$log" && fail "a run hit the time limit itself"
[[ $(cat ckpt/latest_checkpointed_iteration.txt) == "$n" ]] || fail "no final checkpoint"
same_losses ckpt/metrics.jsonl ref/metrics.jsonl
echo "job $id: $n iterations in $((restarts + 1)) runs"
