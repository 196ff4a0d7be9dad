# build-indexmap: every golden index map (driven by its manifest) and every golden blend byte for
# byte; Megatron-style sample counts; md5 cache names; --print-sample; clear errors and usage errors.
G=$GOLDEN/megatron
BIM=$BIN/build-indexmap
cp "$G/fortunes-en_text_document.bin" "$G/fortunes-en_text_document.idx" .
P=fortunes-en_text_document

# Every case of indexmaps/manifest.json, one split per run (the others get 0 samples: skipped).
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1])):
    print(c["name"], c["split"], c["N"], c["L"], c["seed"], c["files"].split("{")[0])
' "$G/indexmaps/manifest.json" > cases.txt
[[ $(wc -l < cases.txt) -ge 8 ]] || fail "manifest has $(wc -l < cases.txt) cases"
while read -r name split n l seed base; do
  $BIM -q --data-path $P --split "$split" --seq-length "$l" --seed "$seed" --"$name"-samples "$n"
  for k in doc sample shuffle; do same_file "${base}${k}_idx.npy" "$G/indexmaps/${base}${k}_idx.npy"; done
done < cases.txt
# Only the requested splits were written (a count of 0 skips a split).
[[ $(ls *_indexmap_*.npy | wc -l) == $((3 * $(wc -l < cases.txt))) ]] || fail "unexpected index-map files"

# Megatron's schedule: train 250x8 = 2000, valid (250//1000+1)x25x8 = 200, test 20 (direct override),
# in one run, under --data-cache-path.
$BIM -q --data-path $P --split 969,30,1 --seq-length 128 --train-iters 250 --global-batch-size 8 \
  --eval-interval 1000 --eval-iters 25 --test-samples 20 --data-cache-path sched
for s in train_indexmap_2000ns valid_indexmap_200ns test_indexmap_20ns; do
  for k in doc sample shuffle; do
    same_file "sched/${P}_${s}_128sl_1234s_${k}_idx.npy" "$G/indexmaps/${P}_${s}_128sl_1234s_${k}_idx.npy"
  done
done

