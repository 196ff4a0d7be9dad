# No tool shards unless told: with the variables of Slurm array task 1 of 4 in the environment and
# no --shard, every tool writes exactly what it writes without them (a per-file array job must not
# keep 1/N of each file).
array=(SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=3
       SLURM_ARRAY_JOB_ID=77 SLURM_JOB_ID=78)
zstd -qdc "$GOLDEN/fortunes-en.jsonl.zst" > fortunes.jsonl
head -400 fortunes.jsonl > docs.jsonl
python3 - <<'PY'
import json
with open("docs.jsonl") as f, open("web.jsonl", "w") as w:
    for i, line in enumerate(f):
        d = json.loads(line)
        w.write(json.dumps({"url": f"https://site{i % 7}.example/page/{i}", "text": d["text"]}) + "\n")
PY
{
  echo '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10"><siteinfo><base>https://en.wikipedia.org/wiki/Main</base></siteinfo>'
  for i in 1 2 3 4 5 6 7 8; do
    printf '<page><title>Page %s</title><ns>0</ns><id>%s</id><revision><id>1</id><text>Article number %s with a [[link]].</text></revision></page>\n' $i $i $i
  done
  echo '</mediawiki>'
} > dump.xml

# both NAME CMD... (CMD writes under out/): runs CMD without and with the array variables, in two
# directories, and compares everything it wrote.
both() {
  local name=$1; shift
  rm -rf plain env && mkdir -p plain/out env/out
  (cd plain && "$@") 2>/dev/null || fail "$name failed"
  (cd env && env "${array[@]}" "$@") 2>/dev/null || fail "$name failed in an array task"
  [[ -n $(find plain/out -type f -size +0) ]] || fail "$name wrote nothing"
  diff -r plain/out env/out > /dev/null || fail "$name: output depends on the Slurm array variables"
}
D=$PWD
both jsonl-cat "$BIN/jsonl-cat" -q -i "$D/docs.jsonl" -o out/x.jsonl
both scrape-filter "$BIN/scrape-filter" -q --rules gopher -i "$D/web.jsonl" -o out/x.jsonl --rejects out/r.jsonl
both sentence-split "$BIN/sentence-split" -q -i "$D/docs.jsonl" -o out/x.jsonl
both bpe-encode "$BIN/bpe-encode" -q --vocab-file "$VOCAB" --merge-file "$MERGES" -i "$D/docs.jsonl" -o out/x.jsonl
both bpe-train "$BIN/bpe-train" -q --vocab-size 400 -i "$D/docs.jsonl" --output-dir out
both jsonl-to-mmap "$BIN/jsonl-to-mmap" -q --vocab-file "$VOCAB" --merge-file "$MERGES" -i "$D/docs.jsonl" \
  --output-prefix out/x
both minhash-dedup "$BIN/minhash-dedup" -q -i "$D/docs.jsonl" -i "$D/web.jsonl" -o out/x.jsonl --removed out/r.jsonl
both wiki-extract "$BIN/wiki-extract" -q -i "$D/dump.xml" -o out/x.jsonl
G=$GOLDEN/megatron/fortunes-en_text_document
both build-indexmap "$BIN/build-indexmap" -q --data-path "$G" --split 969,30,1 --seq-length 64 \
  --train-samples 50 --data-cache-path out
both gpt-train sh -c "'$BIN/gpt-train' --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 \
  --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --mock-data-samples 8 --vocab-size 32 \
  --log-interval 1 --cpu-threads 1 --train-iters 2 | grep -Eo 'lm loss: [0-9.E+-]+' > out/losses"
