# gpt-train's per-stage report of a pipeline run on the CPU backend: every stage's line (layers,
# parameters, peak memory, forward/backward ms per micro-batch) and the measured bubble on the
# last rank after each log interval, and the same figures in the metrics records. Sourced by
# tests/e2e/run.sh in a scratch directory.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
fail() { echo "test_stage_report: $*" >&2; exit 1; }

tiny=(--num-layers 5 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 2
      --global-batch-size 8 --lr 1e-2 --mock-data --mock-data-samples 64 --vocab-size 40
      --eval-iters 0 --cpu-threads 1 --device cpu)
"$GT" --nproc-per-node 2 --pipeline-model-parallel-size 2 --pipeline-partition 3-2 "${tiny[@]}" \
  --train-iters 4 --log-interval 2 --metrics-file m.jsonl > pp.txt 2>&1 ||
  { tail -20 pp.txt; fail "P=2 run failed"; }
# Two intervals, each with two stage lines and the bubble line.
[[ $(grep -c '^ \[pipeline stage 0\] after iteration' pp.txt) == 2 ]] || fail "stage 0 lines: $(cat pp.txt)"
[[ $(grep -c '^ \[pipeline\] after iteration [24]: measured bubble' pp.txt) == 2 ]] ||
  fail "bubble lines: $(cat pp.txt)"
python3 - pp.txt m.jsonl m.rank0.jsonl m.rank1.jsonl <<'PY' || fail "report values"
import json, re, sys
log = open(sys.argv[1]).read()
s0 = re.findall(r"\[pipeline stage 0\] after iteration 4: layers 0-2 \(3, embedding\) \| "
                r"parameters: (\d+) \| max allocated \(MB\): ([0-9.]+) \| forward \(ms per "
                r"micro-batch\): ([0-9.]+) \| backward \(ms per micro-batch\): ([0-9.]+)", log)
s1 = re.findall(r"\[pipeline stage 1\] after iteration 4: layers 3-4 \(2, output layer and "
                r"loss\) \| parameters: (\d+)", log)
b = re.findall(r"after iteration 4: measured bubble: ([0-9.]+)% .* m = 4: 20.0%", log)
assert s0 and s1 and b, (s0, s1, b)
p0, mb, fwd, bwd = int(s0[0][0]), float(s0[0][1]), float(s0[0][2]), float(s0[0][3])
# Stage 0: word (padded 128) and position embeddings and 3 layers of 12·16² + 13·16 parameters.
layer = 12 * 16 * 16 + 13 * 16
assert p0 == 128 * 16 + 8 * 16 + 3 * layer, p0
assert int(s1[0]) == 2 * layer + 2 * 16 + 128 * 16, s1  # the last stage's tied copy and final LN
assert mb > 0 and fwd > 0 and bwd > 0, (mb, fwd, bwd)
assert 0 <= float(b[0]) <= 100
recs = [[json.loads(l) for l in open(f) if '"train"' in l] for f in sys.argv[2:]]
main, r0, r1 = recs
assert len(main) == 2 and main[-1]["stage"] == 1 and r0[-1]["stage"] == 0, (main, r0)
for r in (main[-1], r0[-1], r1[-1]):
    st = r["stages"]
    assert [s["num_layers"] for s in st] == [3, 2] and st[0]["embedding"] and st[1]["head"], st
    assert st[0]["parameters"] == p0 and 0 <= r["pipeline_bubble"] <= 1
    assert r["stage_compute_ms"] > 0 and r["stage_wait_ms"] >= 0
    assert abs(r["stage_forward_ms"] - st[r["stage"]]["forward_ms"]) < 1e-9
PY
# Without a pipeline no stage report.
"$GT" "${tiny[@]}" --train-iters 2 --log-interval 1 > one.txt 2>&1 || fail "one process failed"
! grep -q 'pipeline' one.txt || fail "a run without a pipeline printed a stage report"
echo "test_stage_report: ok"
