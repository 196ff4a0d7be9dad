# End-to-end checks of gpt-train (sourced by tests/e2e/run.sh inside a scratch directory; also
# runnable alone: BIN=build/bin bash tests/e2e/test_gpt_train.sh). Exits non-zero on failure.
# Log lines are checked with the regexes Megatron log parsers use.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "test_gpt_train: $*" >&2; exit 1; }

tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
      --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3
      --lr-decay-style cosine --lr-warmup-iters 2 --mock-data --mock-data-samples 8
      --vocab-size 64 --log-interval 5 --cpu-threads 2)

# --help shows a worked example; --version the suite version
# (captured first: `"$GT" --help | grep -q` races under pipefail, see stdout_matches in lib.sh)
help=$("$GT" --help); version=$("$GT" --version)
[[ $help == *"--mock-data --vocab-size"* ]] || fail "--help lacks the example"
[[ $version =~ ^gpt-train\ [0-9]+\.[0-9]+ ]] || fail "--version"

# a training run: Megatron iteration, memory and validation lines; metrics; checkpoint; export
"$GT" "${tiny[@]}" --train-iters 20 --eval-interval 10 --eval-iters 1 --save ck \
      --save-interval 10 --metrics-file m.jsonl --export-hf hf > log.txt
iter_re='^ iteration +([0-9]+)/ +([0-9]+) \| consumed samples: +([0-9]+) \| elapsed time per iteration \(ms\): ([0-9.]+) \| learning rate: ([0-9.]+E[+-][0-9]+) \| global batch size: +([0-9]+) \| lm loss: ([0-9.]+E[+-][0-9]+) \| loss scale: ([0-9.]+) \| grad norm: ([0-9.]+) \| number of skipped iterations: +([0-9]+) \| number of nan iterations: +([0-9]+) \|'
[[ $(grep -Ec "$iter_re" log.txt) == 4 ]] || { cat log.txt; fail "expected 4 iteration lines"; }
grep -Eq 'tokens per second: [0-9.]+ \| TFLOP/s: [0-9.]+ \| MFU: ' log.txt || fail "throughput fields"
grep -Eq '^\[Rank 0\] \(after 5 iterations\) memory \(MB\) \| allocated: [0-9.]+ \| max allocated: [0-9.]+ \| reserved: [0-9.]+ \| max reserved: [0-9.]+' log.txt \
  || fail "memory line"
grep -Eq '^ validation loss at iteration 10 \| lm loss value: [0-9.]+E[+-][0-9]+ \| lm loss PPL: [0-9.]+E[+-][0-9]+ \|' log.txt \
  || fail "validation line"
grep -q 'validation loss at the end of training for val data' log.txt || fail "final validation"
first=$(grep -E "$iter_re" log.txt | head -1 | sed -E 's/.*lm loss: ([0-9.E+-]+) .*/\1/')
last=$(grep -E "$iter_re" log.txt | tail -1 | sed -E 's/.*lm loss: ([0-9.E+-]+) .*/\1/')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss did not fall ($first -> $last)"
[[ $(grep -c '"type":"train"' m.jsonl) == 4 ]] || fail "metrics file"
[[ $(cat ck/latest_checkpointed_iteration.txt) == 20 ]] || fail "latest_checkpointed_iteration.txt"
[[ -s ck/iter_0000010/shard_0_of_1.bin && -s ck/iter_0000020/shard_0_of_1.bin && -s ck/iter_0000020/index.txt ]] || fail "checkpoints"
grep -q '"model_type": "gpt2"' hf/config.json || fail "config.json"
[[ -s hf/model.safetensors ]] || fail "model.safetensors"

