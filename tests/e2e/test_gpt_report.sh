# gpt-report: one HTML page over a gpt-train run (metrics file and text log), the real Megatron-core
# logs, the legacy Megatron line format, a pipeline folder of per-rank metrics files, a malformed
# metrics file, a truncated log and a 1,000,000-iteration run, checked in headless Chromium (what
# each plot drew, console errors, network requests); screenshots of the gpt-train run's report and,
# when `make demo` has run, of the demo's report are kept under build/test-artifacts/.
GT=$BIN/gpt-train
GR=$BIN/gpt-report
LOGS=$DATA/megatron-logs
ART=$(cd "$BIN/.." && pwd)/test-artifacts
mkdir -p "$ART"

help=$("$GR" --help); version=$("$GR" --version)
[[ $help == *"gpt-report build/demo/metrics.jsonl -o report.html"* ]] || fail "--help lacks the example"
[[ $version =~ ^gpt-report\ [0-9]+\.[0-9]+ ]] || fail "--version"
expect_exit 2 "$GR" -o x.html
expect_exit 2 "$GR" "$LOGS/legacy-format.log"
expect_exit 1 "$GR" nope.jsonl -o x.html
expect_stderr '^gpt-report: nope.jsonl: no such file or directory$'
[[ ! -e x.html ]] || fail "an output after an error"

# a short gpt-train run: metrics file and text log
mkdir run
"$GT" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4 \
  --global-batch-size 8 --train-iters 40 --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 4 \
  --lr-decay-style cosine --mock-data --vocab-size 256 --log-interval 2 --eval-interval 10 \
  --eval-iters 2 --cpu-threads 2 --metrics-file run/metrics.jsonl > ours.log

# a pipeline run of 4 stages as per-rank metrics files (the fields gpt-train writes per rank)
mkdir pipe
python3 - <<'PY'
import json
for rank in range(4):
    files = ['pipe/metrics.rank%d.jsonl' % rank] + (['pipe/metrics.jsonl'] if rank == 3 else [])
    lines = [json.dumps({'type': 'config', 'rank': rank, 'world_size': 4,
                         'model': {'num_layers': 8, 'hidden_size': 64, 'num_attention_heads': 4,
                                   'seq_length': 128, 'parameters': 500000},
                         'layout': {'tensor': 1, 'pipeline': 4, 'data': 1}, 'partition': [2, 2, 2, 2],
                         'gpus': 4, 'global_batch_size': 16, 'command_line': 'gpt-train ...'})]
    for it in range(10, 101, 10):
        lines.append(json.dumps({'type': 'train', 'iteration': it, 'consumed_samples': 16 * it,
                                 'lm_loss': 8 - it / 50, 'learning_rate': 1e-3, 'grad_norm': 1.0,
                                 'loss_scale': 1, 'elapsed_ms_per_iteration': 150,
                                 'mem_max_allocated_mb': 1000 + 100 * rank + it,
                                 'mem_max_reserved_mb': 1500 + 100 * rank,
                                 'stage_compute_ms': 100 + 10 * rank, 'stage_wait_ms': 40 - 10 * rank}))
    for f in files:
        open(f, 'w').write('\n'.join(lines) + '\n')
PY

# a malformed metrics file (a bad line 3, the last record cut mid-write) and a truncated log
# (the cut record is the last validation)
{ head -2 run/metrics.jsonl; echo '{"type":"train","iteration":'; sed -n '3,$p' run/metrics.jsonl; } > bad.jsonl
bad_lines=$(wc -l < bad.jsonl)
head -c -40 bad.jsonl > bad.tmp && mv bad.tmp bad.jsonl
cut_at=$(grep -n 'iteration       25/' "$LOGS/megatron-core-1.7b-tp2dp2.log" | cut -d: -f1)
{ head -$((cut_at - 1)) "$LOGS/megatron-core-1.7b-tp2dp2.log"; sed -n "${cut_at}p" "$LOGS/megatron-core-1.7b-tp2dp2.log" | head -c 150; } > trunc.log

# 1,000,000 logged iterations, with one spike and one dip that thinning must keep
awk 'BEGIN { print "{\"type\":\"config\",\"model\":{\"seq_length\":1024},\"global_batch_size\":8}";
  for (i = 1; i <= 1000000; i++)
    printf "{\"type\":\"train\",\"iteration\":%d,\"lm_loss\":%.4f,\"grad_norm\":%.3f,\"elapsed_ms_per_iteration\":90}\n",
      i, i == 777777 ? 50 : 2 + 8 / sqrt(i), i == 333333 ? 0.001 : 1 + (i % 7) / 10 }' > big.jsonl

"$GR" run/metrics.jsonl ours.log "$LOGS"/megatron-core-1.7b-*.log "$LOGS/legacy-format.log" pipe \
  bad.jsonl trunc.log big.jsonl --peak-tflops 989 --title "all runs" -o all.html 2> warnings.txt
cat warnings.txt
grep -q "^gpt-report: warning: bad.jsonl:3: not a JSON object" warnings.txt || fail "no warning for bad.jsonl:3"
grep -q "^gpt-report: warning: bad.jsonl:$bad_lines: truncated last line skipped" warnings.txt \
  || fail "no warning for the cut last record"
