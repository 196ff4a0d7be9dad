#!/usr/bin/env bash
# End-to-end GPU runs of gpt-train (make test-gpu runs this after build/bin/gpu-tests).
#   BIN=build/bin bash tests/gpu/run.sh
# Checks, on --device cuda: a tiny run's losses fall and match the cpu backend's first losses;
# the same run twice prints the same losses (fp32 and --bf16, its weight gradients in bf16 or
# fp32), and so does --bf16 without CUDA graphs and GEMM autotuning; resume 10+10 equals 20
# straight; --recompute-activations changes no loss; attention dropout: the path printed,
# repeatable, resume exact (--bf16 and --fp16), the cpu backend's masks; --flash-tiles named in
# the path, repeatable, close to the default tiles. Then a GPT-2 124M shape with --bf16 for
# throughput.
# Exits non-zero on the first failure.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "tests/gpu/run.sh: FAIL: $*" >&2; exit 1; }
[[ -x $GT ]] || fail "$GT not built"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

iter_re='^ iteration +([0-9]+)/ +([0-9]+) \| .*\| lm loss: ([0-9.]+E[+-][0-9]+) \|'
losses() { grep -E "$iter_re" "$@" | sed -E 's/.*lm loss: ([0-9.E+-]+) .*/\1/'; }

tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64
      --micro-batch-size 4 --global-batch-size 8 --lr 3e-3 --min-lr 3e-4
      --lr-decay-style cosine --lr-warmup-iters 2 --lr-decay-iters 20 --mock-data --mock-data-samples 16
      --vocab-size 512 --log-interval 1 --eval-iters 0)

"$GT" "${tiny[@]}" --train-iters 20 --device cuda > cuda.txt 2>&1 || { cat cuda.txt; fail "cuda run"; }
[[ $(losses cuda.txt | wc -l) == 20 ]] || { cat cuda.txt; fail "expected 20 iteration lines"; }
first=$(losses cuda.txt | head -1); last=$(losses cuda.txt | tail -1)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "cuda loss did not fall ($first -> $last)"

# fp32 cuda against the cpu reference: the first 5 iterations' losses within 1e-4 relative
# (--lr-decay-iters keeps the schedule independent of --train-iters)
"$GT" "${tiny[@]}" --train-iters 5 --device cpu > cpu.txt 2>&1 || { cat cpu.txt; fail "cpu run"; }
paste <(losses cpu.txt) <(losses cuda.txt | head -5) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * $1) { print "cpu " $1 " cuda " $2; bad = 1 } }
  END { exit bad }' || fail "cuda losses differ from cpu"

# determinism: the same run again, fp32 and bf16
"$GT" "${tiny[@]}" --train-iters 20 --device cuda > cuda2.txt 2>&1 || fail "cuda rerun"
diff <(losses cuda.txt) <(losses cuda2.txt) || fail "fp32 cuda run not deterministic"
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --bf16 > bf16.txt 2>&1 || { cat bf16.txt; fail "bf16 run"; }
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --bf16 > bf16b.txt 2>&1 || fail "bf16 rerun"
diff <(losses bf16.txt) <(losses bf16b.txt) || fail "bf16 cuda run not deterministic"
# the kernel flags reach the backend: without graph replay and GEMM autotuning, the same bits
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --bf16 --cuda-graphs off --gemm-autotune off \
  > bf16plain.txt 2>&1 || { cat bf16plain.txt; fail "bf16 run, --cuda-graphs off --gemm-autotune off"; }
diff <(losses bf16.txt) <(losses bf16plain.txt) || fail "--cuda-graphs off --gemm-autotune off changed the losses"
paste <(losses cuda.txt) <(losses bf16.txt) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 2e-2 * $1) { print "fp32 " $1 " bf16 " $2; bad = 1 } }
  END { exit bad }' || fail "bf16 losses stray more than 2e-2 from fp32"

# --bf16 with one micro-batch per step writes the weight gradients in bf16 (packed); with
# --bf16-weight-grads off they stay fp32: each deterministic, and the two close
one=("${tiny[@]}" --global-batch-size 4 --train-iters 20 --device cuda --bf16)
for wg in on off; do
  "$GT" "${one[@]}" --bf16-weight-grads $wg > wg$wg.txt 2>&1 || { cat wg$wg.txt; fail "bf16 run, weight grads $wg"; }
  "$GT" "${one[@]}" --bf16-weight-grads $wg > wg${wg}b.txt 2>&1 || fail "bf16 rerun, weight grads $wg"
  diff <(losses wg$wg.txt) <(losses wg${wg}b.txt) || fail "--bf16-weight-grads $wg not deterministic"
