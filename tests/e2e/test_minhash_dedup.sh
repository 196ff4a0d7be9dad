# minhash-dedup: accuracy against exact Jaccard ground truth, the S-curve, one-process vs staged
# (1, 3, 8 shards) vs thread counts, reports, error policy, parameter checks between stages.
MD=$BIN/minhash-dedup
EVAL="python3 $ROOT/tests/e2e/minhash_eval.py"
python3 "$ROOT/tests/e2e/minhash_corpus.py" --seed 7 --base 3000 --files 10 c
inputs=(c-0*.jsonl)
[[ ${#inputs[@]} == 10 ]] || fail "corpus files: ${#inputs[@]}"

# Defaults (word 5-grams, 14x8): recall for J >= 0.85, the measured S-curve, exact copies as exact.
$MD --threads 1 "${inputs[@]}" -o kept.jsonl --removed removed.jsonl --clusters clusters.jsonl 2>stderr
expect_stderr "b×r = 14×8 \(112 hashes\).*0.80:0.924"
expect_stderr "removed: exact [0-9]+, removed: near [0-9]+"
$EVAL c-truth.tsv removed.jsonl recall 0.85 0.95
$EVAL c-truth.tsv removed.jsonl scurve 14 8 4
$EVAL c-truth.tsv removed.jsonl exact
# Kept documents are input lines byte for byte, and kept + removed = all.
total=$(cat "${inputs[@]}" | wc -l)
[[ $(($(wc -l < kept.jsonl) + $(wc -l < removed.jsonl))) == "$total" ]] || fail "kept + removed != $total"
cat "${inputs[@]}" | sort > all.sorted
[[ -z $(sort kept.jsonl | comm -23 - all.sorted) ]] || fail "a kept line is not an input line"
# Every cluster line: size = members, kept among members; removed ids appear in clusters.
python3 - <<'PY'
import json
cl = [json.loads(l) for l in open("clusters.jsonl")]
rem = [json.loads(l) for l in open("removed.jsonl")]
members = {}
for c in cl:
    assert c["size"] == len(c["members"]) >= 2, c
    assert c["kept"] in c["members"], c
    for m in c["members"]:
        members[m] = c["cluster"]
for r in rem:
    assert members[r["id"]] == r["cluster"] == members[r["duplicate_of"]], r
assert sum(c["size"] - 1 for c in cl) == len(rem)
PY

# --verify: precision at the verification threshold, recall kept.
$MD -q "${inputs[@]}" -o kept.v.jsonl --removed removed.v.jsonl --verify 0.8
$EVAL c-truth.tsv removed.v.jsonl precision 0.8 0.99
$EVAL c-truth.tsv removed.v.jsonl recall 0.85 0.95
# --verify within a 1 MB budget works in rounds and decides every pair as one round does.
$MD "${inputs[@]}" -o kept.vr.jsonl --removed removed.vr.jsonl --verify 0.8 --verify-memory 1 2>stderr
expect_stderr "verified in [0-9]+ rounds"
same_file kept.v.jsonl kept.vr.jsonl
same_file removed.v.jsonl removed.vr.jsonl

# Threads never change anything; neither does stdin.
$MD -q --threads 2 "${inputs[@]}" -o kept.t2.jsonl --removed removed.t2.jsonl
same_file kept.jsonl kept.t2.jsonl
same_file removed.jsonl removed.t2.jsonl
cat "${inputs[@]}" | $MD -q --threads 2 --id-key nope > kept.stdin.jsonl
same_file kept.jsonl kept.stdin.jsonl

# Staged runs with 1, 3 and 8 shards keep exactly the documents of the one-process run.
sort kept.jsonl > kept.sorted
for n in 1 3 8; do
  rm -rf wd
  for ((s = 0; s < n; s++)); do $MD -q --threads 1 --stage signatures --shard $s/$n --work-dir wd "${inputs[@]}"; done
  $MD -q --threads 2 --stage cluster --work-dir wd --removed removed.s$n.jsonl --clusters clusters.s$n.jsonl
  same_file removed.jsonl removed.s$n.jsonl
  same_file clusters.jsonl clusters.s$n.jsonl
  for ((s = 0; s < n; s++)); do
    SLURM_ARRAY_TASK_ID=$s SLURM_ARRAY_TASK_COUNT=$n SLURM_ARRAY_TASK_MIN=0 $MD -q --shard slurm --stage filter --work-dir wd "${inputs[@]}" -o kept.s$n.$s.jsonl
  done
  cat kept.s$n.*.jsonl | sort | cmp - kept.sorted || fail "staged with $n shards kept other documents"
done
# Staged --verify equals one-process --verify.
$MD -q --stage cluster --work-dir wd --verify 0.8 "${inputs[@]}" --removed removed.sv.jsonl
same_file removed.v.jsonl removed.sv.jsonl

# A cluster stage refuses band files made with other parameters (shard 1 of 2 with 6 rows).
rm -rf wd2
$MD -q --stage signatures --shard 0/2 --work-dir wd2 "${inputs[@]}"
$MD -q --stage signatures --shard 1/2 --rows 6 --work-dir wd2 "${inputs[@]}"
expect_exit 1 $MD --stage cluster --work-dir wd2
expect_stderr "shard-00001-of-00002.bin: made with different parameters \(rows=6 in the file vs 8 here\)"
# ... and a filter stage refuses a cluster result made with other options.
expect_exit 1 $MD --stage filter --shard 0/3 --work-dir wd --ngram 4 "${inputs[@]}"
expect_stderr "removed.bin: made with different parameters \(ngram=5 in the file vs 4 here\)"
expect_exit 1 $MD --stage cluster --work-dir empty-dir
expect_stderr "no signature files"

# --threshold picks b x r from the S-curve and prints it.
$MD --threshold 0.8 --num-perm 128 "${inputs[0]}" -o /dev/null 2>stderr
expect_stderr "b×r = 9×13 \(117 hashes\)"

# --keep longest keeps the longest member; char shingles run.
$MD -q --keep longest --no-near "${inputs[@]}" --removed removed.long.jsonl -o /dev/null
python3 - <<'PY'
import json, glob
length = {}
for f in sorted(glob.glob("c-0*.jsonl")):
    for line in open(f):
        length[json.loads(line)["id"]] = len(line)
for l in open("removed.long.jsonl"):
    r = json.loads(l)
    assert r["match"] == "exact" and length[r["duplicate_of"]] >= length[r["id"]], r
PY
$MD -q --shingle char --ngram 24 "${inputs[@]}" --removed removed.char.jsonl -o /dev/null
$EVAL c-truth.tsv removed.char.jsonl exact

# Bad input: invalid JSON names the line; --on-error=skip counts it and dedups the rest.
head -5 "${inputs[0]}" > bad.jsonl
echo '{"id": "broken", "text": "unterminated}' >> bad.jsonl
head -5 "${inputs[0]}" >> bad.jsonl
expect_exit 1 $MD -i bad.jsonl -o never.jsonl
expect_stderr "^minhash-dedup: bad.jsonl:6: invalid JSON"
[[ ! -e never.jsonl ]] || fail "a failed run left its output"
expect_exit 0 $MD --on-error=skip -i bad.jsonl -o skip.jsonl --removed skip.removed.jsonl
expect_stderr "skipped: invalid JSON 1"
expect_stderr "kept 5, removed: exact 5"
head -5 "${inputs[0]}" | cmp - skip.jsonl || fail "skip kept the wrong lines"
# A missing text field, and usage errors.
echo '{"id": 1, "body": "x"}' > nofield.jsonl
expect_exit 1 $MD -i nofield.jsonl
expect_stderr "nofield.jsonl:1: no \"text\" field"
expect_exit 2 $MD --bands 0 -i bad.jsonl
expect_exit 2 $MD --threshold 0.8 --bands 4 -i bad.jsonl
expect_exit 2 $MD --stage cluster
