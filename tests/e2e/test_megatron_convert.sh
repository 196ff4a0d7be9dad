# scripts/megatron-convert.py: a Megatron legacy checkpoint (tensor 2 x pipeline 2, legacy and
# megatron-core names) built from a gpt-train checkpoint's tensors imports to the same tensors
# and the same next loss; export at another layout and import back is exact. When PyTorch is
# installed, its torch.load reads the exported files and torch.save'd bf16 files import.
set -euo pipefail
GT=${BIN:?BIN must point at the built tools}/gpt-train
CONV=$ROOT/scripts/megatron-convert.py
SYN=$ROOT/tests/e2e/megatron_synth.py
PY=$(python_with_numpy)

tiny=(--num-layers 4 --hidden-size 16 --num-attention-heads 4 --seq-length 8
      --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --mock-data-samples 64
      --vocab-size 300 --log-interval 1 --eval-iters 0 --cpu-threads 1)
"$GT" "${tiny[@]}" --train-iters 2 --save ref > train.txt
losses() { grep -o 'lm loss: [^|]*' "$1"; }

# Import: Megatron (T=2, P=2) -> ours, bit for bit; the vocabulary (512 rows at T=2) trimmed to 384.
"$PY" "$SYN" write ref meg 2 2
[[ -f meg/iter_0000002/mp_rank_01_001/model_optim_rng.pt ]] || fail "synthetic layout"
"$PY" "$CONV" import meg imp --vocab-size 300 2> imp.err || { cat imp.err; fail "import"; }
"$PY" "$SYN" params ref imp
# The next step from the import equals the one from our own checkpoint (moments start at zero).
"$GT" "${tiny[@]}" --train-iters 3 --load ref --no-load-optim > a.txt
"$GT" "${tiny[@]}" --train-iters 3 --load imp > b.txt
grep -q "loaded checkpoint from imp at iteration 2" b.txt || fail "imported checkpoint not loaded"
[[ -n $(losses a.txt) ]] && diff <(losses a.txt) <(losses b.txt) || fail "first loss after import"

# megatron-core names, pipeline 4.
"$PY" "$SYN" write ref megc 1 4 --mcore
"$PY" "$CONV" import megc impc --vocab-size 300 2> /dev/null
"$PY" "$SYN" params ref impc

# Export at (2, 2) gives the files Megatron would hold; (2, 2) with an uneven partition and
# megatron-core names imports back exactly.
"$PY" "$CONV" export ref exp --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  2> exp.err || { cat exp.err; fail "export"; }
grep -q "^2$" <(cat exp/latest_checkpointed_iteration.txt; echo) || fail "latest iteration"
"$PY" "$SYN" same meg exp
"$PY" "$CONV" import exp back 2> /dev/null   # vocab-size recorded in the exported args
"$PY" "$SYN" params ref back
"$PY" "$CONV" export ref expu --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  --pipeline-partition 1-3 --mcore 2> /dev/null
[[ -f expu/iter_0000002/mp_rank_00_001/model_optim_rng.pt ]] || fail "uneven export layout"
"$PY" "$CONV" import expu backu 2> /dev/null
"$PY" "$SYN" params ref backu

# Refusals: one line, exit 1 (bad input) or 2 (usage).
rm meg/iter_0000002/mp_rank_01_000/model_optim_rng.pt
expect_exit 1 "$PY" "$CONV" import meg x --vocab-size 300
expect_stderr '^megatron-convert: .*tensor rank 1 pipeline rank 0 is missing$'
expect_exit 1 "$PY" "$CONV" import megc x
expect_stderr 'pass --vocab-size'
expect_exit 1 "$PY" "$CONV" export ref x --pipeline-model-parallel-size 3
expect_stderr 'does not divide the 4 layers'
expect_exit 1 "$PY" "$CONV" export ref x --tensor-model-parallel-size 3
expect_stderr '^megatron-convert: --tensor-model-parallel-size 3 does not divide --num-attention-heads 4$'
expect_exit 2 "$PY" "$CONV" export ref x --tensor-model-parallel-size 0
head -c 300 megc/iter_0000002/mp_rank_00_002/model_optim_rng.pt > cut.pt
mv cut.pt megc/iter_0000002/mp_rank_00_002/model_optim_rng.pt
expect_exit 1 "$PY" "$CONV" import megc x --vocab-size 300
expect_stderr '^megatron-convert: megc/iter_0000002/mp_rank_00_002/model_optim_rng.pt: cannot read'
expect_exit 1 "$PY" "$CONV" import nowhere x
expect_stderr 'not a Megatron checkpoint directory'
stdout_matches '^megatron-convert [0-9]' "$PY" "$CONV" --version
stdout_matches 'Examples:' "$PY" "$CONV" --help

# The real PyTorch, where installed (the converter itself never needs it).
if "$PY" -c 'import torch' 2> /dev/null; then
  "$PY" - exp <<'PY'
import os, sys, torch
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".pt"):
            s = torch.load(os.path.join(root, f))
            assert s["checkpoint_version"] == 3.0 and s["args"].tensor_model_parallel_size == 2
            enc = s["model"]["language_model"]["encoder"]
            assert enc["layers.1.self_attention.query_key_value.weight"].shape == (24, 16)
PY
  rm -rf megt && "$PY" "$SYN" write ref megt 2 2 --torch
  "$PY" "$CONV" import megt impt --vocab-size 300 2> /dev/null
  "$PY" - ref impt "$ROOT" <<'PY'
import sys
sys.path.insert(0, sys.argv[3] + "/scripts/megatron")
import numpy as np, gptckpt
a, b = gptckpt.load(sys.argv[1]).params, gptckpt.load(sys.argv[2]).params
bf = (a.view(np.uint32) + 0x7FFF + ((a.view(np.uint32) >> 16) & 1)) & 0xFFFF0000
assert np.array_equal(bf.view(np.float32), b), "bf16 weights not widened exactly"
PY
else
  echo "PyTorch not installed: torch.load/torch.save cross-check skipped"
fi