done
paste <(losses wgon.txt) <(losses wgoff.txt) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-2 * $1) { print "bf16 " $1 " fp32 " $2; bad = 1 } }
  END { exit bad }' || fail "bf16 weight gradients stray more than 1e-2 from fp32 ones"

# --bf16 with the GELU outputs kept (no recompute) or one layer recomputing: each run
# deterministic, and close to the run that recomputes all (the forward's GELU output and the
# recomputed one may round apart)
for keep in 0 1; do
  "$GT" "${tiny[@]}" --train-iters 20 --device cuda --bf16 --recompute-gelu-layers $keep > keep.txt 2>&1 \
    || { cat keep.txt; fail "bf16 run --recompute-gelu-layers $keep"; }
  "$GT" "${tiny[@]}" --train-iters 20 --device cuda --bf16 --recompute-gelu-layers $keep > keep2.txt 2>&1 \
    || fail "bf16 rerun --recompute-gelu-layers $keep"
  diff <(losses keep.txt) <(losses keep2.txt) || fail "--recompute-gelu-layers $keep not deterministic"
  paste <(losses bf16.txt) <(losses keep.txt) | awk '
    { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-2 * $1) { print "all " $1 " kept " $2; bad = 1 } }
    END { exit bad }' || fail "--recompute-gelu-layers $keep strays more than 1e-2 from the default"
done

# recompute: same losses bit for bit
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --recompute-activations > rc.txt 2>&1 \
  || { cat rc.txt; fail "recompute run"; }
diff <(losses cuda.txt) <(losses rc.txt) || fail "--recompute-activations changed the losses"

# resume on cuda: 10 + 10 gives the straight run's losses
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --save ck --exit-interval 10 > a.txt 2>&1 || fail "save run"
"$GT" "${tiny[@]}" --train-iters 20 --device cuda --load ck > b.txt 2>&1 || { cat b.txt; fail "resume run"; }
diff <(losses cuda.txt) <(losses a.txt b.txt) || fail "cuda resume differs from the straight run"

