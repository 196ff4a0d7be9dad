# Every index file build-indexmap writes is what gpt-train loads: with the same data flags, under
# each cache layout (classic names next to the data or in --data-cache-path, md5 names in the
# cache folder or in index-cache, a blend, per-split data), gpt-train trains without writing or rewriting any file
# (the tree listed with sizes, inodes and times is the same before and after). Index maps left from
# an earlier tokenization of the same prefix are refused with one message, not read out of bounds.
G=$GOLDEN/megatron
P=fortunes-en_text_document
BIM=$BIN/build-indexmap
GT=$BIN/gpt-train
data=(--split 969,30,1 --seq-length 32 --train-iters 3 --global-batch-size 2 --eval-interval 2)
model=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --micro-batch-size 1 --lr 1e-3
       --log-interval 1 --cpu-threads 2 --vocab-file "$VOCAB" --merge-file "$MERGES")
tree() { find . -printf '%p %s %i %T@\n' | LC_ALL=C sort; }

# case NAME FILES BIM-FLAGS... -- GT-FLAGS...: a fresh directory with the dataset; build-indexmap
# writes FILES index files; gpt-train (same data flags) then trains 3 iterations and writes none.
case_() {
  local name=$1 files=$2; shift 2
  local bim=() gt=()
  while [[ $1 != -- ]]; do bim+=("$1"); shift; done; shift; gt=("$@")
  mkdir "$name" && cp "$G/$P.bin" "$G/$P.idx" "$name/" && ln -s $P.bin "$name/b.bin" && ln -s $P.idx "$name/b.idx"
  (
    cd "$name"
    "$BIM" -q "${data[@]}" "${bim[@]}"
    local got; got=$(find . -name '*.npy' -o -name '*.dsc' | wc -l)
    [[ $got == "$files" ]] || { find . | sort; fail "$name: build-indexmap wrote $got index files, expected $files"; }
    tree > ../"$name".before
    "$GT" "${model[@]}" "${data[@]}" "${gt[@]}" > ../"$name".log
    tree > ../"$name".after
  )
  [[ $(grep -Ec ' iteration +[0-9]+/ +3 \|' "$name.log") == 3 ]] || { cat "$name.log"; fail "$name: gpt-train did not train"; }
  diff "$name.before" "$name.after" || fail "$name: gpt-train wrote index files build-indexmap had written"
}

# valid = (3 // 2 + 1) x 1 x 2 = 4 samples, test none: 2 splits x 3 arrays (+ a .dsc each for md5).
v=(--eval-iters 1)
case_ beside 6 --data-path $P "${v[@]}" --test-samples 0 -- --data-path $P "${v[@]}"
case_ cache 6 --data-path $P "${v[@]}" --test-samples 0 --data-cache-path c -- \
  --data-path $P "${v[@]}" --data-cache-path c
case_ md5 8 --data-path $P "${v[@]}" --test-samples 0 --data-cache-path c --cache-naming md5 -- \
  --data-path $P "${v[@]}" --data-cache-path c
case_ md5-default 8 --data-path ./$P "${v[@]}" --test-samples 0 --cache-naming md5 -- --data-path ./$P "${v[@]}"
[[ -n $(ls md5-default/index-cache/*.dsc) ]] || fail "md5 names without a cache folder: not in index-cache"
# A blend: 2 component maps (train only) and the blending indices of the 6 samples gpt-train reads.
blend="0.4 $P 0.6 b"
case_ blend 8 --data-path "$blend" --eval-iters 0 --blend-size 6 -- --data-path "$blend" --eval-iters 0
# Per-split data: a train blend and a valid prefix, each read whole (train 2 component maps and the
# blending indices, valid 1 map); --test-data-path is checked, not read.
case_ per-split 11 --train-data-path "$blend" --valid-data-path b "${v[@]}" --test-samples 0 --blend-size 6 -- \
  --train-data-path "$blend" --valid-data-path b --test-data-path $P "${v[@]}"
grep -q "^ > train data: 0.4 $P 0.6 b, read whole" per-split.log || { cat per-split.log; fail "per-split: data line"; }
grep -q "^ > valid data: b, read whole" per-split.log || fail "per-split: valid data line"
grep -q "^ > train data: $P, --split '969,30,1' (legacy rounding)" beside.log || fail "--data-path: data line"

# The listing sees a write: without build-indexmap, gpt-train saves its maps (classic names).
mkdir fresh && cp "$G/$P.bin" "$G/$P.idx" fresh/
(cd fresh && tree > ../fresh.before && "$GT" "${model[@]}" "${data[@]}" --data-path $P --eval-iters 1 > ../fresh.log &&
  tree > ../fresh.after)
! diff -q fresh.before fresh.after > /dev/null || fail "gpt-train without cached maps wrote nothing"
[[ $(ls fresh/*_indexmap_*.npy | wc -l) == 6 ]] || fail "gpt-train's own maps"
for f in beside/*_indexmap_*.npy; do same_file "$f" "fresh/$(basename "$f")"; done

# Retokenized data under the same prefix: the cached maps no longer fit it. gpt-train and
# --print-sample stop with one message naming the maps (they used to read outside the data).
zstd -qdc "$GOLDEN/fortunes-en.jsonl.zst" > all.jsonl && head -200 all.jsonl > few.jsonl
$BIN/jsonl-to-mmap -q -i few.jsonl --output-prefix fortunes-en --vocab-file "$VOCAB" --merge-file "$MERGES" \
  --append-eod
mv $P.bin $P.idx beside/
cd beside
expect_exit 1 "$GT" "${model[@]}" "${data[@]}" --data-path $P --eval-iters 1
expect_stderr "${P}_train_indexmap_6ns_32sl_1234s_doc_idx.npy: the index maps do not match the data"
expect_exit 1 "$BIM" "${data[@]}" --data-path $P --eval-iters 1 --print-sample 0
expect_stderr "do not match the data"
# build-indexmap --force rebuilds them for the new data; gpt-train then trains.
"$BIM" -q "${data[@]}" --data-path $P --eval-iters 1 --test-samples 0 --force
"$GT" "${model[@]}" "${data[@]}" --data-path $P --eval-iters 1 > ../retok.log
# --cache-naming takes classic or md5 only: a usage error before any work.
expect_exit 2 "$GT" "${model[@]}" "${data[@]}" --data-path $P --eval-iters 1 --cache-naming sha
expect_stderr "cache-naming must be classic or md5"
