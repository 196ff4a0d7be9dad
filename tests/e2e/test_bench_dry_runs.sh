# The device benchmarks' own logic, run as their CPU dry runs (DEVICE=cpu: tiny shapes on the CPU
# backend, timings meaningless), so that a change to gpt-train's or gpt-plan's interface that
# breaks a benchmark shows here and not first on a lent GPU machine.

# planner_accuracy.sh: bandwidths measured, every row run and predicted, the tsv written.
DEVICE=cpu BIN=$BIN OUT=pa.tsv bash "$ROOT/scripts/bench/planner_accuracy.sh" 2 > pa.txt 2>&1 ||
  { cat pa.txt >&2; fail "planner_accuracy.sh 2 (DEVICE=cpu) failed"; }
[[ $(head -1 pa.tsv) == $'layout\tpredicted_ms\tmeasured_ms\tcard' ]] || fail "planner tsv header"
rows=$(tail -n +2 pa.tsv | awk -F'\t' 'NF == 4 && $2 > 0 && $3 > 0' | wc -l)
((rows >= 4)) || { cat pa.txt >&2; fail "planner tsv: $rows complete rows"; }
grep -q "predicted fastest" pa.txt || fail "planner_accuracy.sh printed no fastest-layout line"

# train_parallel.sh --part xl: P2·D2, P4 even, gpt-plan's P4 proposal and the balanced partition,
# each with its measured bubble, then the bubble check.
DEVICE=cpu BIN=$BIN bash "$ROOT/scripts/bench/train_parallel.sh" --part xl > tp.txt 2>&1 ||
  { cat tp.txt >&2; fail "train_parallel.sh --part xl (DEVICE=cpu) failed"; }
grep -q "gpt-plan proposes [0-9]*-[0-9]*-[0-9]*-[0-9]*" tp.txt || { cat tp.txt >&2; fail "gpt-plan proposed no P4 partition"; }
grep -q "the even run's report balances to" tp.txt || fail "no balanced partition"
grep -q "^P4 best uneven partition .* measured bubble" tp.txt || fail "no bubble check line"
grep -q "0 run(s) failed or timed out" tp.txt || { cat tp.txt >&2; fail "a train_parallel.sh run failed"; }