grep -q "^gpt-report: warning: trunc.log:$cut_at: truncated last line skipped" warnings.txt \
  || fail "no warning for the truncated log"
grep -q "bad.jsonl:3: not a JSON object" all.html || fail "warnings not on the page"
(($(stat -c %s all.html) < 4000000)) || fail "page of $(stat -c %s all.html) bytes: not thinned"
! grep -Eiq '(src|href)="(https?:)?//' all.html || fail "the page refers to the network"

"$GR" run/metrics.jsonl --title "gpt-train run" -o report.html
shots=(--screenshot report.html "$ART/report.png")
# the report `make demo` wrote, when it has run in this build tree
demo=$(cd "$BIN/.." && pwd)/demo/report.html
[[ -f $demo ]] && shots+=(--screenshot "$demo" "$ART/demo-report.png")
python3 "$ROOT/tests/e2e/browser_check.py" browser.json all.html "${shots[@]}"
[[ -s $ART/report.png ]] || fail "no screenshot"
[[ ! -f $demo || -s $ART/demo-report.png ]] || fail "no screenshot of the demo report"

train=$(grep -c '"type":"train"' run/metrics.jsonl)
valid=$(grep -c '"type":"validation"' run/metrics.jsonl)
python3 - browser.json "$train" "$valid" "$(pwd)/all.html" <<'PY'
import json, math, pathlib, sys
r = json.load(open(sys.argv[1]))
train, valid, page = int(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4]).as_uri()
def need(ok, what):
    if not ok:
        raise SystemExit('browser check: ' + what)
need(r['console'] == [], 'console errors: %s' % r['console'])
need(r['requests'] == [page], 'requests other than the page: %s' % r['requests'])
c = r['check']
need(c['errors'] == [], 'script errors: %s' % c['errors'])
need(c['toggle'] is True, 'a run toggle does not hide and show its series')
plots = {p['id']: p for p in c['plots']}
need(set(plots) == {'loss-tokens', 'loss-time', 'learning-rate', 'grad-norm', 'loss-scale',
                    'tokens-per-second', 'mfu', 'memory', 'stages'}, 'plots: %s' % sorted(plots))
for p in c['plots']:
    need(p['rendered'], p['id'] + ' not rendered')
    if p['kind'] == 'line':
        for s in p['series']:
            need(s['data'] == s['drawn'] > 0 and s['dom_name'] == s['name'], '%s: %s' % (p['id'], s))
        need(p['hover_rows'] == len(p['series']), '%s: hover shows %s of %d series'
             % (p['id'], p['hover_rows'], len(p['series'])))
def series(plot):
    return {s['name']: s for s in plots[plot]['series']}
loss = series('loss-tokens')
mega = ['megatron-core-1.7b-dp4', 'megatron-core-1.7b-pp4', 'megatron-core-1.7b-tp2dp2']
want = {'metrics train': train, 'metrics validation': valid, 'ours train': train,
        'legacy-format train': 20, 'legacy-format validation': 4, 'pipe train': 10,
        'bad train': train, 'bad validation': valid - 1, 'trunc train': 5}
want.update({m + ' train': 7 for m in mega})
for name, n in want.items():
    need(name in loss and loss[name]['data'] == n, 'lm loss vs tokens, %s: %s, want %d points'
         % (name, loss.get(name), n))
need(loss['big train']['data'] <= 3200 and loss['big train']['ymax'] == 50, 'big run: %s' % loss['big train'])
need(series('grad-norm')['big']['ymin'] == 0.001, 'the dip of the big run was thinned away')
need(set(series('loss-time')) == set(loss), 'loss vs time has other series than loss vs tokens')
ls = series('loss-scale')['legacy-format']
need(ls['ymax'] == 268435456 and ls['ymin'] == 1048576, 'legacy loss scale: %s' % ls)
mfu = series('mfu')['megatron-core-1.7b-pp4']
need(math.isclose(mfu['ymax'], 100 * 175.5 / 989, rel_tol=1e-4), 'pp4 MFU: %s' % mfu)
bars = {b['title'].split(':')[0]: b['value'] for b in plots['memory']['bars']}
for name, v in {'megatron-core-1.7b-pp4 r0 max allocated': 27926.15,
                'megatron-core-1.7b-pp4 r3 max reserved': 16078.0,
                'legacy-format r4 max allocated': 6380.44, 'pipe r2 max allocated': 1300}.items():
    need(name in bars and math.isclose(bars[name], v, rel_tol=1e-5), 'memory bar %s: %s' % (name, bars.get(name)))
stages = {b['title'].split(':')[0]: b['value'] for b in plots['stages']['bars']}
need(stages == {'pipe r%d %s' % (k, w): v for k in range(4)
                for w, v in (('compute', 100 + 10 * k), ('wait', 40 - 10 * k))}, 'stage bars: %s' % stages)
print('browser: %d plots, %d series, no console errors, no network' %
      (len(plots), sum(len(p.get('series', [])) for p in c['plots'])))
PY