# attention dropout (with hidden dropout) on the flash kernels, head size 128 (the wide ones) and
# 32, --bf16 and --fp16: the attention path printed, losses repeat bit for bit, resume 10 + 10 is
# exact, and the fp32 cuda run's first losses match the cpu backend's (the same masks)
for heads in 1 4; do
  drop=("${tiny[@]}" --hidden-size 128 --num-attention-heads $heads --train-iters 20 --attention-dropout 0.1
        --hidden-dropout 0.1)
  "$GT" "${drop[@]}" --device cuda --bf16 > ad.txt 2>&1 || { cat ad.txt; fail "attention dropout run"; }
  # (head size 128 on an H100/H200: the wgmma kernels, dropout in them)
  grep -Eq "^attention: flash (mma.sync \(bf16|sm90 \(wgmma), head size $((128 / heads))" ad.txt || { cat ad.txt; fail "attention path not printed"; }
  "$GT" "${drop[@]}" --device cuda --bf16 > ad2.txt 2>&1 || fail "attention dropout rerun"
  diff <(losses ad.txt) <(losses ad2.txt) || fail "attention dropout run not deterministic"
  "$GT" "${drop[@]}" --device cuda --bf16 --save adck$heads --exit-interval 10 > ada.txt 2>&1 || fail "attention dropout save run"
  "$GT" "${drop[@]}" --device cuda --bf16 --load adck$heads > adb.txt 2>&1 || { cat adb.txt; fail "attention dropout resume"; }
  diff <(losses ad.txt) <(losses ada.txt adb.txt) || fail "attention dropout resume differs"
  # --fp16 (a static loss scale: no skipped steps): the flash kernels with fp16 operands, the same
  # checks
  "$GT" "${drop[@]}" --device cuda --fp16 --loss-scale 1024 > hf.txt 2>&1 || { cat hf.txt; fail "fp16 attention dropout run"; }
  grep -q "^attention: flash mma.sync (fp16, head size $((128 / heads))" hf.txt || { cat hf.txt; fail "fp16 attention path not printed"; }
  "$GT" "${drop[@]}" --device cuda --fp16 --loss-scale 1024 > hf2.txt 2>&1 || fail "fp16 attention dropout rerun"
  diff <(losses hf.txt) <(losses hf2.txt) || fail "fp16 attention dropout run not deterministic"
  "$GT" "${drop[@]}" --device cuda --fp16 --loss-scale 1024 --save hfck$heads --exit-interval 10 > hfa.txt 2>&1 || fail "fp16 attention dropout save run"
  "$GT" "${drop[@]}" --device cuda --fp16 --loss-scale 1024 --load hfck$heads > hfb.txt 2>&1 || { cat hfb.txt; fail "fp16 attention dropout resume"; }
  diff <(losses hf.txt) <(losses hfa.txt hfb.txt) || fail "fp16 attention dropout resume differs"
  paste <(losses ad.txt) <(losses hf.txt) | awk '
    { d = $1 - $2; if (d < 0) d = -d; if (d > 2e-2 * $1) { print "bf16 " $1 " fp16 " $2; bad = 1 } }
    END { exit bad }' || fail "fp16 attention dropout losses stray more than 2e-2 from bf16"
  [[ $heads == 1 ]] || continue
  # --flash-tiles reaches the wide mma.sync kernels (head size 128, the wgmma ones off): the path
  # names it, each shape deterministic and within 2e-2 of the default's losses
  for tiles in 128x64w8 128x32w4; do
    "$GT" "${drop[@]}" --device cuda --bf16 --sm90-attention off --flash-tiles $tiles > ft.txt 2>&1 || { cat ft.txt; fail "--flash-tiles $tiles run"; }
    grep -q "^attention: flash mma.sync (bf16, head size 128, tiles $tiles" ft.txt || { cat ft.txt; fail "--flash-tiles $tiles not in the attention path"; }
    "$GT" "${drop[@]}" --device cuda --bf16 --sm90-attention off --flash-tiles $tiles > ft2.txt 2>&1 || fail "--flash-tiles $tiles rerun"
    diff <(losses ft.txt) <(losses ft2.txt) || fail "--flash-tiles $tiles not deterministic"
    paste <(losses ad.txt) <(losses ft.txt) | awk '
      { d = $1 - $2; if (d < 0) d = -d; if (d > 2e-2 * $1) { print "default " $1 " " $2; bad = 1 } }
      END { exit bad }' || fail "--flash-tiles $tiles strays more than 2e-2 from the default tiles"
  done
done
"$GT" "${drop[@]}" --train-iters 5 --device cpu > adcpu.txt 2>&1 || { cat adcpu.txt; fail "cpu attention dropout run"; }
"$GT" "${drop[@]}" --train-iters 5 --device cuda > adf.txt 2>&1 || { cat adf.txt; fail "fp32 attention dropout run"; }
grep -q "^attention: fp32 fallback" adf.txt || { cat adf.txt; fail "fp32 attention path not printed"; }
paste <(losses adcpu.txt) <(losses adf.txt) | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * $1) { print "cpu " $1 " cuda " $2; bad = 1 } }
  END { exit bad }' || fail "cuda attention dropout losses differ from cpu"
echo "tests/gpu/run.sh: tiny model checks ok"

# GPT-2 124M shape, bf16: throughput figures (printed, not judged)
gpt2=(--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024
      --max-position-embeddings 1024 --micro-batch-size ${GPT2_MBS:-8} --global-batch-size ${GPT2_MBS:-8}
      --lr 6e-4 --min-lr 6e-5 --lr-decay-style cosine --lr-warmup-iters 2 --mock-data
      --vocab-size 50257 --log-interval 5 --eval-iters 0 --train-iters ${GPT2_ITERS:-20})
for prec in --bf16 ""; do
  "$GT" "${gpt2[@]}" --device cuda $prec > gpt2.txt 2>&1 || { cat gpt2.txt; fail "gpt2-124M run $prec"; }
  echo "gpt2-124M ${prec:-fp32}:"; grep -E 'iteration|memory' gpt2.txt | tail -3
done
echo "tests/gpu/run.sh: ok"
