"""XXH64 (seed 0), the checksum of gpt-train checkpoint files.

Uses the `xxhash` module when it is installed (Debian: python3-xxhash); otherwise a pure-Python
implementation, correct but slow (about 30 MB/s), enough for small models and tests.
"""
import struct

try:
    import xxhash as _xxhash
except ImportError:  # the fallback below
    _xxhash = None

_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261
_M = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    acc = (acc + lane * _P2) & _M
    return (_rotl(acc, 31) * _P1) & _M


def _merge(h, v):
    h ^= _round(0, v)
    return (h * _P1 + _P4) & _M


class Hasher:
    """Incremental XXH64: update(bytes) any number of times, then digest() -> int."""

    def __init__(self):
        self._fast = _xxhash.xxh64(seed=0) if _xxhash else None
        self._v = [(_P1 + _P2) & _M, _P2, 0, (-_P1) & _M]
        self._buf = b""
        self._len = 0

    def update(self, data):
        if self._fast:
            self._fast.update(data)
            return
        self._len += len(data)
        data = self._buf + bytes(data)
        n = len(data) // 32 * 32
        v1, v2, v3, v4 = self._v
        for a, b, c, d in struct.iter_unpack("<4Q", data[:n]):
            v1 = _round(v1, a)
            v2 = _round(v2, b)
            v3 = _round(v3, c)
            v4 = _round(v4, d)
        self._v = [v1, v2, v3, v4]
        self._buf = data[n:]

    def digest(self):
        if self._fast:
            return self._fast.intdigest()
        v1, v2, v3, v4 = self._v
        if self._len >= 32:
            h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
            for v in (v1, v2, v3, v4):
                h = _merge(h, v)
        else:
            h = _P5
        h = (h + self._len) & _M
        buf, i = self._buf, 0
        while i + 8 <= len(buf):
            (k,) = struct.unpack_from("<Q", buf, i)
            h ^= _round(0, k)
            h = (_rotl(h, 27) * _P1 + _P4) & _M
            i += 8
        if i + 4 <= len(buf):
            (k,) = struct.unpack_from("<I", buf, i)
            h ^= (k * _P1) & _M
            h = (_rotl(h, 23) * _P2 + _P3) & _M
            i += 4
        while i < len(buf):
            h ^= (buf[i] * _P5) & _M
            h = (_rotl(h, 11) * _P1) & _M
            i += 1
        h ^= h >> 33
        h = (h * _P2) & _M
        h ^= h >> 29
        h = (h * _P3) & _M
        h ^= h >> 32
        return h


def xxh64(data):
    h = Hasher()
    h.update(data)
    return h.digest()
