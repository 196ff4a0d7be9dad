# Faults at every commit point: each writer is killed (SIGKILL, by strace's fault injection) at each of
# its renames over an older output of the same name; afterwards no valid-looking wrong output may
# exist (only the old output, the new one, or an incomplete set that readers refuse) and a rerun must
# succeed. Then a full disk (a small tmpfs) and two concurrent writers on one output.
command -v strace > /dev/null || fail "strace is not installed (scripts/install-deps.sh installs it)"
zstd -dc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl
head -60 all.jsonl > a.jsonl
head -150 all.jsonl > b.jsonl
TOK=(--vocab-file "$VOCAB" --merge-file "$MERGES")

# renames CMD...: how many rename(2) calls the command makes (it runs to completion).
renames() { strace -f -qq -e trace=rename -o rename.log "$@" > /dev/null 2>&1; grep -c 'rename(' rename.log; }
# kill_at N CMD...: runs CMD, killing it with SIGKILL at its N-th rename (before the rename happens).
kill_at() {
  local n=$1 rc=0; shift
  # (through an inner bash, whose "Killed" notice goes to /dev/null with the rest)
  bash -c '"$@"; exit $?' _ strace -f -qq -o /dev/null -e trace=rename -e inject=rename:signal=SIGKILL:when=$n "$@" \
    > /dev/null 2>&1 || rc=$?
  [[ $rc != 0 ]] || fail "not killed at rename $n: $*"
}
# is_copy FILE REF: FILE exists and is identical to REF.
is_copy() { [[ -e $1 ]] && cmp -s "$1" "$2"; }

# --- jsonl-to-mmap: PREFIX.bin / PREFIX.idx -------------------------------------------------------
kill_jsonl_to_mmap() {
  $BIN/jsonl-to-mmap -q -i a.jsonl --output-prefix old "${TOK[@]}"
  $BIN/jsonl-to-mmap -q -i b.jsonl --output-prefix new "${TOK[@]}"
  n=$(renames $BIN/jsonl-to-mmap -q -i b.jsonl --output-prefix probe "${TOK[@]}")
  [[ $n == 2 ]] || fail "jsonl-to-mmap made $n renames, expected 2"
  for ((k = 1; k <= n; k++)); do
    rm -f ds_* .ds_*
    cp old_text_document.bin ds_text_document.bin
    cp old_text_document.idx ds_text_document.idx
    kill_at $k $BIN/jsonl-to-mmap -q -i b.jsonl --output-prefix ds "${TOK[@]}"
    if [[ -e ds_text_document.idx ]]; then
      { is_copy ds_text_document.idx old_text_document.idx && is_copy ds_text_document.bin old_text_document.bin; } ||
        { is_copy ds_text_document.idx new_text_document.idx && is_copy ds_text_document.bin new_text_document.bin; } ||
        fail "jsonl-to-mmap killed at rename $k left a .bin/.idx pair that is neither the old nor the new one"
    else
      expect_exit 1 $BIN/jsonl-to-mmap --info ds_text_document
    fi
    $BIN/jsonl-to-mmap -q -i b.jsonl --output-prefix ds "${TOK[@]}"
    same_file ds_text_document.bin new_text_document.bin
    same_file ds_text_document.idx new_text_document.idx
  done
}

# --- bpe-train: vocab.json + merges.txt ------------------------------------------------------------
kill_bpe_train() {
  $BIN/bpe-train -q -i a.jsonl --vocab-size 400 --output-dir tok-old
  $BIN/bpe-train -q -i a.jsonl --vocab-size 600 --output-dir tok-new
  n=$(renames $BIN/bpe-train -q -i a.jsonl --vocab-size 600 --output-dir tok-probe)
  [[ $n == 2 ]] || fail "bpe-train made $n renames, expected 2"
  for ((k = 1; k <= n; k++)); do
    rm -rf tok && cp -r tok-old tok
    kill_at $k $BIN/bpe-train -q -i a.jsonl --vocab-size 600 --output-dir tok
    if [[ -e tok/merges.txt ]]; then
      { is_copy tok/vocab.json tok-old/vocab.json && is_copy tok/merges.txt tok-old/merges.txt; } ||
        { is_copy tok/vocab.json tok-new/vocab.json && is_copy tok/merges.txt tok-new/merges.txt; } ||
        fail "bpe-train killed at rename $k left a vocab.json/merges.txt pair from two runs"
    fi
    $BIN/bpe-train -q -i a.jsonl --vocab-size 600 --output-dir tok
    same_file tok/vocab.json tok-new/vocab.json
    same_file tok/merges.txt tok-new/merges.txt
  done
  # The mismatched pairs such a kill used to leave are refused by bpe-encode, naming both files.
  expect_exit 1 $BIN/bpe-encode -q --vocab-file tok-new/vocab.json --merge-file tok-old/merges.txt -i a.jsonl
  expect_stderr "tok-new/vocab.json: .* come from no merge in tok-old/merges.txt"
  expect_exit 1 $BIN/bpe-encode -q --vocab-file tok-old/vocab.json --merge-file tok-new/merges.txt -i a.jsonl
  expect_stderr "tok-new/merges.txt:[0-9]+: .*is not in the vocabulary tok-old/vocab.json"
}

