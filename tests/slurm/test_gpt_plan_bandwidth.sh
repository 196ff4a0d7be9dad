# gpt-plan bandwidth as an `srun -n 2` step on the CPU communicator: each task finds its rank and
# the rendezvous from srun's variables, the two meet, and the first writes a bandwidth file with
# every collective and the point-to-point pair that a cluster file then reads.
srun -n 2 --cpus-per-task=1 "$BIN/gpt-plan" bandwidth --device cpu --sizes 64K,256K --iters 2 -o bw.json 2> err \
  || { cat err; fail "srun -n 2 gpt-plan bandwidth"; }
python3 - bw.json <<'PY' || { cat err; fail "bandwidth file"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "gpt-plan-bandwidth" and d["ranks"] == 2 and d["communicator"] == "tcp", d
assert {r["op"] for r in d["results"]} == {"all-reduce", "reduce-scatter", "all-gather", "send-recv"}
assert d["summary"]["all-reduce-bus-gbs"] > 0
PY
printf 'groups:\n  - {gpu: A10, nodes: 1, gpus-per-node: 2, bandwidth-files: [bw.json]}\n' > cluster.yaml
"$BIN/gpt-plan" --model gpt2-124m --global-batch-size 8 --cluster cluster.yaml --analytic --top 1 > plan.txt \
  || fail "planning with the measured file"
grep -q '^#1 ' plan.txt || fail "no layout"
