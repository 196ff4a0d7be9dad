# Data-parallel gpt-train as `srun -n 2` and `srun -n 3` steps on the CPU backend: each process finds
# its rank, the world size and the rendezvous address from the variables srun sets (nothing is
# passed by hand), and the losses equal those of one process with the same global batch (6 samples:
# 6, 3 or 2 micro-batches of one sample per rank).
make_dataset
args=(--device cpu --cpu-threads 1 --num-layers 1 --hidden-size 32 --num-attention-heads 2
      --seq-length 32 --max-position-embeddings 32 --micro-batch-size 1 --global-batch-size 6
      --train-iters 12 --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2
      --data-path data/corpus_text_document --vocab-file bpe/vocab.json --merge-file bpe/merges.txt
      --split 949,50,1 --log-interval 1 --eval-iters 0)
# "iteration loss" lines, from the first task's log that has iteration lines.
iteration_losses() {
  local f out
  for f in "$@"; do
    out=$(sed -n 's/^ *iteration *\([0-9]*\)\/.*lm loss: \([^ ]*\).*/\1 \2/p' "$f")
    [[ -n $out ]] && { echo "$out"; return; }
  done
}
for n in 1 2 3; do
  srun -n "$n" --cpus-per-task=1 --output="run$n-%t.log" "$BIN/gpt-train" "${args[@]}" \
    || { tail -n 5 run"$n"-*.log; fail "srun -n $n gpt-train"; }
  iteration_losses run"$n"-*.log > losses-$n.txt
  [[ $(wc -l < losses-$n.txt) == 12 ]] || { cat run"$n"-*.log; fail "-n $n: not one loss line per iteration"; }
  if ((n > 1)); then
    grep -Eqi "data-parallel size:? *$n\b|world size:? *$n\b" run"$n"-*.log \
      || { head -n 20 run"$n"-0.log; fail "-n $n: gpt-train did not run as $n ranks"; }
  fi
done
# The one-process and n-process sums of the 6 micro-batch gradients differ in their order of
# addition, so the losses agree to float rounding, not bit for bit.
for n in 2 3; do
  python3 - losses-1.txt losses-$n.txt <<'PY' || fail "srun -n $n: losses differ from one process"
import sys
a = [l.split() for l in open(sys.argv[1])]
b = [l.split() for l in open(sys.argv[2])]
for (i, x), (j, y) in zip(a, b):
    if i != j or abs(float(x) - float(y)) > 1e-5 * abs(float(x)):
        sys.exit(f"iteration {i}: {x} vs {y}")
PY
done
