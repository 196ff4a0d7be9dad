# gpt-train --profile-layers: a tiny CPU model's layer profile (embedding, one layer, output layer,
# activations per layer) that gpt-plan plans from; two ranks add the tensor-parallel entry and the
# bandwidths; usage errors before any work. (--bf16: the CPU computes in fp32 but profiles the bf16
# model gpt-plan plans.)
T=$BIN/gpt-train
shape=(--device cpu --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
       --max-position-embeddings 32 --vocab-size 512 --mock-data --lr 1e-4 --train-iters 1 --bf16)
stdout_matches '--profile-layers OUT.json' "$T" --help || fail "--help lists no --profile-layers"
stdout_matches 'gpt-train --profile-layers h100-350m.json' "$T" --help || fail "--help without the example"

"$T" "${shape[@]}" --profile-layers one.json --profile-micro-batch-sizes 1,2 --cpu-threads 1 > out.txt 2> err.txt \
  || { cat err.txt; fail "profile on one process"; }
[[ ! -s out.txt ]] || fail "progress belongs on stderr"
grep -q 'gpt-train: profile micro-batch 2, T=1: 2 layers forward' err.txt || { cat err.txt; fail "no progress"; }
grep -q 'gpt-train: wrote one.json' err.txt || fail "no summary line"
python3 - one.json <<'PY' || fail "profile fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "gpt-layer-profile" and d["gpu"] == "cpu", d
assert d["cpu-threads"] == 1, d  # measured at the threads a training run with --cpu-threads 1 uses
m = d["model"]
assert (m["hidden-size"], m["num-attention-heads"], m["ffn-hidden-size"], m["seq-length"], m["vocab-size"],
        m["precision"]) == (64, 4, 256, 32, 512, "bf16"), m
es = d["entries"]
assert [(e["micro-batch-size"], e["tensor-model-parallel-size"]) for e in es] == [(1, 1), (2, 1)], es
for e in es:
    for k in ("embedding", "layer", "output-layer", "one-layer-stage", "two-layer-stage"):
        assert e[k]["forward-ms"] > 0 and e[k]["backward-ms"] > 0, (k, e)
    # The activations a layer keeps per micro-batch: at least its [B*T, C] input, at most 64 of them.
    bt_c = e["micro-batch-size"] * 32 * 64 * 4
    assert bt_c <= e["layer-activation-bytes"] <= 64 * bt_c, e
    assert 0 < e["layer-activation-bytes-recompute"] <= e["layer-activation-bytes"], e
    # 12C^2 + 13C parameters: fp32 master and bf16 copy.
    assert e["layer-weight-bytes"] == (12 * 64 * 64 + 13 * 64) * 6, e
    assert e["includes-tp-communication"] is False
assert d["optimizer-ms-per-billion-parameters"] > 0
PY

# gpt-plan reads it: a plan for the same shape on two "cpu" GPUs.
cat > cpu.yaml <<'Y'
groups:
  - {gpu: cpu, nodes: 1, gpus-per-node: 2, intra-node-gbs: 5, memory-gib: 64}
Y
"$BIN/gpt-plan" --model 2x64x4 --vocab-size 512 --seq-length 32 --global-batch-size 8 --cluster cpu.yaml \
  --profiles one.json --top 1 --json > plan.json 2> plan.err || { cat plan.err; fail "gpt-plan --profiles"; }
python3 - plan.json <<'PY' || fail "plan from the profile"
import json, sys
l = json.load(open(sys.argv[1]))["layouts"][0]
assert l["step_ms"] > 0 and l["micro_batch_size"] in (1, 2) and l["tensor"] == 1, l
PY

# Two ranks: the T=2 entry (its layers hold the tensor-parallel all-reduces) and the bandwidths.
"$T" "${shape[@]}" --profile-layers two.json --profile-tensor-parallel-sizes 1,2 --nproc-per-node 2 \
  > out2.txt 2> err2.txt || { cat err2.txt; fail "profile on two ranks"; }
python3 - two.json two.bandwidth.json <<'PY' || fail "two-rank profile"
import json, os, sys
d = json.load(open(sys.argv[1]))
es = {e["tensor-model-parallel-size"]: e for e in d["entries"]}
assert set(es) == {1, 2} and es[2]["includes-tp-communication"] is True, es
assert es[2]["layer-weight-bytes"] < es[1]["layer-weight-bytes"], es
for e in es.values():
    assert e["layer"]["forward-ms"] > 0 and e["output-layer"]["backward-ms"] > 0, e
assert d["bandwidth-file"] == "two.bandwidth.json" and d["ranks"] == 2
# Each rank gets its share of the cores, as the launcher's training ranks do.
assert d["cpu-threads"] == max(1, len(os.sched_getaffinity(0)) // 2), d
b = json.load(open(sys.argv[2]))
assert b["format"] == "gpt-plan-bandwidth" and b["ranks"] == 2
assert b["summary"]["all-reduce-bus-gbs"] > 0 and b["summary"]["p2p-intra-node-gbs"] > 0
PY
cat > cpu2.yaml <<'Y'
groups:
  - {gpu: cpu, nodes: 1, gpus-per-node: 2, bandwidth-files: [two.bandwidth.json], memory-gib: 64}
Y
"$BIN/gpt-plan" --model 2x64x4 --vocab-size 512 --seq-length 32 --global-batch-size 8 --cluster cpu2.yaml \
  --profiles two.json --tensor-model-parallel-size 2 --top 1 --json > plan2.json 2> plan2.err \
  || { cat plan2.err; fail "gpt-plan with the T=2 entry"; }
python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["layouts"][0]; assert l["tensor"]==2 and l["step_ms"]>0, l' \
  plan2.json || fail "no T=2 plan"

# Usage errors before any work (exit 2).
expect_exit 2 "$T" "${shape[@]}" --profile-layers x.json --profile-tensor-parallel-sizes 2
expect_stderr 'profile-tensor-parallel-sizes 2 needs at least 2 ranks'
expect_exit 2 "$T" "${shape[@]}" --profile-layers x.json --profile-micro-batch-sizes 1,zero
expect_stderr "profile-micro-batch-sizes: 'zero' is not a positive integer"
expect_exit 2 "$T" "${shape[@]}" --profile-layers x.json --profile-tensor-parallel-sizes 3 --nproc-per-node 3
expect_stderr 'profile-tensor-parallel-sizes 3 does not divide --num-attention-heads 4'
[[ ! -e x.json ]] || fail "a profile after a usage error"
