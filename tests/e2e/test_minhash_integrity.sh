# minhash-dedup and bad input: documents reported as skipped are never written (one process and
# staged); stdin's spill file never outlives the run (SIGTERM included); messages name <stdin>.
MD=$BIN/minhash-dedup
printf '{"text":"good one here"}\n{"id":1}\n{"text":5}\n{"text":"bad \xff utf"}\n{"text": broken\n{"text":"another good document"}\n' > bad.jsonl
printf '{"text":"good one here"}\n{"text":"another good document"}\n' > want.skip
printf '{"text":"good one here"}\n{"text":"bad \xef\xbf\xbd utf"}\n{"text":"another good document"}\n' > want.replace
for mode in skip replace; do
  $MD -q --on-error $mode -i bad.jsonl -o out.$mode 2>stderr
  same_file out.$mode want.$mode
  expect_stderr "skipped: missing field 1, skipped: non-string field 1"
  rm -rf wd
  $MD -q --on-error $mode --stage signatures --work-dir wd -i bad.jsonl 2>/dev/null
  $MD -q --on-error $mode --stage cluster --work-dir wd 2>/dev/null
  $MD -q --on-error $mode --stage filter --work-dir wd -i bad.jsonl -o staged.$mode 2>/dev/null
  same_file staged.$mode want.$mode
  # stdin (spilled for the second pass) gives the same.
  $MD -q --on-error $mode -o stdin.$mode < bad.jsonl 2>/dev/null
  same_file stdin.$mode want.$mode
done

# Errors on stdin name <stdin>, not the spill file; no spill file is left.
mkdir spill
TMPDIR=$PWD/spill expect_exit 1 $MD -q < bad.jsonl
expect_stderr "^minhash-dedup: <stdin>:2: no \"text\" field"
[[ -z $(ls -A spill) ]] || fail "spill file left: $(ls -A spill)"
# SIGTERM while stdin is being read: nothing is left in the temporary folder, during or after.
mkfifo slow
TMPDIR=$PWD/spill $MD -q < slow > /dev/null 2>&1 &
pid=$!
exec 3> slow
head -1 bad.jsonl >&3
sleep 0.5
[[ -z $(ls -A spill) ]] || fail "the spill file has a name in the folder: $(ls -A spill)"
kill -TERM $pid
exec 3>&-
wait $pid || true
[[ -z $(ls -A spill) ]] || fail "SIGTERM left the spill file: $(ls -A spill)"
