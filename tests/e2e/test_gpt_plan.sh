# gpt-plan: a mixed cluster planned from published speeds (top layouts with their gpt-train flags
# and gpt-launch command, the even split beside them, --explain, --json, --pareto); a measured
# profile file; the bandwidth measurement over two local CPU ranks feeding a cluster file; bad
# input named in one line (exit 1) and usage errors (exit 2).
P=$BIN/gpt-plan
"$P" --help > help.txt
grep -q '^Example:' help.txt && grep -q 'gpt-plan --model gpt2-1.5b' help.txt || fail "--help without an example"
"$P" --version | grep -Eq '^gpt-plan [0-9]' || fail "--version"

cat > mixed.yaml <<'Y'
groups:
  - gpu: A100-40GB
    nodes: 1
    gpus-per-node: 8
    intra-node-gbs: 200
    inter-node-gbs: 12.5
    price-per-hour: 32.77
  - gpu: A10
    nodes: 4
    gpus-per-node: 4
    intra-node-gbs: 12
    inter-node-gbs: 6
    price-per-hour: 5.67
Y
"$P" --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml --analytic --top 3 --explain 1 > out.txt
grep -q '^#1 .* ms/step .* tokens/s' out.txt || { cat out.txt; fail "no ranked layout"; }
[[ $(grep -c '^#[0-9] ' out.txt) == 3 ]] || fail "--top 3"
grep -Eq '^    gpt-train --tensor-model-parallel-size [0-9]+ --pipeline-model-parallel-size [0-9]+ .*--micro-batch-size [0-9]+ --global-batch-size 64' out.txt \
  || fail "no gpt-train flags"
grep -q '^    gpt-launch --preset gpt2-1.5b .*--set global-batch-size=64' out.txt || fail "no gpt-launch command"
grep -q 'memory per GPU, GiB:  .*A100-40GB' out.txt || fail "no memory per GPU type"
grep -q '^best even split: .* predicted [0-9.]*x as fast' out.txt || fail "no even split beside it"
grep -q 'pipeline (1F1B): sum of stages' out.txt || fail "--explain without the pipeline term"
grep -q 'embedding all-reduce between the first and last stage' out.txt || fail "--explain without the embedding term"

# JSON: the first layout's partition sums to the layers and its flags carry it.
"$P" --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml --analytic --json > out.json
python3 - out.json <<'PY' || fail "JSON output"
import json, sys
d = json.load(open(sys.argv[1]))
l = d["layouts"][0]
assert sum(l["partition"]) == 48, l["partition"]
assert l["tensor"] * l["pipeline"] * l["data"] == 24
assert l["step_ms"] <= d["best_even_split"]["step_ms"]
if l["pipeline"] > 1:
    assert "--pipeline-partition " + "-".join(map(str, l["partition"])) in l["gpt_train_flags"]
PY

# One given layout: a fixed partition with the search narrowed to it predicts that layout alone.
"$P" --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml --analytic --pipeline-partition 0-12-12-12-12-0 \
  --micro-batch-size 2 --recompute off --distributed-optimizer on --json > fixed.json
python3 - fixed.json <<'PY' || fail "--pipeline-partition"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["layouts"], d
for l in d["layouts"]:
    assert l["partition"] == [0, 12, 12, 12, 12, 0] and l["micro_batch_size"] == 2, l
    assert l["distributed_optimizer"] and not l["recompute_activations"]
    assert "--pipeline-partition 0-12-12-12-12-0" in l["gpt_train_flags"]
PY

# --pareto: the front of time against cost over choices of nodes, cheapest per token last.
"$P" --model gpt2-350m --global-batch-size 32 --cluster mixed.yaml --analytic --pareto --top 1 > pareto.txt
grep -q '^time against cost' pareto.txt || { cat pareto.txt; fail "--pareto"; }
[[ $(sed -n '/^time against cost/,/^$/p' pareto.txt | grep -c 'A100-40GB:[0-9]') -ge 2 ]] || { cat pareto.txt; fail "a one-point front"; }

# A measured profile (the format gpt-train --profile-layers writes) for one GPU type.
cat > h100.json <<'J'
{"format": "gpt-layer-profile", "version": 1, "gpu": "H100", "memory-gib": 80,
 "model": {"num-layers": 24, "hidden-size": 1024, "num-attention-heads": 16, "ffn-hidden-size": 4096,
           "seq-length": 1024, "vocab-size": 50257, "precision": "bf16"},
 "entries": [
  {"micro-batch-size": 4, "tensor-model-parallel-size": 1,
   "embedding": {"forward-ms": 0.05, "backward-ms": 0.1}, "layer": {"forward-ms": 0.9, "backward-ms": 1.8},
   "output-layer": {"forward-ms": 2.1, "backward-ms": 4.2}},
  {"micro-batch-size": 8, "tensor-model-parallel-size": 1,
   "embedding": {"forward-ms": 0.1, "backward-ms": 0.2}, "layer": {"forward-ms": 1.7, "backward-ms": 3.4},
   "output-layer": {"forward-ms": 4.1, "backward-ms": 8.2}}]}
