#!/usr/bin/env bash
# Runs the per-operation GPU benchmarks given as arguments (make bench-gpu), each with BENCH_ARGS
# (e.g. BENCH_ARGS='--batch 16 --reps 50'). Without a visible GPU it says so and exits 0: the
# build is what a machine without one can check. Exit 1 when a CUDA result disagrees with its
# CPU twin.
set -uo pipefail
[ $# -gt 0 ] || { echo "run.sh: no benchmarks given" >&2; exit 2; }
status=0
for bin in "$@"; do
  # shellcheck disable=SC2086
  "$bin" ${BENCH_ARGS:-}
  rc=$?
  if [ $rc -eq 2 ] && [ "$bin" = "$1" ] && ! nvidia-smi -L > /dev/null 2>&1; then
    echo "bench-gpu: no GPU visible; the benchmarks are built in $(dirname "$bin"), not run"
    exit 0
  fi
  [ $rc -eq 0 ] || status=1
done
exit $status
