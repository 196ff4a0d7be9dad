# gpt-train with tensor and pipeline parallelism on the CPU backend (TCP communicator): fp32 losses
# and gradient norms of every layout against one process, the layout lines, and the usage errors
# (exit 2, naming the flags) before any rank starts. Sourced by tests/e2e/run.sh in a scratch
# directory.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "test_gpt_train_tp_pp: $*" >&2; exit 1; }

# --vocab-size 300: padded to 384 at T=1 and 512 at T=2; the losses must not notice.
tiny=(--num-layers 4 --hidden-size 16 --num-attention-heads 2 --seq-length 8
      --micro-batch-size 2 --global-batch-size 8 --lr 1e-2 --mock-data --mock-data-samples 64
      --vocab-size 300 --log-interval 1 --eval-iters 1 --eval-interval 5 --train-iters 10
      --clip-grad 0.5 --cpu-threads 1)
"$GT" "${tiny[@]}" > one.txt

same() {  # name logfile [reference]: 10 losses and norms, and the validation losses, within 1e-5
  python3 - "${3:-one.txt}" "$2" <<'PY' || fail "$1: losses differ from one process"
import re, sys
def read(f):
    t = open(f).read()
    return ([float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", t)],
            [float(x) for x in re.findall(r"grad norm: ([0-9.]+)", t)],
            [float(x) for x in re.findall(r"lm loss value: ([0-9.E+-]+)", t)])
a, b = read(sys.argv[1]), read(sys.argv[2])
assert len(a[0]) == 10 and len(a[2]) == 2, a
for x, y in zip(a, b):
    assert len(x) == len(y) and all(abs(p - q) <= 1e-5 * abs(p) for p, q in zip(x, y)), (x, y)
PY
}
run() {  # name nproc args...
  local name=$1 n=$2; shift 2
  "$GT" "${tiny[@]}" --nproc-per-node "$n" "$@" > "$name.txt" 2> "$name.err" \
    || { cat "$name.err"; fail "$name failed"; }
  same "$name" "$name.txt"
}
run t2 2 --tensor-model-parallel-size 2
run t2sp 2 --tensor-model-parallel-size 2 --sequence-parallel
run p2 2 --pipeline-model-parallel-size 2
run p2uneven 2 --pipeline-model-parallel-size 2 --pipeline-partition 1-3
run p3ends 3 --pipeline-model-parallel-size 3 --pipeline-partition 0-4-0
run t2p2 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --balance 3-1
# Data parallelism over each stage's DP group, with the distributed optimizer.
run p2d2 4 --pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1 \
  --use-distributed-optimizer
grep -qx '> initializing data parallel with size 2' p2d2.txt || fail "DP size line of P=2 x D=2"

# The interleaved schedule: 6 layers over 3 stages of 2 chunks (3 micro-batches, a multiple of P),
# by Megatron's two spellings.
six=(--num-layers 6 --global-batch-size 6)
"$GT" "${tiny[@]}" "${six[@]}" > one6.txt
for spelling in "--num-layers-per-virtual-pipeline-stage 1" \
                "--pipeline-model-parallel-layout Et|t|t|t|t|tL"; do
  read -r flag value <<< "$spelling"
  "$GT" "${tiny[@]}" "${six[@]}" --nproc-per-node 3 --pipeline-model-parallel-size 3 \
    "$flag" "$value" > vp.txt 2> vp.err || { cat vp.err; fail "interleaved ($flag) failed"; }
  same "interleaved ($flag)" vp.txt one6.txt
  grep -q '^> interleaved schedule: 2 model chunks per stage' vp.txt || fail "interleaved line"
done
# The interleaved schedule with the distributed optimizer: P=3 x V=2 x D=2 (each chunk's buffer
# sharded over the data-parallel group, one clipping decision for all chunks).
twelve=(--num-layers 6 --global-batch-size 12)
"$GT" "${tiny[@]}" "${twelve[@]}" > one12.txt
"$GT" "${tiny[@]}" "${twelve[@]}" --nproc-per-node 6 --pipeline-model-parallel-size 3 \
  --num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer > vpd.txt 2> vpd.err \
  || { cat vpd.err; fail "interleaved with the distributed optimizer failed"; }
same "interleaved P=3 x D=2 with the distributed optimizer" vpd.txt one12.txt
grep -q 'distributed optimizer (AdamW state sharded' vpd.txt || fail "distributed optimizer line"

grep -qx '> initializing tensor model parallel with size 2' t2p2.txt || fail "TP size line"
grep -qx '> initializing pipeline model parallel with size 2' t2p2.txt || fail "PP size line"
grep -qx '> initializing data parallel with size 1' t2p2.txt || fail "DP size line"
grep -qx '> transformer layers per pipeline stage: 3-1' t2p2.txt || fail "stage line"
grep -qx '> transformer layers per pipeline stage: 0-4-0' p3ends.txt || fail "stage line 0-4-0"
# The per-stage report after every logging interval (the last rank's): one line per stage and
# the bubble's (tests/e2e/test_stage_report.sh checks its values).
grep -q '^ \[pipeline stage 0\] after iteration 1: layers none (0, embedding) | parameters: [0-9]* | max allocated (MB): [0-9.]* | forward (ms per micro-batch): [0-9.]* | backward (ms per micro-batch): [0-9.]*' p3ends.txt \
  || fail "stage 0's report"
grep -q '^ \[pipeline stage 1\] after iteration 1: layers 0-3 (4) | ' p3ends.txt || fail "stage 1's report"
grep -q '^ \[pipeline stage 2\] after iteration 1: layers none (0, output layer and loss) | ' p3ends.txt \
  || fail "stage 2's report"
[[ $(grep -c '^ \[pipeline\] after iteration [0-9]*: measured bubble: [0-9.]*%' p3ends.txt) == 10 ]] \
  || fail "bubble lines"
grep -q '^ > rank 3 of 4: .*, data-parallel index 0 (tp 1, dp 0, pp 1)$' t2p2.txt \
  || fail "rank 3's coordinates"

# Bad layouts: one line naming the flags, exit 2, before any rank starts.
refused() {  # message args...
  local want=$1; shift
  set +e
  "$GT" "${tiny[@]}" "$@" > out.txt 2> err.txt
  local rc=$?
  set -e
  [[ $rc == 2 ]] || fail "exit $rc for $* (want 2)"
  grep -qF "gpt-train: $want" err.txt || { cat err.txt; fail "message for $*"; }
  ! grep -q 'initializing' out.txt || fail "work started for $*"
}
refused "--tensor-model-parallel-size 3 does not divide --num-attention-heads 2" \
  --tensor-model-parallel-size 3 --nproc-per-node 3
refused "--pipeline-partition sums to 3, --num-layers is 4" \
  --pipeline-model-parallel-size 2 --pipeline-partition 1-2 --nproc-per-node 2
refused "--pipeline-model-parallel-size 7 is more than --num-layers 4 + 2" \
  --pipeline-model-parallel-size 7 --pipeline-partition 0-1-1-1-1-0-0
refused "world size 3 is not a multiple of --tensor-model-parallel-size 1 x --pipeline-model-parallel-size 2 (= 2)" \
  --pipeline-model-parallel-size 2 --nproc-per-node 3
refused "--num-layers-per-virtual-pipeline-stage needs equal stages" \
  --pipeline-model-parallel-size 3 --pipeline-partition 1-2-1 --num-layers-per-virtual-pipeline-stage 1
refused "number of microbatches (4) is not divisible by pipeline-model-parallel-size (3) when using interleaved schedule" \
  --num-layers 6 --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1 --nproc-per-node 3

# A stopped tensor-parallel rank is named as late, within --distributed-timeout-minutes, for the
# collective it did not reach: one of the tensor-parallel group's, or the world's vote on stopping
# that ends each step, depending on where in the step it stopped.
mp=$(free_port); pids=()
for r in 0 1; do
  "$GT" "${tiny[@]}" --train-iters 1000000 --eval-iters 0 --distributed-timeout-minutes 0.1 \
    --tensor-model-parallel-size 2 --rank $r --world-size 2 --master-addr 127.0.0.1 \
    --master-port "$mp" > "stop$r.txt" 2> "stop$r.err" & pids+=($!)
done
for _ in $(seq 600); do grep -Eq '^ iteration +[0-9]+/' stop1.txt 2>/dev/null && break; sleep 0.1; done
kill -STOP "${pids[1]}"
set +e; wait "${pids[0]}"; rc=$?; set -e
kill -KILL "${pids[1]}"; kill -CONT "${pids[1]}" 2> /dev/null || true
[[ $rc == 1 ]] || fail "exit $rc with a stopped tensor-parallel rank"
[[ $(tail -n 1 stop0.err) =~ ^gpt-train:\ rank\ 1\ \(host\ .*\):\ did\ not\ reach\ (tensor-parallel\ group\ )?[a-z_]+\ \#[0-9]+\ within\ 6\ s$ ]] \
  || { cat stop0.err; fail "the stopped tensor-parallel rank was not named as late"; }
