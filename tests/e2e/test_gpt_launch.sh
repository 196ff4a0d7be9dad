# gpt-launch without a cluster: --dry-run writes the results folder for every preset at a GPU count
# its layout divides; the generated command is gpt-train's; bad input (an unknown preset, option or
# gpt-train flag, a layout that does not divide the GPUs, a cluster file without a required field)
# is one line naming it, exit 2, and nothing written; `estimate` prints the Megatron formula's days.
L=$BIN/gpt-launch
for p in $(ls "$ROOT"/presets/*.yaml | xargs -n1 basename | sed 's/\.yaml$//'); do
  nodes=2; [[ $p == gpt3-175b ]] && nodes=4
  "$L" --preset "$p" --nodes "$nodes" --gpus-per-node 8 --partition gpu --dry-run 2> err-$p \
    || { cat err-$p; fail "dry run of $p"; }
  d=results/$p
  for f in job.sbatch command.txt config.yaml git_revision; do [[ -s $d/$f ]] || fail "$p: no $f"; done
  [[ ! -e $d/job_id ]] || fail "$p: a dry run wrote job_id"
  grep -q 'mock-data benchmark mode' err-$p || fail "$p: no mock-data notice"
  grep -q -- "--nodes=$nodes" $d/job.sbatch || fail "$p: job.sbatch without --nodes=$nodes"
  grep -qF "$(cat $d/command.txt)" $d/job.sbatch || fail "$p: job.sbatch does not run command.txt"
  grep -q "world-size: $((nodes * 8))" $d/config.yaml || fail "$p: config.yaml without the world size"
  bash -n $d/job.sbatch || fail "$p: job.sbatch is not valid bash"
done
grep -q -- '--tensor-model-parallel-size 4 --pipeline-model-parallel-size 8' results/gpt3-175b/command.txt \
  || fail "gpt3-175b: no T4 P8 in the command"
grep -q -- '--num-layers 24 --hidden-size 2304 --num-attention-heads 24' results/megatron-1.7b/command.txt \
  || fail "megatron-1.7b shape"

# Overrides by name; data-path turns the benchmark into training and is made absolute.
"$L" --preset gpt3-126m --nodes 1 --gpus-per-node 8 --set train-iters=2000 --set data-path=corpus_text_document \
  --set lr=1e-4 --results-dir r1 --dry-run 2> err
grep -q -- "--train-iters 2000 --lr 1e-4 " r1/command.txt || { cat r1/command.txt; fail "overrides"; }
grep -q -- "--data-path $PWD/corpus_text_document" r1/command.txt || fail "data-path not absolute"
grep -q mock-data r1/command.txt err && fail "mock data with a data-path"
# Per-split data the same way: each split's blend words kept, its prefixes made absolute.
"$L" --preset gpt3-126m --nodes 1 --gpus-per-node 8 --set "train-data-path=0.3 web 0.7 wiki" \
  --set valid-data-path=held_out --results-dir r1s --dry-run 2> err
grep -q -- "--train-data-path 0.3 $PWD/web 0.7 $PWD/wiki --valid-data-path $PWD/held_out" r1s/command.txt \
  || { cat r1s/command.txt; fail "per-split data paths"; }
grep -q mock-data r1s/command.txt err && fail "mock data with a train-data-path"

# A cluster file and a heterogeneous job.
cat > cluster.yaml <<'Y'
partition: batch
time: "02:00:00"
gpus-per-node: 4
account: proj1
container-image: nvcr.io#nvidia/pytorch:24.05-py3
sbatch: ["--exclusive"]
Y
"$L" --preset gpt2-124m --cluster cluster.yaml --nodes 2 --results-dir r2 --dry-run 2> err
for line in '--partition=batch' '--time=02:00:00' '--account=proj1' '--gpus-per-node=4' '--exclusive' '--nodes=2'; do
  grep -q -- "^#SBATCH $line\$" r2/job.sbatch || fail "cluster file: no #SBATCH $line"
done
grep -q -- '--container-image=nvcr.io#nvidia/pytorch:24.05-py3' r2/job.sbatch || fail "no container image"
"$L" --preset gpt2-124m --het h100:2 --het a100:1 --set global-batch-size=384 --partition gpu --results-dir r3 --dry-run
grep -q '^#SBATCH hetjob$' r3/job.sbatch || fail "no hetjob"
grep -q -- '--gres=gpu:h100:8' r3/job.sbatch && grep -q -- '--gres=gpu:a100:8' r3/job.sbatch || fail "het GPU types"
grep -q -- '--het-group=0-1' r3/job.sbatch || fail "srun without --het-group"
grep -q 'world-size: 24' r3/config.yaml || fail "het world size"
"$L" --preset gpt2-124m --nodes 1 --unique --dry-run 2>/dev/null
ls -d results/gpt2-124m-2* >/dev/null || fail "--unique made no timestamped folder"

# Bad input: one line naming the problem, exit 2, nothing written.
rm -rf results
bad() {  # bad REGEX args...
  local re=$1; shift
  expect_exit 2 "$L" "$@" --results-dir bad-out
  expect_stderr "^gpt-launch: .*$re"
  [[ $(grep -c '^gpt-launch: ' stderr) == 1 ]] || { cat stderr; fail "not one error line: $*"; }
  [[ ! -e bad-out ]] || fail "a refused launch wrote bad-out: $*"
}
bad "unknown preset 'gpt3-7b'" --preset gpt3-7b
bad "unrecognised option '--frobnicate'" --preset gpt2-124m --frobnicate
bad "unknown gpt-train option 'num-layer'" --preset gpt2-124m --set num-layer=3
bad "tensor 4 x pipeline 8 = 32 GPUs per model copy does not divide 2 nodes x 8 GPUs = 16" \
  --preset gpt3-175b --nodes 2 --gpus-per-node 8
bad "global batch 512 is not a multiple of micro-batch 16 x data-parallel size 24" --preset gpt2-124m --nodes 3
printf 'partition: batch\ngpus-per-node: 8\n' > no-time.yaml
bad "no-time.yaml: missing field 'time'" --preset gpt2-124m --cluster no-time.yaml
bad "--set must be KEY=VALUE" --preset gpt2-124m --set lr
bad "--preset is required"
[[ ! -e results ]] || fail "a refused launch wrote results/"

# estimate
stdout_matches '^training time: 33\.9 days$' "$L" estimate --params 175e9 --tokens 300e9 --gpus 1024 --tflops-per-gpu 140 \
  || fail "175B estimate"
stdout_matches '^training time: 25\.4 days$' "$L" estimate --params 175e9 --tokens 300e9 --gpus 1024 \
  --tflops-per-gpu 140 --no-recompute || fail "175B estimate without recomputation"
# X from a measured metrics file: the mean TFLOP/s of its iterations after the first.
printf '%s\n' '{"type":"train","iteration":1,"tflops":50}' '{"type":"train","iteration":2,"tflops":100}' \
  '{"type":"valid","iteration":2,"lm_loss":3}' '{"type":"train","iteration":3,"tflops":120}' > m.jsonl
"$L" estimate --preset gpt3-5b --tokens 300e9 --gpus 160 --measured m.jsonl > est
# gpt3-5b: 12·24·4096²·(1 + 13/(12·4096) + (50304 + 2048)/(12·24·4096)) parameters at 110 TFLOP/s
want=$(python3 -c 'p=12*24*4096**2*(1+13/(12*4096)+(50304+2048)/(12*24*4096)); print("%.1f" % (8*300e9*p/(160*110e12*86400)))')
grep -q "^training time: $want days$" est || { cat est; fail "gpt3-5b estimate (want $want days)"; }
grep -q 'mean of 2 logged iterations' est || fail "measured X not from 2 iterations"
expect_exit 2 "$L" estimate --params 175e9 --tokens 300e9 --gpus 1024
expect_stderr "one of --tflops-per-gpu and --measured"