# --- JSONL outputs (every tool's -o goes through the same atomic file) ----------------------------
kill_jsonl_outputs() {
  $BIN/jsonl-cat -q -i a.jsonl -o cat-old.jsonl
  cp cat-old.jsonl cat.jsonl
  kill_at 1 $BIN/jsonl-cat -q -i b.jsonl -o cat.jsonl
  same_file cat.jsonl cat-old.jsonl
  $BIN/jsonl-cat -q -i b.jsonl -o cat.jsonl
  same_file cat.jsonl b.jsonl
  $BIN/sentence-split -q -i a.jsonl -o split-old.jsonl
  cp split-old.jsonl split.jsonl
  kill_at 1 $BIN/sentence-split -q -i b.jsonl -o split.jsonl
  same_file split.jsonl split-old.jsonl
}

# --- minhash-dedup stage files ---------------------------------------------------------------------
kill_minhash_stages() {
  MD=$BIN/minhash-dedup
  cat a.jsonl a.jsonl b.jsonl > dup.jsonl
  $MD -q --threads 1 dup.jsonl -o md-ref.jsonl
  staged() {  # the three stages into work dir $1, output $2
    $MD -q --threads 1 --stage signatures --work-dir "$1" dup.jsonl &&
      $MD -q --threads 1 --stage cluster --work-dir "$1" &&
      $MD -q --threads 1 --stage filter --work-dir "$1" dup.jsonl -o "$2"
  }
  staged md-probe md-staged.jsonl
  same_file md-staged.jsonl md-ref.jsonl
  for stage in signatures cluster filter; do
    rm -rf md-probe && mkdir md-probe
    [[ $stage == signatures ]] || $MD -q --threads 1 --stage signatures --work-dir md-probe dup.jsonl
    [[ $stage != filter ]] || $MD -q --threads 1 --stage cluster --work-dir md-probe
    args=(--stage $stage --work-dir md-probe)
    [[ $stage == cluster ]] || args+=(dup.jsonl)
    [[ $stage != filter ]] || args+=(-o md-out.jsonl)
    n=$(renames $MD -q --threads 1 "${args[@]}")
    ((n >= 1)) || fail "minhash-dedup --stage $stage made no rename"
    for ((k = 1; k <= n; k++)); do
      rm -rf md && mkdir md
      [[ $stage == signatures ]] || $MD -q --threads 1 --stage signatures --work-dir md dup.jsonl
      [[ $stage != filter ]] || $MD -q --threads 1 --stage cluster --work-dir md
      args=(--stage $stage --work-dir md)
      [[ $stage == cluster ]] || args+=(dup.jsonl)
      [[ $stage != filter ]] || args+=(-o md-out.jsonl)
      rm -f md-out.jsonl
      kill_at $k $MD -q --threads 1 "${args[@]}"
      # What the killed stage left is refused or complete: the later stages either fail or give the reference.
      if [[ $stage != filter ]]; then
        rc=0
        { [[ $stage == cluster ]] || $MD -q --threads 1 --stage cluster --work-dir md; } 2>/dev/null &&
          $MD -q --threads 1 --stage filter --work-dir md dup.jsonl -o md-out.jsonl 2>/dev/null || rc=$?
        [[ $rc != 0 ]] || same_file md-out.jsonl md-ref.jsonl
      else
        [[ ! -e md-out.jsonl ]] || fail "filter stage killed at rename $k left an output"
      fi
      # A rerun of the killed stage (and the later ones) succeeds and gives the reference.
      rm -f md-out.jsonl
      $MD -q --threads 1 "${args[@]}"
      [[ $stage == filter ]] || {
        [[ $stage == cluster ]] || $MD -q --threads 1 --stage cluster --work-dir md
        $MD -q --threads 1 --stage filter --work-dir md dup.jsonl -o md-out.jsonl
      }
      same_file md-out.jsonl md-ref.jsonl
    done
  done
}

