# gpt-train as several processes on the CPU backend (TCP communicator): data parallelism against
# one process, the distributed optimizer, a collective SIGTERM, refusals, and the older
# single-file checkpoint format. Sourced by tests/e2e/run.sh in a scratch directory.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "test_gpt_train_dp: $*" >&2; exit 1; }

tiny=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8
      --micro-batch-size 2 --global-batch-size 12 --lr 1e-2 --mock-data --mock-data-samples 64
      --vocab-size 40 --log-interval 1 --eval-iters 0 --cpu-threads 1)
# A free port for each job (the kernel picks it).
# D ranks in the background; prefix p: logs p<r>.txt / p<r>.err; waits and checks every exit 0.
ranks() {  # D prefix args...
  local D=$1 p=$2; shift 2
  local mp; mp=$(free_port); local pids=()
  for ((r = 0; r < D; r++)); do
    "$GT" "$@" --rank $r --world-size "$D" --master-addr 127.0.0.1 --master-port "$mp" \
      > "$p$r.txt" 2> "$p$r.err" & pids+=($!)
  done
  for ((r = 0; r < D; r++)); do wait "${pids[$r]}" || { cat "$p$r.err"; fail "rank $r of $p failed"; }; done
}
losses() { grep -o 'lm loss: [^|]*' "$1"; }
hashes() { grep -o 'params hash: rank [0-9]* iteration [0-9]* [0-9a-f]*' "$1" | awk '{print $6, $7}'; }

# DP=2 and DP=3 (accumulation 3 and 2) against one process (accumulation 6); every rank holds the
# same weights after each step; the last rank prints the iteration lines.
"$GT" "${tiny[@]}" --train-iters 6 > one.txt
for D in 2 3; do
  ranks "$D" "dp$D-" "${tiny[@]}" --train-iters 6 --log-params-hash
  last=$((D - 1))
  python3 - "one.txt" "dp$D-$last.txt" <<'PY' || fail "DP=$D losses differ from one process"
