"""Reads gpt-train's TensorBoard event files with an independent reader and checks them.

The .proto files vendored in third_party/tensorboard are compiled with protoc at run time and
the Event messages parsed by Debian's python3-protobuf; the TFRecord framing and its masked
CRC-32C are checked by the code below (written from the TFRecord format, not from ours).

  tb_events.py check PROTO_DIR EVENTS METRICS [--tb-interval N] [--crashed]
      every CRC, the file_version event, and every (tag, step, value) against the metrics file
  tb_events.py truncations PROTO_DIR EVENTS
      the file cut inside each record reads back as exactly the records before the cut
"""
import glob
import json
import math
import os
import struct
import subprocess
import sys
import tempfile


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = _table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(blob):
    """Whole records in order, and whether a partial record follows them."""
    out, pos = [], 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            return out, True
        header = blob[pos:pos + 8]
        (n,) = struct.unpack('<Q', header)
        (hcrc,) = struct.unpack('<I', blob[pos + 8:pos + 12])
        if hcrc != masked(header):
            raise SystemExit(f'length CRC mismatch at byte {pos}')
        if len(blob) - pos < 12 + n + 4:
            return out, True
        data = blob[pos + 12:pos + 12 + n]
        (dcrc,) = struct.unpack('<I', blob[pos + 12 + n:pos + 16 + n])
        if dcrc != masked(data):
            raise SystemExit(f'data CRC mismatch at byte {pos}')
        out.append(data)
        pos += 16 + n
    return out, False


def event_module(proto_dir):
    gen = tempfile.mkdtemp()
    protos = sorted(glob.glob(os.path.join(proto_dir, 'tensorboard/compat/proto/*.proto')))
    subprocess.run(['protoc', '-I', proto_dir, '--python_out', gen] + protos, check=True)
    sys.path.insert(0, gen)
    from tensorboard.compat.proto import event_pb2
    return event_pb2


def parse(event_pb2, records):
    events = []
    for r in records:
        e = event_pb2.Event()
        e.ParseFromString(r)
        if e.SerializeToString() != r:  # no unknown or misencoded field
            raise SystemExit(f'event does not re-encode to the same bytes: {e}')
        events.append(e)
    return events


def f32(v):
    return struct.unpack('<f', struct.pack('<f', v))[0]


def close(a, b):
    return math.isclose(a, f32(b), rel_tol=2e-6, abs_tol=1e-30)


def check(proto_dir, path, metrics, tb_interval, crashed):
    event_pb2 = event_module(proto_dir)
    records, partial = read_records(open(path, 'rb').read())
    if partial and not crashed:
        raise SystemExit('trailing partial record')
    events = parse(event_pb2, records)
    first = events[0]
    if first.WhichOneof('what') != 'file_version' or first.file_version != 'brain.Event:2':
        raise SystemExit(f'first event is not file_version brain.Event:2: {first}')
    got = {}
    for e in events[1:]:
        if e.WhichOneof('what') != 'summary' or len(e.summary.value) != 1:
            raise SystemExit(f'not one scalar: {e}')
        v = e.summary.value[0]
        if v.WhichOneof('value') != 'simple_value':
            raise SystemExit(f'not a simple_value: {e}')
        if not e.wall_time >= first.wall_time:
            raise SystemExit('wall_time goes back')
        key = (v.tag, e.step)
        if key in got:
            raise SystemExit(f'duplicate {key}')
        got[key] = v.simple_value
    cfg, want = None, {}
    flags = set()
    for line in open(metrics):
        r = json.loads(line)
        if r['type'] == 'config':
            cfg = r
            flags = set(r['command_line'].split())
            continue
        it, samples = r['iteration'], r['consumed_samples']
        def both(tag, value):
            want[(tag, it)] = value
            want[(tag + ' vs samples', samples)] = value
        if r['type'] == 'validation':
            both('lm loss validation', r['lm_loss'])
            continue
        want[('tokens-per-second', it)] = r['tokens_per_second']
        if r['mfu_percent'] is not None:
            want[('mfu', it)] = r['mfu_percent']
        if '--log-timers-to-tensorboard' in flags:
            want[('iteration-time', it)] = r['elapsed_ms_per_iteration'] / 1000
        if '--log-memory-to-tensorboard' in flags:
            for tag, field in (('mem-reserved-bytes', 'mem_reserved_mb'),
                               ('mem-allocated-bytes', 'mem_allocated_mb'),
                               ('mem-max-allocated-bytes', 'mem_max_allocated_mb')):
                want[(tag, it)] = r[field] * 1024 * 1024
        # The per-iteration scalars equal the interval's values when every iteration is logged.
        if it % tb_interval == 0 and cfg and ' --log-interval 1 ' in ' ' + cfg['command_line'] + ' ':
            both('learning-rate', r['learning_rate'])
            both('batch-size', r['batch_size'])
            both('loss-scale', r['loss_scale'])
            if r['lm_loss'] is not None:
                both('lm loss', r['lm_loss'])
            if r['grad_norm'] is not None:
                both('grad-norm', r['grad_norm'])
    if cfg is None:
        raise SystemExit('metrics file has no config record')
    for key, value in want.items():
        if key not in got:
            raise SystemExit(f'missing in events: {key}')
        if not close(got[key], value):
            raise SystemExit(f'{key}: events {got[key]!r}, metrics {value!r}')
    every_iteration = {'learning-rate', 'batch-size', 'loss-scale', 'lm loss', 'grad-norm'}
    last = max(k[1] for k in want if not k[0].endswith('vs samples'))
    for (tag, step) in got:
        base = tag[:-len(' vs samples')] if tag.endswith(' vs samples') else tag
        if (tag, step) in want:
            continue
        if base in every_iteration and not tag.endswith('vs samples'):
            if step % tb_interval:
                raise SystemExit(f'{tag} at step {step} off --tensorboard-log-interval {tb_interval}')
            if crashed and step > last:
                continue  # written after the last flush that reached the metrics file
            if ' --log-interval 1 ' not in ' ' + cfg['command_line'] + ' ':
                continue  # logged between log intervals: no metrics record to compare with
        if base in every_iteration and tag.endswith('vs samples'):
            continue
        raise SystemExit(f'unexpected event {tag} at step {step}')
    tags = sorted({k[0] for k in got})
    print(f'{len(records)} records, CRCs good, {len(want)} values match; tags: {", ".join(tags)}')


def truncations(proto_dir, path):
    event_pb2 = event_module(proto_dir)
    blob = open(path, 'rb').read()
    records, _ = read_records(blob)
    ends, pos = [], 0
    for r in records:
        ends.append((pos, pos + 16 + len(r)))
        pos += 16 + len(r)
    cuts = 0
    for i in sorted({0, 1, len(ends) // 2, len(ends) - 1}):
        start, end = ends[i]
        for cut in sorted({start + 1, start + 8, start + 11, start + 12, (start + end) // 2, end - 1}):
            got, partial = read_records(blob[:cut])
            if not partial or got != records[:i]:
                raise SystemExit(f'cut at byte {cut}: read {len(got)} records, want {i} and a partial one')
            parse(event_pb2, got)
            cuts += 1
    print(f'{cuts} truncated copies read up to their last whole record')


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'check':
        interval = 1
        if '--tb-interval' in sys.argv:
            interval = int(sys.argv[sys.argv.index('--tb-interval') + 1])
        check(sys.argv[2], sys.argv[3], sys.argv[4], interval, '--crashed' in sys.argv)
    elif cmd == 'truncations':
        truncations(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
