#!/usr/bin/env bash
# Where a gpt-train step spends its GPU time at the clocks the run really has: every kernel of
# ITERS profiled iterations recorded by CUPTI (kernel_trace.cpp, loaded through
# CUDA_INJECTION64_PATH; kernels overlap and run as they do without it), then summed by kernel
# name, with the GPU's idle gaps between kernels and the kernel pairs they sit between.
# profile_kernels.sh (ncu) gives each kernel alone at the clock an idle card reaches; this gives
# the power-capped step as it runs.
#   ROW=350M-16 BIN=build/bin bash scripts/bench/trace_step.sh [gpt-train flags]
# ROW: a row of train_vs_torch.sh (train_rows.sh; default 124M-16), run with its own flags plus
# --profile over iterations WARMUP .. WARMUP + ITERS (defaults 5 and 5); extra flags go last and
# replace the row's. NPROC=N (default 1): data parallelism over N GPUs (--nproc-per-node, the
# global batch N micro-batches), every rank traced and summed on its own; e.g.
#   NPROC=2 ROW=124M-32 BIN=build/bin bash scripts/bench/trace_step.sh --overlap-grad-reduce
# Each summary ends with the GPU's idle time just before and after AdamW (the step's end: on one
# GPU the host has queued the next step by then, so both are near zero).
set -euo pipefail
BIN=${BIN:?BIN must point at the built tools}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-5}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
here=$(cd "$(dirname "$0")" && pwd)
out=${TRACE_OUT:-$(mktemp -d)}
mkdir -p "$out"
g++ -O2 -std=c++17 -shared -fPIC -I"$CUDA_HOME/include" "$here/kernel_trace.cpp" \
  -L"$CUDA_HOME/lib64" -lcupti -Wl,-rpath,"$CUDA_HOME/lib64" -o "$out/libkernel_trace.so"
source "$here/train_rows.sh"
NPROC=${NPROC:-1}
dp=()
if ((NPROC > 1)); then
  row_shape "${ROW:-124M-16}"
  dp=(--nproc-per-node "$NPROC" --global-batch-size $((mbs * NPROC)) --profile-ranks $(seq 0 $((NPROC - 1))))
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
fi
CUDA_INJECTION64_PATH="$out/libkernel_trace.so" KERNEL_TRACE_OUT="$out/trace.txt" \
  gt_row "$BIN/gpt-train" "${ROW:-124M-16}" "$out/train.log" --train-iters $((WARMUP + ITERS)) \
  --log-interval 1 --profile --profile-step-start "$WARMUP" --profile-step-end $((WARMUP + ITERS)) \
  "${dp[@]}" "$@"
grep -E "iteration +$((WARMUP + ITERS))/" "$out/train.log" | tail -1 || true
traces=("$out/trace.txt")
((NPROC > 1)) && traces=($(seq -f "$out/trace.txt.rank%g" 0 $((NPROC - 1))))
for trace in "${traces[@]}"; do
((NPROC > 1)) && echo "== ${trace##*/}"
python3 - "$trace" "$ITERS" <<'PY'
import collections, re, sys
iters = int(sys.argv[2])
ks = []
for line in open(sys.argv[1]):
    s, e, stream, name = line.rstrip("\n").split(" ", 3)
    name = re.sub(r"^void ", "", name.replace("(anonymous namespace)::", ""))
    short, depth = "", 0   # the name without its template arguments and parameters
    for ch in name:
        if ch in "<(":
            if depth == 0 and ch == "(":
                break
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            short += ch
    ks.append((int(s), int(e), short[:64]))
ks.sort()
total = collections.Counter(); count = collections.Counter()
gap_pairs = collections.Counter(); gap_counts = collections.Counter()
gaps = []; busy_end = ks[0][0]; prev = None
for s, e, n in ks:
    total[n] += e - s; count[n] += 1
    if s > busy_end and prev is not None:
        gaps.append(s - busy_end); gap_pairs[(prev, n)] += s - busy_end; gap_counts[(prev, n)] += 1
    if e > busy_end:
        busy_end, prev = e, n
wall = ks[-1][1] - ks[0][0]; idle = sum(gaps); all_ns = sum(total.values())
per = lambda ns: ns / iters / 1e6
print(f"{'kernel':64s} {'calls/it':>8s} {'ms/it':>8s} {'share':>6s}")
for n, ns in total.most_common(30):
    print(f"{n:64s} {count[n] / iters:8.0f} {per(ns):8.3f} {100 * ns / all_ns:5.1f}%")
print(f"{'all kernels (sum of durations)':64s} {len(ks) / iters:8.0f} {per(all_ns):8.3f}")
print(f"GPU wall {per(wall):.3f} ms/it, busy {per(wall - idle):.3f}, idle {per(idle):.3f} "
      f"in {len(gaps) / iters:.0f} gaps/it (median {sorted(gaps)[len(gaps) // 2] / 1e3 if gaps else 0:.2f} us, "
      f"{sum(g > 5000 for g in gaps) / iters:.0f} over 5 us)")
# The idle time by the kind of kernel that ends it: cuBLASLt's (nvjet*, cutlass*, sm90_xmma*)
# start ~2.6 us after the kernel before them on an H100 (kernels/NOTES.md, twentieth session).
kind_ns = collections.Counter(); kind_gaps = collections.Counter()
for (a, b), ns in gap_pairs.items():
    kind = "cuBLASLt" if re.match(r"(nvjet|cutlass|sm\d+_xmma)", b) else "our"
    kind_ns[kind] += ns; kind_gaps[kind] += gap_counts[(a, b)]
for kind in sorted(kind_ns):
    print(f"idle before {kind} kernels: {per(kind_ns[kind]):.3f} ms/it in {kind_gaps[kind] / iters:.0f} "
          f"gaps/it (mean {kind_ns[kind] / kind_gaps[kind] / 1e3:.2f} us)")
print("largest idle totals between kernel pairs (ms/it, gaps/it):")
for (a, b), ns in gap_pairs.most_common(12):
    print(f"  {per(ns):7.3f} {gap_counts[(a, b)] / iters:5.0f}  {a} -> {b}")
# The first idle stretch of the GPU before AdamW starts and after it ends.
before, after = [], []
ended = ks[0][0]
for i, (s, e, n) in enumerate(ks):
    if n.startswith("gpt::cuda::adamw"):
        before.append(max(0, s - ended))
        busy = max(e, ended)
        for s2, e2, _ in ks[i + 1:]:
            if s2 > busy:
                after.append(s2 - busy)
                break
            busy = max(busy, e2)
    ended = max(ended, e)
mean = lambda v: sum(v) / len(v) / 1e6 if v else 0.0
print(f"idle just before AdamW {mean(before):.3f} ms, just after it {mean(after):.3f} ms "
      f"(means of {len(before)})")
PY
done
