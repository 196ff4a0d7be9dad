# gpt-train --tensorboard-dir: event files read back by an independent reader (Debian's protoc and
# python3-protobuf over the vendored .proto files, see tb_events.py) against the metrics file.
GT=$BIN/gpt-train
PROTO=$ROOT/third_party/tensorboard
PY=/usr/bin/python3  # Debian's, which has python3-protobuf (not a python3 of pyenv or a venv)
[[ -x $PY ]] || PY=python3
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
      --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3 --lr-decay-style cosine
      --lr-warmup-iters 2 --mock-data --vocab-size 64 --cpu-threads 2)

# every iteration logged: each scalar and its "vs samples" twin equal the metrics record
"$GT" "${tiny[@]}" --train-iters 12 --log-interval 1 --eval-interval 5 --eval-iters 1 \
  --metrics-file m.jsonl --tensorboard-dir tb --log-timers-to-tensorboard \
  --log-memory-to-tensorboard > log.txt
events=(tb/events.out.tfevents.*)
[[ ${#events[@]} == 1 && ${events[0]} =~ /events\.out\.tfevents\.[0-9]{10}\.[^/]+$ ]] \
  || fail "event file name: ${events[*]}"
"$PY" "$ROOT/tests/e2e/tb_events.py" check "$PROTO" "${events[0]}" m.jsonl
"$PY" "$ROOT/tests/e2e/tb_events.py" truncations "$PROTO" "${events[0]}"

# --tensorboard-log-interval 3 with --log-interval 4: scalars at multiples of 3, no timers/memory
"$GT" "${tiny[@]}" --train-iters 12 --log-interval 4 --eval-interval 100 --eval-iters 1 \
  --metrics-file m2.jsonl --tensorboard-dir tb2 --tensorboard-log-interval 3 > log2.txt
"$PY" "$ROOT/tests/e2e/tb_events.py" check "$PROTO" tb2/events.out.tfevents.* m2.jsonl --tb-interval 3 \
  > check2.txt
grep -q 'lm loss,' check2.txt || fail "no lm loss in tb2: $(cat check2.txt)"
! grep -Eq 'iteration-time|mem-' check2.txt || fail "timers or memory without their flags"

# killed mid-run (SIGKILL): valid up to the last flush, which each metrics record follows
"$GT" "${tiny[@]}" --train-iters 1000000 --log-interval 20 --eval-interval 1000000 --eval-iters 1 \
  --metrics-file m3.jsonl --tensorboard-dir tb3 > log3.txt &
pid=$!
logged() { local n; n=$(grep -c '"type":"train"' m3.jsonl 2>/dev/null) || n=0; echo "$n"; }
for _ in $(seq 600); do
  (($(logged) >= 3)) && break
  sleep 0.1
done
kill -9 $pid; wait $pid 2>/dev/null || true
(($(logged) >= 3)) || fail "the killed run logged too little"
"$PY" "$ROOT/tests/e2e/tb_events.py" check "$PROTO" tb3/events.out.tfevents.* m3.jsonl --crashed

# an unwritable directory is one error line and exit 1
touch notadir
expect_exit 1 "$GT" "${tiny[@]}" --train-iters 4 --tensorboard-dir notadir/tb
expect_stderr '^gpt-train: notadir/tb: --tensorboard-dir: cannot create directory'
expect_exit 2 "$GT" "${tiny[@]}" --train-iters 4 --tensorboard-log-interval 0