# resume: 10 + 10 gives the losses of the straight run
"$GT" "${tiny[@]}" --train-iters 20 --save ck2 --exit-interval 10 > a.txt
grep -q 'exiting program at iteration 10' a.txt || fail "--exit-interval"
"$GT" "${tiny[@]}" --train-iters 20 --load ck2 > b.txt
diff <(grep -E "$iter_re" log.txt | sed -E 's/.*(lm loss: [^|]*).*/\1/') \
     <(grep -hE "$iter_re" a.txt b.txt | sed -E 's/.*(lm loss: [^|]*).*/\1/') || fail "resume differs"

# start from the exported model
"$GT" "${tiny[@]}" --train-iters 3 --init-from-hf hf > c.txt || fail "--init-from-hf"

# SIGTERM saves and exits cleanly
"$GT" "${tiny[@]}" --train-iters 100000 --save ck3 > d.txt &
pid=$!
# (up to 60 s for the first log line: a loaded 2-core CI machine can be slow to get there)
for _ in $(seq 600); do grep -q 'iteration' d.txt 2>/dev/null && break; sleep 0.1; done
grep -q 'iteration' d.txt || { kill -KILL "$pid"; fail "no iteration line within 60 s before SIGTERM"; }
kill -TERM "$pid"
wait "$pid" || fail "SIGTERM exit status"
grep -q 'exiting program at iteration' d.txt || fail "SIGTERM did not save and exit"
[[ -s ck3/latest_checkpointed_iteration.txt ]] || fail "SIGTERM checkpoint"

# real data: the bundled Megatron dataset, GPT-2 vocabulary; index maps built and cached
if [[ -n ${ROOT:-} && -f $ROOT/tests/data/golden/megatron/fortunes-en_text_document.idx ]]; then
  cp "$ROOT"/tests/data/golden/megatron/fortunes-en_text_document.{bin,idx} .
  "$GT" --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 \
        --micro-batch-size 1 --global-batch-size 2 --train-iters 3 --lr 1e-3 --log-interval 1 \
        --data-path fortunes-en_text_document --split 969,30,1 --eval-iters 0 --cpu-threads 2 \
        --vocab-file "$ROOT/data/gpt2/vocab.json" --merge-file "$ROOT/data/gpt2/merges.txt" > r.txt
  [[ $(grep -Ec "$iter_re" r.txt) == 3 ]] || { cat r.txt; fail "real-data run"; }
  grep -q 'padded vocab (size: 50257) with 47 dummy tokens (new size: 50304)' r.txt || fail "vocab padding line"
  [[ -f fortunes-en_text_document_train_indexmap_6ns_32sl_1234s_shuffle_idx.npy ]] || fail "index map cache"
fi

# bad input: one clear error, exit 2 (usage) or 1 (data), nothing trained
expect_error() {  # code, needle, args...
  local code=$1 needle=$2; shift 2
  set +e; "$GT" "$@" > out.txt 2> err.txt; local rc=$?; set -e
  [[ $rc == "$code" ]] || { cat err.txt; fail "exit $rc (wanted $code) for: $*"; }
  grep -q -- "$needle" err.txt || { cat err.txt; fail "message lacks '$needle'"; }
  ! grep -q 'iteration ' out.txt || fail "trained despite the error: $*"
}
expect_error 2 "--max-position-embeddings" "${tiny[@]}" --train-iters 4 --max-position-embeddings 8
expect_error 2 "is not divisible by micro batch size" "${tiny[@]}" --train-iters 4 --micro-batch-size 3
expect_error 1 "checkpoint was saved for another model shape" "${tiny[@]}" --train-iters 30 \
  --load ck --num-layers 3
expect_error 1 "vocab file not found" "${tiny[@]}" --train-iters 4 --vocab-file missing.json
expect_error 1 "dataset not found" --num-layers 1 --hidden-size 32 --num-attention-heads 2 \
  --seq-length 16 --train-iters 4 --lr 1e-3 --vocab-size 64 --data-path nowhere
expect_error 2 "--attention-dropout" "${tiny[@]}" --train-iters 4 --attention-dropout 0.1
echo "test_gpt_train: ok"
