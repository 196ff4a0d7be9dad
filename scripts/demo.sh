#!/usr/bin/env bash
# make demo: the whole pipeline on the bundled sample corpus (data/sample), in the order a user runs it,
# ending in a short gpt-train run (CUDA when a GPU is there, else the CPU backend).
# Prints where each output is and one summary line per stage.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
OUT=${DEMO_OUT:-$ROOT/build/demo}
SAMPLE=$ROOT/data/sample/python-docs.jsonl.zst
WIKI=$ROOT/data/sample/wiki-sample.xml.bz2
VOCAB=$ROOT/data/gpt2/vocab.json
MERGES=$ROOT/data/gpt2/merges.txt
mkdir -p "$OUT"
cd "$OUT"
rm -rf ./*_indexmap_*.npy ckpt  # index maps and checkpoint of an earlier run would be reused
stage() { printf '\n== %s\n' "$*"; }
summary=()

stage "1. clean the scraped pages: main text from HTML, URL rules, repair, language, Gopher rules (scrape-filter)"
"$BIN/scrape-filter" --html --rules gopher --lang en -i "$SAMPLE" -o filtered.jsonl.zst \
  --rejects rejects.jsonl.zst 2>&1 | tail -2
summary+=("scrape-filter  $(zstd -dc filtered.jsonl.zst | wc -l) kept, $(zstd -dc rejects.jsonl.zst | wc -l) rejected -> $OUT/filtered.jsonl.zst, $OUT/rejects.jsonl.zst")
# The pages' HTML is no longer needed downstream.
"$BIN/jsonl-cat" -q -i filtered.jsonl.zst --fields id url title text lang lang_score -o docs.jsonl.zst
summary+=("jsonl-cat      $(zstd -dc docs.jsonl.zst | wc -l) documents without their html -> $OUT/docs.jsonl.zst")

stage "2. Wikipedia articles from a MediaWiki dump (wiki-extract)"
"$BIN/wiki-extract" -i "$WIKI" -o wiki.jsonl 2>&1 | tail -1
summary+=("wiki-extract   $(wc -l < wiki.jsonl) articles -> $OUT/wiki.jsonl")

stage "3. remove exact and near-duplicate documents (minhash-dedup)"
# The sample has no duplicates of its own: add mirrors of every 20th page (another host, a changed
# footer), as a crawl of a mirrored site would hold; minhash-dedup should remove all of them.
zstd -dc docs.jsonl.zst | python3 -c '
import json, sys
for i, line in enumerate(sys.stdin):
    if i % 20 == 0:
        d = json.loads(line)
        d["id"] = str(d["id"]) + "-mirror"
        d["url"] = d["url"].replace("://", "://mirror.", 1)
        d["text"] += "\n\nMirrored from the Python documentation, retrieved 2026-11-01."
        print(json.dumps(d, ensure_ascii=False))' > mirrors.jsonl
"$BIN/minhash-dedup" -i docs.jsonl.zst -i wiki.jsonl -i mirrors.jsonl --removed removed.jsonl \
  -o dedup.jsonl.zst 2>&1 | tail -1
summary+=("minhash-dedup  $(zstd -dc dedup.jsonl.zst | wc -l) kept, $(wc -l < removed.jsonl) removed ($(wc -l < mirrors.jsonl) mirrors added) -> $OUT/dedup.jsonl.zst")

stage "4. split the documents into sentences, a sentence-level dataset (sentence-split, jsonl-to-mmap)"
"$BIN/sentence-split" -q -i dedup.jsonl.zst -o sentences.jsonl.zst
"$BIN/jsonl-to-mmap" -q -i sentences.jsonl.zst --split-sentences --output-prefix sentences \
  --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod
"$BIN/jsonl-to-mmap" --info sentences_text_sentence > sentence-info.txt
summary+=("sentence-split $(awk '/^sequences/{print $2}' sentence-info.txt) sentences -> $OUT/sentences_text_sentence.{bin,idx}")

stage "5. train a small BPE vocabulary on the corpus (bpe-train)"
"$BIN/bpe-train" -q -i dedup.jsonl.zst --vocab-size 4096 --special-tokens '<|endoftext|>' --output-dir own-vocab
summary+=("bpe-train      $(($(wc -l < own-vocab/merges.txt) - 1)) merges -> $OUT/own-vocab/{vocab.json,merges.txt}")

stage "6. tokenize with GPT-2's vocabulary (bpe-encode)"
"$BIN/bpe-encode" -q -i dedup.jsonl.zst --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod -o ids.jsonl.zst
summary+=("bpe-encode     $(zstd -dc ids.jsonl.zst | wc -l) documents -> $OUT/ids.jsonl.zst")

stage "7. write a Megatron indexed dataset (jsonl-to-mmap)"
"$BIN/jsonl-to-mmap" -q --input ids.jsonl.zst --output-prefix docs --json-keys text
"$BIN/jsonl-to-mmap" --info docs_text_document | tee info.txt
summary+=("jsonl-to-mmap  $(awk '/^tokens/{print $2}' info.txt) tokens -> $OUT/docs_text_document.{bin,idx}")

stage "8. build the index maps Megatron and gpt-train read (build-indexmap)"
"$BIN/build-indexmap" -q --data-path docs_text_document --split 90,5,5 --seq-length 128 --seed 1234 \
  --train-samples 2000 --valid-samples 200 --test-samples 20
summary+=("build-indexmap $(ls docs_text_document_*indexmap*.npy | wc -l) .npy files -> $OUT/docs_text_document_*_indexmap_*.npy")

stage "9. a short training run (gpt-train)"
device=cpu
# (help captured first: `gpt-train --help | grep -q` can die of SIGPIPE under pipefail)
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && [[ $("$BIN/gpt-train" --help) == *cuda* ]] && device=cuda
if [[ $device == cuda ]]; then
  model=(--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 128 --max-position-embeddings 1024
         --micro-batch-size 16 --global-batch-size 32 --train-iters 300 --bf16 --lr 6e-4 --min-lr 6e-5 --lr-warmup-iters 30)
else
  model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
         --micro-batch-size 4 --global-batch-size 8 --train-iters 60 --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 6)
fi
"$BIN/gpt-train" --device "$device" "${model[@]}" --data-path docs_text_document --split 90,5,5 \
  --vocab-file "$VOCAB" --merge-file "$MERGES" --lr-decay-style cosine --weight-decay 0.1 --clip-grad 1.0 \
  --log-interval 10 --eval-interval 20 --eval-iters 4 --seed 1234 --save ckpt --save-interval 1000 \
  --metrics-file metrics.jsonl --tensorboard-dir tensorboard 2>&1 | tee train.log
first=$(grep -m1 -o 'lm loss: [0-9.E+-]*' train.log | awk '{print $3}')
last=$(grep -o 'lm loss: [0-9.E+-]*' train.log | tail -1 | awk '{print $3}')
summary+=("gpt-train      $device, lm loss $first -> $last; checkpoint in $OUT/ckpt, log $OUT/train.log, TensorBoard events in $OUT/tensorboard")

stage "10. the report of the training run (gpt-report)"
"$BIN/gpt-report" metrics.jsonl --title "make demo: gpt-train on the sample corpus" -o report.html
summary+=("gpt-report     plots of the run -> $OUT/report.html")

printf '\n== Summary (outputs under %s)\n' "$OUT"
printf '%s\n' "${summary[@]}"
printf '\nReport of the training run (open it in a browser): %s\n' "$OUT/report.html"
