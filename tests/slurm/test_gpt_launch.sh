# gpt-launch against the private Slurm: every preset's job.sbatch (and a heterogeneous one) passes
# `sbatch --test-only` on the fake GPU nodes; a submitted 2-task CPU run writes the results layout
# with per-rank logs, and `gpt-launch status` shows its state, layout and iteration table; a run in
# which one rank fails shows that rank's error line first (a Python-style warning is not an error).
L=$BIN/gpt-launch
for p in $(ls "$ROOT"/presets/*.yaml | xargs -n1 basename | sed 's/\.yaml$//'); do
  nodes=2; [[ $p == gpt3-175b ]] && nodes=4
  "$L" --preset "$p" --nodes "$nodes" --gpus-per-node 8 --partition gpu --time 1:00:00 --dry-run 2>/dev/null
  sbatch --test-only results/$p/job.sbatch 2> test-only.txt || { cat test-only.txt; fail "$p: sbatch --test-only"; }
  grep -q "using $((nodes * 8)) processors on nodes" test-only.txt || { cat test-only.txt; fail "$p: test-only"; }
done
"$L" --preset gpt2-124m --het h100:2 --het a100:1 --set global-batch-size=384 --partition gpu --time 1:00:00 \
  --name het --dry-run 2>/dev/null
sbatch --test-only results/het/job.sbatch 2> test-only.txt || { cat test-only.txt; fail "hetjob --test-only"; }
grep -Eq 'using 24 processors on .*a100-.*h100-' test-only.txt || { cat test-only.txt; fail "hetjob placement"; }
[[ -z $(squeue -h) ]] || fail "--test-only left a job"

# A 2-task CPU run: a tiny model on mock data, nothing saved (each task is its own process until
# gpt-train trains data-parallel).
tiny=(--device cpu --nodes 1 --gpus-per-node 2 --partition debug --time 5
      --set num-layers=1 --set hidden-size=32 --set num-attention-heads=2 --set seq-length=32
      --set max-position-embeddings=32 --set micro-batch-size=2 --set global-batch-size=4 --set train-iters=12
      --set lr-warmup-iters=2 --set log-interval=1 --set eval-iters=0 --set vocab-size=512 --set cpu-threads=1
      --set bf16=false --set save=false --set load=false --set save-interval=false --set metrics-file=false
      --set exit-duration-in-mins=false)
id=$("$L" --preset gpt3-126m --name cpu2 "${tiny[@]}")
[[ $(cat results/cpu2/job_id) == "$id" ]] || fail "job_id"
wait_job "$id" 60
expect_completed "$id"
for f in job.sbatch command.txt config.yaml git_revision job_id logs/rank-0.log logs/rank-1.log; do
  [[ -s results/cpu2/$f ]] || fail "results/cpu2/$f missing"
done
[[ -e results/cpu2/logs/slurm-$id.out ]] || fail "no logs/slurm-$id.out"
# The ranks train as one data-parallel job: each prints its start line, the last the iterations.
for r in 0 1; do grep -q "^ > rank $r of 2:" results/cpu2/logs/rank-$r.log || fail "rank $r did not start"; done
grep -Eq 'iteration +12/ +12' results/cpu2/logs/rank-1.log || fail "the last rank did not train"
"$L" status results/cpu2 > status.txt
grep -q "^job $id: JobState=COMPLETED" status.txt || { cat status.txt; fail "status: job state"; }
grep -q '^layout: 1 nodes x 2 = world size 2 (T1 P1 D2), partition debug' status.txt || { cat status.txt; fail "status: layout"; }
grep -q 'model 1 x 32, 2 heads, sequence 32' status.txt || fail "status: model shape"
grep -Eq '^rank 1: iteration +12/' status.txt || fail "status: rank 1's last iteration"
grep -Eq '^ +12 +[0-9.]+ +[0-9]+ +[0-9.]+$' status.txt || { cat status.txt; fail "status: iteration table"; }
grep -q ERROR status.txt && fail "status: errors in a clean run"
"$L" status "$id" > status-by-id.txt
# --follow on an ended job: one report, then it returns.
timeout 30 "$L" status results/cpu2 --follow --interval 0.2 > follow.txt || fail "status --follow did not return"
[[ $(grep -c '^layout: ' follow.txt) == 1 ]] || fail "status --follow refreshed an ended job"
cmp -s <(sed 1d status.txt) <(sed 1d status-by-id.txt) || fail "status by job id differs"

# A failed run: rank 1 warns, then exits with an error; rank 0 is killed (--kill-on-bad-exit).
cat > failing-train <<'SH'
#!/usr/bin/env bash
if [[ $SLURM_PROCID == 1 ]]; then
  echo "/usr/lib/python3/dist-packages/torch/cuda.py:12: UserWarning: no CUDA error handler installed"
  echo "gpt-train: corpus_text_document.idx: cannot open: No such file or directory" >&2
  exit 1
fi
exec "$(dirname "$0")/gpt-train" "$@"
SH
chmod +x failing-train; ln -s "$BIN/gpt-train" gpt-train
id=$("$L" --preset gpt3-126m --name failed --gpt-train failing-train "${tiny[@]}" --set train-iters=100000)
wait_job "$id" 60
[[ $(job_state "$id") == FAILED ]] || fail "the failing run ended $(job_state "$id")"
"$L" status results/failed > status.txt
grep -m1 ERROR status.txt | grep -q '^rank 1 ERROR: gpt-train: corpus_text_document.idx: cannot open' \
  || { cat status.txt; fail "status: rank 1's error is not the first error line"; }
grep -q "^job $id: JobState=FAILED" status.txt || fail "status: failed state"
grep -q UserWarning status.txt && fail "status: a warning shown as an error"
true
