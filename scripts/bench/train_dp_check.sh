#!/usr/bin/env bash
# The equivalence checks of data-parallel gpt-train on one host, in fp32, one PASS/FAIL line per
# pair (run by scripts/bench/train_dp_vs_torch.sh --part check, or directly):
#   - DP=2 (accumulation 2) and DP=4 (accumulation 1) against DP=1 (accumulation 4), the same
#     global batch, 20 iterations: losses within 1e-5 relative; every rank's weights identical
#     after each step (--log-params-hash);
#   - --use-distributed-optimizer against plain DP at DP=2 and 4 with --clip-grad 0.1 (clipping
#     active: the grad norms are above 0.1): losses within 1e-6 relative;
#   - the launchers at the largest DP: torchrun --standalone, torchrun with an explicit
#     --master-port, and srun's variables set by hand (SLURM_STEP_ID=0, SLURM_PROCID,
#     SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_NODELIST=localhost, SLURM_JOB_ID: port
#     61000 + SLURM_JOB_ID % 4536) give --nproc-per-node's loss sequence exactly.
# The model: 4 layers x 256, 4 heads, seq 256, vocabulary 8192, micro-batch 4 (global batch 16).
# DEVICE=cpu runs the same checks on the CPU backend with tiny shapes (2 x 32, seq 32, one thread
# per rank), where no GPU is: a dry run of this script's logic. Exits 1 if any check failed.
#   BIN=build/bin bash scripts/bench/train_dp_check.sh
#   DEVICE=cpu BIN=build/bin bash scripts/bench/train_dp_check.sh
# Env: BIN (gpt-train's folder), PYTHON (its torchrun is used; else torchrun from PATH; without
# one the torchrun checks are skipped), DEVICE (cuda | cpu), GPUS (the largest DP, default every
# visible GPU up to 4; 4 on the CPU).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
GT=$BIN/gpt-train
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-$(dirname "$(command -v "$PY" || echo /nonexistent/python3)")/torchrun}
[[ -x $TORCHRUN ]] || TORCHRUN=$(command -v torchrun || true)
# NVLink multicast stays off on the shared hosts (NCCL, PyTorch and NVSHMEM spellings).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[[ -x $GT ]] || { echo "train_dp_check.sh: no $GT (make first)" >&2; exit 1; }

case $DEVICE in
  cuda)
    echo "cards:"
    nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader | sed 's/^/  /'
    visible=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
    gpus=${GPUS:-$((visible < 4 ? visible : 4))}
    shape=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256
           --max-position-embeddings 256 --vocab-size 8192)
    mbs=4 ;;
  cpu)
    gpus=${GPUS:-4}
    shape=(--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32
           --max-position-embeddings 32 --vocab-size 512 --cpu-threads 1)
    mbs=2 ;;
  *) echo "train_dp_check.sh: DEVICE must be cuda or cpu, not '$DEVICE'" >&2; exit 2 ;;
esac
((gpus >= 2)) || { echo "train_dp_check.sh: needs 2 GPUs or more ($gpus)" >&2; exit 1; }
ns=$(for n in 2 4; do if ((n <= gpus)); then echo $n; fi; done)
nmax=$(echo "$ns" | tail -1)
# fp32 (no --bf16): the global batch of 4 micro-batches, split over DP ranks x accumulation.
common=(--device "$DEVICE" "${shape[@]}" --micro-batch-size "$mbs" --global-batch-size $((4 * mbs))
        --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2 --weight-decay 0.1
        --adam-beta2 0.95 --mock-data --log-interval 1 --eval-iters 0 --train-iters 20
        --log-params-hash)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "device $DEVICE, DP up to $nmax, gpt-train $("$GT" --version | head -1)"