# --- build-indexmap: doc/sample/shuffle index maps -------------------------------------------------
kill_build_indexmap() {
  BIMARGS=(--data-path new_text_document --split 100,0,0 --seq-length 16 --train-samples 40 --seed 3)
  $BIN/build-indexmap -q "${BIMARGS[@]}" --data-cache-path maps-ref
  n=$(renames $BIN/build-indexmap -q "${BIMARGS[@]}" --data-cache-path maps-probe)
  ((n >= 3)) || fail "build-indexmap made $n renames"
  for ((k = 1; k <= n; k++)); do
    rm -rf maps
    kill_at $k $BIN/build-indexmap -q "${BIMARGS[@]}" --data-cache-path maps
    $BIN/build-indexmap -q "${BIMARGS[@]}" --data-cache-path maps
    # (the killed run's hidden temporary file may remain; it is no map)
    diff -r -x '.*.tmp.*' maps maps-ref > /dev/null || fail "build-indexmap killed at rename $k: the rerun's maps differ"
  done
}

if strace -f -qq -o /dev/null true 2> /dev/null; then
  kill_jsonl_to_mmap
  kill_bpe_train
  kill_jsonl_outputs
  kill_minhash_stages
  kill_build_indexmap
else
  echo "skipped the kills at rename points: strace cannot trace here (ptrace is not permitted)"
fi

# --- A full disk: a small tmpfs (needs mount permission) -------------------------------------------
mkdir full
if mount -t tmpfs -o size=256k tmpfs full 2> /dev/null; then
  trap 'umount full 2>/dev/null || true' EXIT
  expect_exit 1 $BIN/jsonl-cat -q -i all.jsonl -o full/out.jsonl
  expect_stderr "full/out.jsonl: write error: No space left on device"
  expect_exit 1 $BIN/jsonl-to-mmap -q -i all.jsonl --output-prefix full/ds "${TOK[@]}"
  expect_stderr "No space left on device"
  expect_exit 1 $BIN/bpe-encode -q "${TOK[@]}" -i all.jsonl -o full/ids.jsonl
  [[ -z $(ls -A full) ]] || fail "a full disk left files behind: $(ls -A full)"
  # ... and once there is room, the same commands succeed.
  $BIN/jsonl-cat -q -i a.jsonl -o full/out.jsonl
  same_file full/out.jsonl a.jsonl
  umount full
  trap - EXIT
else
  echo "skipped the full-disk part: mount -t tmpfs is not permitted here"
fi

# --- Two writers on one output ---------------------------------------------------------------------
mkfifo slow
$BIN/jsonl-to-mmap -q -i slow --output-prefix two "${TOK[@]}" &
first=$!
exec 3> slow  # the first writer now waits for input while holding its output
head -5 a.jsonl >&3
for ((i = 0; i < 100; i++)); do [[ -e two_text_document.lock ]] && break; sleep 0.1; done
expect_exit 1 $BIN/jsonl-to-mmap -q -i b.jsonl --output-prefix two "${TOK[@]}"
expect_stderr "two_text_document.\{bin,idx\}: another process is writing this output .*two_text_document.lock"
cat a.jsonl >&3
exec 3>&-
wait $first
{ head -5 a.jsonl; cat a.jsonl; } | $BIN/jsonl-to-mmap -q --output-prefix two-ref "${TOK[@]}"
same_file two_text_document.bin two-ref_text_document.bin
same_file two_text_document.idx two-ref_text_document.idx
[[ ! -e two_text_document.lock ]] || fail "the lock file outlived its writer"
# bpe-train's output folder likewise.
mkfifo slow2
$BIN/bpe-train -q -i slow2 --vocab-size 300 --output-dir tok2 &
first=$!
exec 3> slow2
for ((i = 0; i < 100; i++)); do [[ -e tok2/.lock ]] && break; sleep 0.1; done
expect_exit 1 $BIN/bpe-train -q -i a.jsonl --vocab-size 300 --output-dir tok2
expect_stderr "tok2/\{vocab.json,merges.txt\}: another process is writing this output"
cat a.jsonl >&3
exec 3>&-
wait $first
[[ -s tok2/vocab.json && -s tok2/merges.txt ]] || fail "the first bpe-train wrote nothing"
