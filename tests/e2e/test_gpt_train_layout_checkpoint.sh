# Checkpoints across tensor/pipeline/data-parallel layouts (CPU backend, 4 local ranks): saved at
# (T, P, D) = (2, 1, 2) and (1, 2, 2) with the distributed optimizer, loaded at (1, 1, 1) and at
# the other layout, the next losses equal the uninterrupted run's (within 1e-5 relative); the
# vocabulary (300: 512 rows at T=2, 384 at T=1) is padded or trimmed. --export-hf from (2, 2, 1)
# gives the one-process export's weights, with or without --save. The interleaved schedule (P=3,
# 2 chunks a stage) saves and loads across layouts too, also with D=2 and the distributed optimizer
# (each rank writing its shard of both chunks).
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
tiny=(--num-layers 4 --hidden-size 16 --num-attention-heads 4 --seq-length 8
      --micro-batch-size 2 --global-batch-size 8 --lr 1e-2 --mock-data --mock-data-samples 64
      --vocab-size 300 --log-interval 1 --eval-iters 0 --cpu-threads 1 --train-iters 6)
t2d2=(--nproc-per-node 4 --tensor-model-parallel-size 2 --use-distributed-optimizer)
p2d2=(--nproc-per-node 4 --pipeline-model-parallel-size 2 --use-distributed-optimizer)
t2p2=(--nproc-per-node 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2)
run() {  # out args...
  local out=$1; shift
  "$GT" "${tiny[@]}" "$@" > "$out" 2> "$out.err" || { cat "$out.err"; fail "gpt-train $*"; }
}
close() {  # a b: the same losses within 1e-5 relative (b's are the last ones of a's)
  python3 - "$1" "$2" <<'PY'
import re, sys
a, b = ([float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", open(f).read())] for f in sys.argv[1:])
assert len(b) == 3 and len(a) == 6, (a, b)
assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a[3:], b)), (a, b)
PY
}
run one.txt --export-hf hf1
run t.txt "${t2d2[@]}" --exit-interval 3 --save ck-t
run p.txt "${p2d2[@]}" --exit-interval 3 --save ck-p
[[ -f ck-t/iter_0000003/shard_3_of_4.bin && -f ck-p/iter_0000003/index.txt ]] || fail "layout"
grep -q '^tensor=embedding.word_embeddings.weight 512x16 0$' ck-t/iter_0000003/index.txt \
  || fail "a T=2 checkpoint holds the whole 512-row embedding"
for ck in ck-t ck-p; do
  run "$ck-1.txt" --load "$ck"
  grep -q "loaded checkpoint from $ck at iteration 3" "$ck-1.txt" || fail "$ck not loaded"
  close one.txt "$ck-1.txt" || fail "$ck loaded at (1, 1, 1)"
done
run t-p.txt --load ck-t "${p2d2[@]}"
close one.txt t-p.txt || fail "(2, 1, 2) loaded at (1, 2, 2)"
run p-t.txt --load ck-p "${t2d2[@]}"
close one.txt p-t.txt || fail "(1, 2, 2) loaded at (2, 1, 2)"

run hf.txt "${t2p2[@]}" --export-hf hf2
run hfs.txt "${t2p2[@]}" --export-hf hf3 --save ck-s
same_file hf2/model.safetensors hf3/model.safetensors
[[ ! -e hf2.shards.tmp ]] || fail "temporary checkpoint left behind"
python3 - hf1/model.safetensors hf2/model.safetensors <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: struct.unpack(f"<{(v['data_offsets'][1] - v['data_offsets'][0]) // 4}f",
                             b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}, h
(a, ha), (b, hb) = tensors(sys.argv[1]), tensors(sys.argv[2])
assert ha == hb  # names, shapes (vocabulary 300 rows), offsets
# the same training in another summation order: equal to float rounding
assert all(abs(x - y) <= 1e-4 * max(1.0, abs(x)) for k in a for x, y in zip(a[k], b[k]))
PY

# The interleaved schedule: each rank writes its two chunks; loaded at (1, 1, 1), and a T=2
# checkpoint loaded by it.
six=(--num-layers 6 --global-batch-size 6)
vp=(--nproc-per-node 3 --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1)
run one6.txt "${six[@]}"
run v.txt "${six[@]}" "${vp[@]}" --exit-interval 3 --save ck-v
run v-1.txt "${six[@]}" --load ck-v
close one6.txt v-1.txt || fail "interleaved checkpoint loaded at (1, 1, 1)"
run t6.txt "${six[@]}" --nproc-per-node 2 --tensor-model-parallel-size 2 --exit-interval 3 --save ck-t6
run t-v.txt "${six[@]}" "${vp[@]}" --load ck-t6
close one6.txt t-v.txt || fail "T=2 checkpoint loaded by the interleaved schedule"
run one12.txt --num-layers 6 --global-batch-size 12
run vd.txt --num-layers 6 --global-batch-size 12 --nproc-per-node 6 \
  --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1 \
  --use-distributed-optimizer --exit-interval 3 --save ck-vd
run vd-1.txt --num-layers 6 --global-batch-size 12 --load ck-vd
grep -q "loaded checkpoint from ck-vd at iteration 3" vd-1.txt || fail "ck-vd not loaded"
close one12.txt vd-1.txt || fail "interleaved distributed-optimizer checkpoint loaded at (1, 1, 1)"