passed=0 failed=0
result() {  # ok(0|1) what detail
  if (($1)); then echo "PASS  $2 ($3)"; passed=$((passed + 1)); else echo "FAIL  $2 ($3)"; failed=$((failed + 1)); fi
}
# run LOG CMD...: the command's stdout and stderr in LOG; on failure a FAIL line and its tail.
run() {
  local log=$1; shift
  "$@" > "$log" 2>&1 && return 0
  result 0 "$log: exit $?" "$*"
  tail -15 "$log" | sed 's/^/      /'
  return 1
}
losses() { grep -hoE 'lm loss: [0-9.E+-]+' "$1" | awk '{ print $3 }'; }
# close A B REL WHAT: the loss sequences of logs A and B, as many and each within REL relative.
close() {
  local out ok=0
  out=$(paste <(losses "$1") <(losses "$2") | awk -v r="$3" '
    NF == 2 { n++; d = $1 - $2; if (d < 0) d = -d; rel = d / ($1 < 0 ? -$1 : $1); if (rel > m) m = rel; if (rel > r) bad++ }
    NF != 2 { odd = 1 }
    END { printf "%d losses, max relative difference %.2e, tolerance %g", n, m, r
          if (odd) printf ", different lengths"; exit (bad || odd || n < 20) }') || ok=1
  result $((ok == 0)) "$4" "$out"
}
# same_weights LOG WHAT: every rank printed the same parameter hash at each iteration.
same_weights() {
  local out ok=0
  out=$(grep -hoE 'params hash: rank [0-9]+ iteration [0-9]+ [0-9a-f]+' "$1" | awk '
    { ranks[$4] = 1; if (($6 in h) && h[$6] != $7) bad++; h[$6] = $7; n++ }
    END { k = 0; for (r in ranks) k++; m = 0; for (i in h) m++
          printf "%d ranks, %d iterations, %d differing", k, m, bad; exit (bad || n == 0) }') || ok=1
  result $((ok == 0)) "$2" "$out"
}
# A free TCP port at or above $1 (the kernel's choice when $1 is 0).
free_port() {
  python3 - "$1" << 'PY'
import socket, sys
lo = int(sys.argv[1])
for p in ([0] if lo == 0 else range(lo, 65536)):
    s = socket.socket()
    try:
        s.bind(("", p)); print(s.getsockname()[1]); break
    except OSError:
        pass
    finally:
        s.close()
PY
}

# DP=1 with 4 accumulation steps: the reference of every pair.
run one.txt "$GT" "${common[@]}" || true
for n in $ns; do
  if run dp$n.txt "$GT" "${common[@]}" --nproc-per-node $n; then
    close one.txt dp$n.txt 1e-5 "fp32 DP=$n (accumulation $((4 / n))) against DP=1 (accumulation 4)"
    same_weights dp$n.txt "DP=$n: every rank's weights identical after each step"
  fi
  run plain$n.txt "$GT" "${common[@]}" --nproc-per-node $n --clip-grad 0.1 || continue
  run zero$n.txt "$GT" "${common[@]}" --nproc-per-node $n --clip-grad 0.1 --use-distributed-optimizer ||
    continue
  norms=$(grep -hoE 'grad norm: [0-9.]+' plain$n.txt | awk '$3 > 0.1 { k++ } END { printf "%d of %d", k, NR }')
  close plain$n.txt zero$n.txt 1e-6 \
    "DP=$n --use-distributed-optimizer against plain DP, --clip-grad 0.1 (grad norm > 0.1 at $norms iterations)"
  same_weights zero$n.txt "DP=$n --use-distributed-optimizer: every rank's weights identical after each step"
done

# The launchers at the largest DP, against --nproc-per-node (dp$nmax.txt).
same_seq() {  # LOG WHAT: LOG's losses are dp$nmax.txt's, string for string
  local a b
  a=$(losses dp$nmax.txt) b=$(losses "$1")
  local ok=0
  [[ -n $a && $a == "$b" ]] && ok=1
  result $ok "$2" \
    "$(echo "$b" | grep -c .) losses against $(echo "$a" | grep -c .) of --nproc-per-node $nmax"
}
if [[ -n $TORCHRUN && -x $TORCHRUN ]]; then
  run tr-standalone.txt "$TORCHRUN" --standalone --nproc_per_node $nmax --no_python "$GT" "${common[@]}" &&
    same_seq tr-standalone.txt "torchrun --standalone --nproc-per-node $nmax: the same loss sequence"
  port=$(free_port 0)
  run tr-port.txt "$TORCHRUN" --nnodes 1 --nproc_per_node $nmax --master_addr 127.0.0.1 \
      --master_port "$port" --no_python "$GT" "${common[@]}" &&
    same_seq tr-port.txt "torchrun --master-port $port --nproc-per-node $nmax: the same loss sequence"
else
  echo "SKIP  torchrun --standalone and --master-port (no torchrun beside $PY or on PATH)"
fi
# srun's variables by hand: the job id chosen so that 61000 + id % 4536 is a free port.
port=$(free_port 61000)
job=$((4536 * 7 + port - 61000))
pids=()
for ((r = 0; r < nmax; r++)); do
  env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT \
    SLURM_JOB_ID=$job SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_LOCALID=$r SLURM_STEP_NUM_TASKS=$nmax \
    SLURM_NTASKS=$nmax SLURM_STEP_NODELIST=localhost "$GT" "${common[@]}" > srun$r.txt 2>&1 &
  pids+=($!)
done
srun_ok=1
for ((r = 0; r < nmax; r++)); do
  wait "${pids[$r]}" || { srun_ok=0; echo "      rank $r:"; tail -5 srun$r.txt | sed 's/^/      /'; }
done
if ((srun_ok)); then
  same_seq srun$((nmax - 1)).txt "srun's variables by hand (SLURM_JOB_ID=$job: port $port), $nmax ranks: the same loss sequence"
else
  result 0 "srun's variables by hand, $nmax ranks" "a rank failed"
fi

echo "check: $passed passed, $failed failed"
((failed == 0))