import re, sys
a, b = ([float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", open(f).read())] for f in sys.argv[1:])
assert len(a) == len(b) == 6, (a, b)
assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
PY
  for ((r = 0; r < last; r++)); do
    ! grep -Eq '^ iteration +[0-9]+/' "dp$D-$r.txt" || fail "rank $r of $D printed iteration lines"
    diff <(hashes "dp$D-$r.txt") <(hashes "dp$D-$last.txt") > /dev/null || fail "DP=$D rank $r weights differ"
    grep -q "^ > rank $r of $D: host .*, local rank $r, device cpu, data-parallel index $r" "dp$D-$r.txt" \
      || fail "start line of rank $r"
    grep -q "^\[Rank $r\] (after 1 iterations) memory (MB)" "dp$D-$r.txt" || fail "memory line of rank $r"
  done
  [[ $(hashes "dp$D-0.txt" | wc -l) == 6 ]] || fail "hash lines"
done

# The local launcher: the same run as three ranks of one gpt-train.
"$GT" "${tiny[@]}" --train-iters 6 --nproc-per-node 3 --use-distributed-optimizer > np.txt 2> np.err \
  || { cat np.err; fail "--nproc-per-node 3"; }
[[ $(grep -c '^ > rank [0-2] of 3: host ' np.txt) == 3 ]] || fail "--nproc-per-node start lines"
python3 - one.txt np.txt <<'PY' || fail "--nproc-per-node 3 losses differ from one process"
import re, sys
a, b = ([float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", open(f).read())] for f in sys.argv[1:])
assert len(a) == len(b) == 6 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
PY

# torchrun's and srun's variables, set by hand, start the same job.
mp=$(free_port); pids=()
for r in 0 1; do
  env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$mp" \
    "$GT" "${tiny[@]}" --train-iters 6 > "tr$r.txt" 2> "tr$r.err" & pids+=($!)
done
for r in 0 1; do wait "${pids[$r]}" || { cat "tr$r.err"; fail "torchrun variables, rank $r"; }; done
mp=$(free_port); pids=()
for r in 0 1; do
  env SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_LOCALID=$r SLURM_STEP_NUM_TASKS=2 \
    SLURM_STEP_NODELIST=localhost MASTER_PORT="$mp" \
    "$GT" "${tiny[@]}" --train-iters 6 > "sr$r.txt" 2> "sr$r.err" & pids+=($!)
done
for r in 0 1; do wait "${pids[$r]}" || { cat "sr$r.err"; fail "srun variables, rank $r"; }; done
grep -q '^ > rank 1 of 2: ' tr1.txt && grep -q '^ > rank 1 of 2: ' sr1.txt || fail "not run as 2 ranks"
diff <(losses dp2-1.txt) <(losses tr1.txt) || fail "torchrun variables: other losses"
diff <(losses dp2-1.txt) <(losses sr1.txt) || fail "srun variables: other losses"

# The distributed optimizer gives plain DP's losses bit for bit (clipping active), and its
# checkpoint shards resume at another DP size.
ranks 2 plain- "${tiny[@]}" --train-iters 6 --clip-grad 0.1
ranks 2 zero- "${tiny[@]}" --train-iters 6 --clip-grad 0.1 --use-distributed-optimizer \
      --save ck --save-interval 3
diff <(losses plain-1.txt) <(losses zero-1.txt) || fail "distributed optimizer losses differ"
[[ -s ck/iter_0000003/shard_0_of_2.bin && -s ck/iter_0000003/shard_1_of_2.bin ]] || fail "shards"
[[ $(cat ck/latest_checkpointed_iteration.txt) == 6 ]] || fail "latest iteration"
echo 3 > ck/latest_checkpointed_iteration.txt
ranks 3 resume- "${tiny[@]}" --train-iters 6 --clip-grad 0.1 --load ck
python3 - zero-1.txt resume-2.txt <<'PY' || fail "DP=3 resume of a DP=2 checkpoint"
import re, sys
a, b = ([float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", open(f).read())] for f in sys.argv[1:])
assert len(b) == 3 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a[3:], b)), (a, b)
PY

# Overlapped reductions and gathers, and the sharded fp32 master (--bf16 with the distributed
# optimizer; fp32 compute on the CPU): plain DP's losses bit for bit, 2 processes, 9 buckets.
ov=("${tiny[@]}" --num-layers 2 --train-iters 4 --ddp-bucket-size 1000)
ranks 2 ov-plain- "${ov[@]}"
ranks 2 ov-on- "${ov[@]}" --overlap-grad-reduce
ranks 2 ov-zero- "${ov[@]}" --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
grep -q 'AdamW state and fp32 master weights sharded' ov-zero-0.txt || fail "sharded master line"
diff <(losses ov-plain-1.txt) <(losses ov-on-1.txt) || fail "--overlap-grad-reduce losses differ"
diff <(losses ov-plain-1.txt) <(losses ov-zero-1.txt) || fail "sharded master with overlap: losses differ"

# SIGTERM to one rank: every rank saves the same iteration and exits 0.
mp=$(free_port); pids=()
for r in 0 1; do
  "$GT" "${tiny[@]}" --train-iters 100000 --save sig --rank $r --world-size 2 \
    --master-addr 127.0.0.1 --master-port "$mp" > "sig$r.txt" 2> "sig$r.err" & pids+=($!)
done
for _ in $(seq 600); do grep -Eq '^ iteration +[0-9]+/' sig1.txt 2>/dev/null && break; sleep 0.1; done
kill -TERM "${pids[0]}"
for r in 0 1; do wait "${pids[$r]}" || { cat "sig$r.err"; fail "rank $r exit status after SIGTERM"; }; done
it0=$(sed -nE 's/^ exiting program at iteration ([0-9]+).*/\1/p' sig0.txt)
it1=$(sed -nE 's/^ exiting program at iteration ([0-9]+).*/\1/p' sig1.txt)
[[ -n $it0 && $it0 == "$it1" ]] || fail "ranks stopped at different iterations ($it0, $it1)"
[[ $(cat sig/latest_checkpointed_iteration.txt) == "$it0" ]] || fail "SIGTERM checkpoint"
[[ -s sig/iter_$(printf %07d "$it0")/shard_1_of_2.bin ]] || fail "SIGTERM shard of rank 1"

# Refusals: a rank with another --hidden-size (named), a rank that never comes (named, with the
# address), a global batch that does not divide.
mp=$(free_port)
"$GT" "${tiny[@]}" --train-iters 2 --rank 0 --world-size 2 --master-addr 127.0.0.1 \
  --master-port "$mp" --distributed-timeout-minutes 0.5 > h0.txt 2> h0.err & p0=$!
set +e
"$GT" "${tiny[@]}" --train-iters 2 --hidden-size 32 --rank 1 --world-size 2 \
  --master-addr 127.0.0.1 --master-port "$mp" --distributed-timeout-minutes 0.5 > h1.txt 2> h1.err
rc1=$?; wait $p0; rc0=$?
set -e
[[ $rc1 != 0 && $rc0 != 0 ]] || fail "a rank with another --hidden-size was not refused ($rc0, $rc1)"
grep -q 'hidden-size' h1.err h0.err || { cat h0.err h1.err; fail "refusal does not name --hidden-size"; }
mp=$(free_port)
set +e
"$GT" "${tiny[@]}" --train-iters 2 --rank 0 --world-size 3 --master-addr 127.0.0.1 \
  --master-port "$mp" --distributed-timeout-minutes 0.05 > m.txt 2> m.err
rc=$?
set -e
[[ $rc == 1 ]] || { cat m.err; fail "missing ranks: exit $rc"; }
grep -q "127.0.0.1:$mp" m.err && grep -q 'ranks 1, 2' m.err || { cat m.err; fail "missing ranks not named"; }
set +e
"$GT" "${tiny[@]}" --train-iters 2 --global-batch-size 6 --rank 0 --world-size 4 \
  --master-addr 127.0.0.1 --master-port 1 > g.txt 2> g.err
rc=$?
set -e
[[ $rc == 2 ]] && grep -q 'global batch size (6) is not divisible by micro batch size (2) times data parallel size (4)' g.err \
  || { cat g.err; fail "global batch check"; }

# --timing-log-level: Megatron's timers, min and max over the ranks, printed by the last rank at
# each log interval; a level outside 0-2 is a usage error.
ranks 2 tm- "${tiny[@]}" --train-iters 4 --log-interval 2 --timing-log-level 0
[[ $(grep -c '^(min, max) time across ranks (ms):$' tm-1.txt) == 2 ]] || { cat tm-1.txt; fail "no timers"; }
python3 - tm-1.txt <<'PY' || fail "timer lines"
import re, sys
rows = re.findall(r"^    (forward-backward|optimizer) \.+: \(([0-9.]+), ([0-9.]+)\)$", open(sys.argv[1]).read(), re.M)
assert [r[0] for r in rows] == ["forward-backward", "optimizer"] * 2, rows
assert all(0 < float(lo) <= float(hi) for _, lo, hi in rows), rows
PY
! grep -q 'time across ranks' tm-0.txt || fail "rank 0 printed the timers"
set +e; "$GT" "${tiny[@]}" --train-iters 2 --timing-log-level 3 > /dev/null 2> tl.err; rc=$?; set -e
[[ $rc == 2 ]] && grep -q -- '--timing-log-level must be 0, 1 or 2' tl.err || fail "--timing-log-level 3: exit $rc"

# Faults end the job within --distributed-timeout-minutes, the last line naming the rank: one
# killed (died), one stopped (late), and a rendezvous nobody serves (the address).
fault=("${tiny[@]}" --train-iters 1000000 --distributed-timeout-minutes 0.1)
start_ranks() {  # D prefix: starts D ranks of the endless run, pids in $pids
  local mp; mp=$(free_port); pids=()
  for ((r = 0; r < $1; r++)); do
    "$GT" "${fault[@]}" --rank $r --world-size "$1" --master-addr 127.0.0.1 --master-port "$mp" \
      > "$2$r.txt" 2> "$2$r.err" & pids+=($!)
  done
  for _ in $(seq 600); do grep -Eq '^ iteration +[0-9]+/' "$2$(($1 - 1)).txt" 2>/dev/null && break; sleep 0.1; done
}
start_ranks 3 kill
kill -KILL "${pids[1]}"
for r in 0 2; do
  set +e; wait "${pids[$r]}"; rc=$?; set -e
  [[ $rc == 1 ]] || fail "rank $r exit $rc after rank 1 was killed"
  [[ $(tail -n 1 "kill$r.err") =~ ^gpt-train:\ rank\ 1\ \(host\ .*\):\ died$ ]] \
    || { cat "kill$r.err"; fail "rank $r did not name the dead rank"; }
done
start_ranks 2 stop
kill -STOP "${pids[1]}"
set +e; wait "${pids[0]}"; rc=$?; set -e
kill -KILL "${pids[1]}"; kill -CONT "${pids[1]}" 2> /dev/null || true
[[ $rc == 1 ]] || fail "exit $rc with a stopped rank"
[[ $(tail -n 1 stop0.err) =~ ^gpt-train:\ rank\ 1\ \(host\ .*\):\ did\ not\ reach\ .*\ \#[0-9]+\ within\ 6\ s$ ]] \
  || { cat stop0.err; fail "the stopped rank was not named as late"; }
mp=$(free_port)
set +e
"$GT" "${tiny[@]}" --train-iters 2 --rank 1 --world-size 2 --master-addr 127.0.0.1 \
  --master-port "$mp" --distributed-timeout-minutes 0.05 > w.txt 2> w.err
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "127.0.0.1:$mp" w.err || { cat w.err; fail "unreachable rendezvous: exit $rc"; }

# A checkpoint of the single-file format (tests/data/checkpoints/README.md) resumes.
if [[ -n ${ROOT:-} ]]; then
  old=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 2
       --global-batch-size 4 --train-iters 6 --lr 1e-2 --mock-data --mock-data-samples 16
       --vocab-size 32 --log-interval 1 --eval-iters 0 --cpu-threads 1)
  cp -r "$ROOT/tests/data/checkpoints/gptckpt1" .
  "$GT" "${old[@]}" > straight.txt
  "$GT" "${old[@]}" --load gptckpt1 > resumed.txt
  grep -q 'loaded checkpoint from gptckpt1 at iteration 3' resumed.txt || fail "GPTCKPT1 load"
  diff <(losses straight.txt | tail -3) <(losses resumed.txt) || fail "GPTCKPT1 resume differs"
fi