# md5 names (2023 scheme): the .dsc text hashes to the file name; arrays as the classic ones.
$BIM -q --data-path $P --split 969,30,1 --seq-length 128 --train-samples 2000 --cache-naming md5 --data-cache-path md5c
dsc=$(ls md5c/*.dsc)
h=$(basename "$dsc" .dsc)
[[ $(md5sum < "$dsc" | cut -d' ' -f1) == "$h" ]] || fail "md5 of the description is not the file name"
grep -qx "Split 969,30,1" "$dsc" || fail "description lacks the split"
same_file "md5c/${h}_doc_idx.npy" "$G/indexmaps/${P}_train_indexmap_2000ns_128sl_1234s_doc_idx.npy"
same_file "md5c/${h}_shuffle_idx.npy" "$G/indexmaps/${P}_train_indexmap_2000ns_128sl_1234s_shuffle_idx.npy"

# Blends (blending/manifest.json): per-component sample counts in the component map names, the
# blending indices of the manifest's size byte for byte (--blend-size), and Megatron's own size
# (sum of the component counts) extending them.
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1])):
    print(c["size"], c["files"].split("{")[0], " ".join(str(w) for w in c["weights"]), "|", " ".join(str(n) for n in c["component_train_samples"]))
' "$G/blending/manifest.json" > blends.txt
[[ $(wc -l < blends.txt) == 3 ]] || fail "blending manifest"
while IFS='|' read -r head counts; do
  read -r size base weights <<< "$head"
  rm -rf blend && mkdir blend
  words=(); i=0
  for w in $weights; do
    ln -s "$PWD/$P.bin" blend/c$i.bin; ln -s "$PWD/$P.idx" blend/c$i.idx
    words+=("$w" "blend/c$i"); i=$((i + 1))
  done
  $BIM -q --data-path "${words[*]}" --split 100,0,0 --seq-length 128 --train-samples "$size" --blend-size "$size"
  same_file "blend/${base}dataset_index.npy" "$G/blending/${base}dataset_index.npy"
  same_file "blend/${base}dataset_sample_index.npy" "$G/blending/${base}dataset_sample_index.npy"
  i=0; total=0
  for n in $counts; do
    [[ -e blend/c${i}_train_indexmap_${n}ns_128sl_1234s_doc_idx.npy ]] || fail "component $i of $base: no ${n}ns map"
    i=$((i + 1)); total=$((total + n))
  done
  $BIM -q --data-path "${words[@]}" --split 100,0,0 --seq-length 128 --train-samples "$size"
  long="blend/${base%_${size}_}_${total}_"
  [[ -e ${long}dataset_index.npy ]] || fail "no blend of size $total"
  cmp -s -i 128:128 -n $((2 * size)) "${long}dataset_index.npy" "$G/blending/${base}dataset_index.npy" \
    || fail "size-$total blend does not extend the golden one"
  cmp -s -i 128:128 -n $((8 * size)) "${long}dataset_sample_index.npy" "$G/blending/${base}dataset_sample_index.npy" \
    || fail "size-$total blend sample index does not extend the golden one"
done < blends.txt

# --print-sample: L+1 tokens of the shuffled sample, and its text with a vocabulary; writes nothing.
mkdir ps && ln -s "$PWD/$P.bin" ps/d.bin && ln -s "$PWD/$P.idx" ps/d.idx
$BIM --data-path ps/d --seq-length 128 --train-samples 2000 --print-sample 5 --vocab-file "$VOCAB" \
  --merge-file "$MERGES" > sample.txt
grep -q '^train sample 5: ps/d sample 5, 129 tokens$' sample.txt || { cat sample.txt; fail "--print-sample"; }
[[ $(grep '^ids:' sample.txt | wc -w) == 130 ]] || fail "--print-sample ids"
grep -q '^text:$' sample.txt || fail "--print-sample text"
[[ $(ls ps | wc -l) == 2 ]] || fail "--print-sample wrote files"

# An empty split: one message naming the split, the counts and the flag; exit 1.
expect_exit 1 $BIM -q --data-path $P --split 100,0,0 --seq-length 128 --valid-samples 10
expect_stderr "valid.*no sequences.*--split"
expect_stderr "14805 sequences"
# A missing dataset, a corrupt .idx, a corrupt cached map: exit 1 naming the file.
expect_exit 1 $BIM -q --data-path nothere --seq-length 128 --train-samples 10
expect_stderr "nothere.idx"
head -c 5000 $P.idx > cut.idx && cp $P.bin cut.bin
expect_exit 1 $BIM -q --data-path cut --seq-length 128 --train-samples 10
expect_stderr "cut.idx: size"
f=${P}_train_indexmap_2000ns_128sl_1234s_sample_idx.npy
head -c 300 "$G/indexmaps/$f" > "$f"
expect_exit 1 $BIM -q --data-path $P --split 969,30,1 --seq-length 128 --train-samples 2000
expect_stderr "$f"
# ... which --force rebuilds.
$BIM -q --data-path $P --split 969,30,1 --seq-length 128 --train-samples 2000 --force
same_file "$f" "$G/indexmaps/$f"

# --split-rounding core: the maps today's Megatron-core (pretrain_gpt.py) wrote for the bundled
# sample, byte for byte (its valid and test maps were asked for 0 samples: one epoch, as for 1).
# Legacy rounding gives the train split one sequence fewer here, so its maps differ.
C=$GOLDEN/megatron-core
$BIN/jsonl-to-mmap -q -i "$ROOT/data/sample/python-docs.jsonl.zst" --output-prefix docs \
  --vocab-file "$ROOT/data/gpt2/vocab.json" --merge-file "$ROOT/data/gpt2/merges.txt" --append-eod
D=docs_text_document
$BIM -q --data-path $D --split 969,30,1 --split-rounding core --seq-length 256 --train-samples 48 \
  --valid-samples 1 --test-samples 1 --data-cache-path core
for s in train valid test; do
  n=1; [[ $s == train ]] && n=48
  same_file "core/${D}_${s}_indexmap_${n}ns_256sl_1234s_doc_idx.npy" "$C/python-docs_${s}_document_index.npy"
  same_file "core/${D}_${s}_indexmap_${n}ns_256sl_1234s_sample_idx.npy" "$C/python-docs_${s}_sample_index.npy"
  same_file "core/${D}_${s}_indexmap_${n}ns_256sl_1234s_shuffle_idx.npy" "$C/python-docs_${s}_shuffle_index.npy"
done
$BIM -q --data-path $D --split 969,30,1 --seq-length 256 --train-samples 48 --data-cache-path legacy
cmp -s "legacy/${D}_train_indexmap_48ns_256sl_1234s_doc_idx.npy" "$C/python-docs_train_document_index.npy" &&
  fail "legacy rounding gave Megatron-core's train split"
# The legacy maps left under the same classic names are refused when core's ranges are asked for.
expect_exit 1 $BIM --data-path $D --split 969,30,1 --split-rounding core --seq-length 256 --train-samples 48 \
  --data-cache-path legacy
expect_stderr "not whole epochs of the split"
expect_exit 2 $BIM --data-path $D --seq-length 256 --train-samples 48 --split-rounding newest
# Megatron-core reads the numbers whatever separates them; legacy splits on commas only.
$BIM -q --data-path $D --split "969 30 1" --split-rounding core --seq-length 256 --train-samples 48 \
  --valid-samples 1 --test-samples 1 --data-cache-path core-blank
same_file "core-blank/${D}_train_indexmap_48ns_256sl_1234s_shuffle_idx.npy" "$C/python-docs_train_shuffle_index.npy"
expect_exit 2 $BIM --data-path $D --split "969 30 1" --seq-length 256 --train-samples 48
expect_stderr "is not a number"

# A blend under --split-rounding core: Megatron-core asks each component for ceil(ceil(N x w) x 1.005)
# samples and blends sum(ceil(N x w)) of them (legacy: ceil(N x w x 1.005), so 15 and 34 here where
# core builds 16 and 35). Every component map and blending index Megatron-core's builder wrote for
# "0.3 docs 0.7 fortunes" at 48/6/2 samples, byte for byte.
CB=$C/blend
ln -s "$G/fortunes-en_text_document.bin" fortunes.bin; ln -s "$G/fortunes-en_text_document.idx" fortunes.idx
$BIM -q --data-path "0.3 $D 0.7 fortunes" --split 969,30,1 --split-rounding core --seq-length 256 \
  --train-samples 48 --valid-samples 6 --test-samples 2 --data-cache-path core-blend
for s in train valid test; do
  d=$(tr -d ' \n' < "$CB/docs_${s}_description.txt" | grep -o '"num_samples":[0-9]*' | cut -d: -f2)
  f=$(tr -d ' \n' < "$CB/fortunes_${s}_description.txt" | grep -o '"num_samples":[0-9]*' | cut -d: -f2)
  n=$(tr -d ' \n' < "$CB/blend_${s}_description.txt" | grep -o '"size":[0-9]*' | cut -d: -f2)
  for m in doc:document sample:sample shuffle:shuffle; do
    same_file "core-blend/${D}_${s}_indexmap_${d}ns_256sl_1234s_${m%%:*}_idx.npy" "$CB/docs_${s}_${m#*:}_index.npy"
    same_file "core-blend/fortunes_${s}_indexmap_${f}ns_256sl_1234s_${m%%:*}_idx.npy" "$CB/fortunes_${s}_${m#*:}_index.npy"
  done
  same_file "core-blend/blend_0.3_0.7_${n}_dataset_index.npy" "$CB/blend_${s}_dataset_index.npy"
  same_file "core-blend/blend_0.3_0.7_${n}_dataset_sample_index.npy" "$CB/blend_${s}_dataset_sample_index.npy"
done
[[ -e core-blend/${D}_train_indexmap_16ns_256sl_1234s_doc_idx.npy ]] || fail "core blend: docs train is not 16 samples"
# Megatron-core's --mid-level-dataset-surplus 0.1: components of 17 and 38 samples, the same blend.
$BIM -q --data-path "0.3 $D 0.7 fortunes" --split 969,30,1 --split-rounding core --seq-length 256 \
  --train-samples 48 --mid-level-dataset-surplus 0.1 --data-cache-path surplus
[[ -e surplus/${D}_train_indexmap_17ns_256sl_1234s_doc_idx.npy && -e surplus/fortunes_train_indexmap_38ns_256sl_1234s_doc_idx.npy ]] \
  || { ls surplus; fail "--mid-level-dataset-surplus 0.1: not 17 and 38 samples"; }
same_file surplus/blend_0.3_0.7_49_dataset_index.npy "$CB/blend_train_dataset_index.npy"
expect_exit 2 $BIM --data-path "0.3 $D 0.7 fortunes" --seq-length 256 --train-samples 48 --mid-level-dataset-surplus 0.1
expect_stderr "is Megatron-core's"
$BIM -q --data-path "0.3 $D 0.7 fortunes" --split 969,30,1 --seq-length 256 --train-samples 48 \
  --data-cache-path legacy-blend
[[ -e legacy-blend/${D}_train_indexmap_15ns_256sl_1234s_doc_idx.npy ]] || fail "legacy blend: docs train is not 15 samples"

# Per-split data (Megatron's --train-data-path and its kin; --split does not apply): each split reads
# its datasets whole. What Megatron-core's builder wrote for a train blend and a valid prefix, byte
# for byte; the test split, without data, is not built.
PS=$C/per-split
$BIM -q --train-data-path "0.3 $D 0.7 fortunes" --valid-data-path fortunes --split-rounding core \
  --seq-length 256 --train-samples 48 --valid-samples 6 --test-samples 2 --data-cache-path per-split
for m in doc:document sample:sample shuffle:shuffle; do
  same_file "per-split/${D}_train_indexmap_16ns_256sl_1234s_${m%%:*}_idx.npy" "$PS/docs_train_${m#*:}_index.npy"
  same_file "per-split/fortunes_train_indexmap_35ns_256sl_1234s_${m%%:*}_idx.npy" "$PS/fortunes_train_${m#*:}_index.npy"
  same_file "per-split/fortunes_valid_indexmap_6ns_256sl_1234s_${m%%:*}_idx.npy" "$PS/fortunes_valid_${m#*:}_index.npy"
done
same_file per-split/blend_0.3_0.7_49_dataset_index.npy "$PS/blend_train_dataset_index.npy"
same_file per-split/blend_0.3_0.7_49_dataset_sample_index.npy "$PS/blend_train_dataset_sample_index.npy"
[[ -z $(ls per-split | grep _test_) ]] || fail "a test split was built without --test-data-path"
expect_exit 2 $BIM --data-path $D --valid-data-path fortunes --seq-length 256 --train-samples 48
expect_stderr "exclude each other"
expect_exit 2 $BIM --train-data-path "0.3 $D fortunes" --seq-length 256 --train-samples 48
expect_stderr "--train-data-path: 3 words"

# Prefixes without weights (Megatron-core only): each dataset one epoch of its split, blended by its
# samples. What Megatron-core's builder wrote for --data-path "docs fortunes", byte for byte; legacy
# Megatron refuses them.
UW=$C/unweighted
$BIM -q --data-path $D fortunes --split 969,30,1 --split-rounding core --seq-length 256 \
  --train-samples 48 --valid-samples 6 --test-samples 2 --data-cache-path unweighted
for s in train valid test; do
  for m in doc:document sample:sample shuffle:shuffle; do
    same_file "unweighted/${D}_${s}_indexmap_1ns_256sl_1234s_${m%%:*}_idx.npy" "$UW/docs_${s}_${m#*:}_index.npy"
    same_file "unweighted/fortunes_${s}_indexmap_1ns_256sl_1234s_${m%%:*}_idx.npy" "$UW/fortunes_${s}_${m#*:}_index.npy"
  done
done
for b in train:10513_2943_48 valid:1196_39_6 test:14_1_2; do
  same_file "unweighted/blend_sizes_${b#*:}_dataset_index.npy" "$UW/blend_${b%%:*}_dataset_index.npy"
  same_file "unweighted/blend_sizes_${b#*:}_dataset_sample_index.npy" "$UW/blend_${b%%:*}_dataset_sample_index.npy"
done
expect_exit 2 $BIM --data-path $D fortunes --split 969,30,1 --seq-length 256 --train-samples 48
expect_stderr "prefixes without weights are Megatron-core's \(--split-rounding core\)"

# The same lists from files (Megatron-core's --data-args-path, --per-split-data-args-path): the same maps.
printf '0.3 %s\n0.7 fortunes\n' $D > data-args.txt
$BIM -q --data-args-path data-args.txt --split 969,30,1 --split-rounding core --seq-length 256 \
  --train-samples 48 --valid-samples 6 --test-samples 2 --data-cache-path from-file
for f in core-blend/*.npy; do same_file "from-file/${f#core-blend/}" "$f"; done
printf '{"train": "0.3 %s 0.7 fortunes", "valid": ["fortunes"], "test": null}\n' $D > per-split.json
$BIM -q --per-split-data-args-path per-split.json --split-rounding core --seq-length 256 \
  --train-samples 48 --valid-samples 6 --test-samples 2 --data-cache-path per-split-file
for f in per-split/*.npy; do same_file "per-split-file/${f#per-split/}" "$f"; done
expect_exit 1 $BIM --data-args-path missing.txt --seq-length 256 --train-samples 48
expect_stderr "missing.txt: cannot open"
echo '{"train": "x", "valid": 3}' > bad.json
expect_exit 1 $BIM --per-split-data-args-path bad.json --seq-length 256 --train-samples 48
expect_stderr 'bad.json: "valid" must be a string, a list of strings or null'
echo '{"train": "x"' > broken.json
expect_exit 1 $BIM --per-split-data-args-path broken.json --seq-length 256 --train-samples 48
expect_stderr "broken.json: not JSON"
expect_exit 2 $BIM --data-args-path data-args.txt --data-path $D --seq-length 256 --train-samples 48
expect_stderr "exclude each other"

# Usage errors: exit 2.
expect_exit 2 $BIM --data-path $P --train-samples 10
expect_stderr "seq-length"
expect_exit 2 $BIM --data-path $P --seq-length 128
expect_stderr "no samples requested"
expect_exit 2 $BIM --data-path "0.3 $P 0.7" --seq-length 128 --train-samples 10
expect_exit 2 $BIM --data-path $P --seq-length 128 --train-samples 10 --cache-naming sha
expect_exit 2 $BIM --data-path $P --seq-length 128 --train-iters 10
expect_exit 2 $BIM --data-path $P --seq-length 128 --train-samples 10 --split abc
expect_exit 2 $BIM --data-path $P --seq-length 128 --train-samples 10 --bogus