J
cat > h100.yaml <<'Y'
groups:
  - {gpu: H100, nodes: 1, gpus-per-node: 4, intra-node-gbs: 300}
Y
"$P" --model gpt2-350m --global-batch-size 64 --cluster h100.yaml --profiles h100.json --top 1 > h.txt
grep -q 'H100: h100.json' h.txt || { cat h.txt; fail "the profile file is not named"; }
grep -Eq '^#1 .*micro-batch (4|8) ' h.txt || fail "micro-batch sizes outside the profile"

# gpt-plan bandwidth: two CPU ranks over the TCP communicator write a file the cluster reads.
"$P" bandwidth --nproc-per-node 2 --device cpu --sizes 64K,256K --iters 2 -o bw.json 2> bw.err \
  || { cat bw.err; fail "bandwidth"; }
python3 - bw.json <<'PY' || fail "bandwidth file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "gpt-plan-bandwidth" and d["communicator"] == "tcp" and d["ranks"] == 2 and d["nodes"] == 1
ops = {r["op"] for r in d["results"]}
assert ops == {"all-reduce", "reduce-scatter", "all-gather", "send-recv"}, ops
assert d["summary"]["all-reduce-bus-gbs"] > 0 and d["summary"]["p2p-intra-node-gbs"] > 0
PY
grep -q 'wrote bw.json (2 ranks on 1 node)' bw.err || fail "bandwidth: no summary line"
cat > measured.yaml <<'Y'
groups:
  - {gpu: H100, nodes: 1, gpus-per-node: 2, bandwidth-files: [bw.json]}
Y
"$P" --model gpt2-350m --global-batch-size 64 --cluster measured.yaml --profiles h100.json --top 1 >/dev/null \
  || fail "a cluster file with a measured bandwidth"
expect_exit 2 "$P" bandwidth --device cpu -o x.json
expect_stderr '^gpt-plan: bandwidth needs several ranks'

# Bad input: one line naming it, exit 1.
bad() {  # bad CODE REGEX args...
  local code=$1 re=$2; shift 2
  expect_exit "$code" "$P" "$@"
  expect_stderr "^gpt-plan: .*$re"
  [[ $(grep -c '^gpt-plan: ' stderr) == 1 ]] || { cat stderr; fail "not one error line: $*"; }
}
sed 's/gpu: A10$/gpu: B300/' mixed.yaml > unknown.yaml
bad 1 "unknown.yaml:8: unknown GPU type 'B300'" --model gpt2-1.5b --global-batch-size 64 --cluster unknown.yaml --analytic
bad 1 "mixed.yaml:2: no profile for GPU type 'A100-40GB'" --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml
bad 1 "model 96x12288x96 fits nowhere on the 24 GPUs of mixed.yaml" --model 96x12288x96 --global-batch-size 64 \
  --cluster mixed.yaml --analytic
bad 1 "h100.json: profiled with hidden-size 1024, the model gpt2-1.5b has 1600" --model gpt2-1.5b \
  --global-batch-size 64 --cluster h100.yaml --profiles h100.json
printf 'groups:\n  - gpu: H100\n    nodes: 2\n    gpus-per-node: 8\n    intra-node-gbs: 300\n' > nobw.yaml
bad 1 "nobw.yaml:2: group H100 needs inter-node-gbs" --model gpt2-350m --global-batch-size 64 --cluster nobw.yaml --analytic
# Usage errors: exit 2.
bad 2 "--global-batch-size is required" --model gpt2-1.5b --cluster mixed.yaml
bad 2 "unknown preset 'gpt2-9b'" --model gpt2-9b --global-batch-size 64 --cluster mixed.yaml
bad 2 "--pipeline-partition sums to 47, the model gpt2-1.5b has 48 layers" --model gpt2-1.5b --global-batch-size 64 \
  --cluster mixed.yaml --analytic --pipeline-partition 0-8-8-8-8-8-7-0
bad 2 "--recompute must be on, off or any" --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml --recompute yes
bad 2 "--pareto needs price-per-hour" --model gpt2-350m --global-batch-size 64 --cluster h100.yaml --profiles h100.json --pareto
