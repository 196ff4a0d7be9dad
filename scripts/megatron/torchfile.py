"""Reads and writes PyTorch's .pt files (the zip format of torch.save since 1.6) without torch.

A .pt file is a zip archive of one pickle, `<name>/data.pkl`, whose tensors refer by key to raw
storages `<name>/data/<key>` (little endian). Reading maps the few torch classes a checkpoint
uses onto NumPy arrays (bf16 widened to fp32); every other class becomes an inert Stub, so an
RNG state or an optimizer object never needs its library. Writing emits the same opcodes
torch.save does for dicts, lists, tuples, scalars, strings, argparse.Namespace and tensors, so
torch.load (and Megatron) read the result. Why not torch itself: the converter and its CI test
then need only Python and NumPy (Debian's python3-torch pulls in hundreds of packages).
"""
import argparse
import collections
import io
import pickle
import struct
import zipfile

import numpy as np

# torch storage class -> (numpy dtype of the raw bytes, name in torch)
_STORAGES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": "bf16",
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class Stub:
    """Anything the reader does not need (RNG states, enums, optimizer classes)."""

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state

    def __call__(self, *args, **kwargs):
        return Stub(*args)


def _stub_class(module, name):
    return type(name, (Stub,), {"__module__": "stub." + module})


class _StorageType:
    def __init__(self, name):
        self.name = name


class _Storage:
    def __init__(self, zf, prefix, key, kind):
        self.zf, self.prefix, self.key, self.kind = zf, prefix, key, kind
        self._array = None

    def array(self):
        if self._array is None:
            raw = self.zf.read(f"{self.prefix}data/{self.key}")
            if self.kind == "bf16":
                u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
                self._array = u.view(np.float32)
            else:
                self._array = np.frombuffer(raw, dtype=np.dtype(self.kind).newbyteorder("<"))
        return self._array


def _rebuild_tensor(storage, offset, size, stride, *rest):
    base = storage.array()
    if len(size) == 0:
        return np.array(base[offset])
    item = base.itemsize
    view = np.lib.stride_tricks.as_strided(base[offset:], shape=tuple(size),
                                           strides=tuple(s * item for s in stride))
    return np.ascontiguousarray(view)


def _rebuild_parameter(data, *rest):
    return data


def _rebuild_from_type(func, new_type, args, state):  # tensor subclasses (torch >= 1.12)
    return func(*args)


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, zf, prefix):
        super().__init__(f)
        self.zf, self.prefix = zf, prefix

    def find_class(self, module, name):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch._utils" and name in ("_rebuild_parameter",
                                                  "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "argparse" and name == "Namespace":
            return argparse.Namespace
        builtins = {"set": set, "frozenset": frozenset, "slice": slice, "complex": complex}
        if module == "builtins" and name in builtins:
            return builtins[name]
        return _stub_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, stype, key, _location, _numel = pid
        name = stype.name if isinstance(stype, _StorageType) else None
        if name is None:  # torch >= 2: a dtype object in place of the storage class
            name = {"float32": "FloatStorage", "bfloat16": "BFloat16Storage",
                    "float16": "HalfStorage", "float64": "DoubleStorage",
                    "int64": "LongStorage", "uint8": "ByteStorage"}.get(
                        getattr(stype, "_name", ""), "ByteStorage")
        return _Storage(self.zf, self.prefix, key, _STORAGES[name])


def load(path):
    """The object torch.save wrote to `path`, tensors as NumPy arrays (bf16 as fp32)."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError("not a zip-format PyTorch file (torch.save before 1.6 or "
                         "_use_new_zipfile_serialization=False is not supported)")
    names = [n for n in zf.namelist() if n.endswith("data.pkl")]
    if not names:
        raise ValueError("PyTorch file without data.pkl")
    prefix = names[0][: -len("data.pkl")]
    with zf.open(names[0]) as f:
        return _Unpickler(io.BytesIO(f.read()), zf, prefix).load()


# --- writing ------------------------------------------------------------------------------

_DTYPE_STORAGE = {np.dtype(np.float32): "FloatStorage", np.dtype(np.float16): "HalfStorage",
                  np.dtype(np.float64): "DoubleStorage", np.dtype(np.int64): "LongStorage",
                  np.dtype(np.int32): "IntStorage", np.dtype(np.uint8): "ByteStorage"}


class _Writer:
    """Pickle protocol 2 opcodes, as torch.save emits them, for the objects a checkpoint holds."""

    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.storages = []  # (key, bytes)
        self.memo = {}

    def op(self, b):
        self.out += b

    def glob(self, module, name):
        key = (module, name)
        if key in self.memo:
            self.get(self.memo[key])
            return
        self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")
        self.put(key)

    def put(self, key):
        idx = len(self.memo)
        self.memo[key] = idx
        self.op(b"q" + bytes([idx]) if idx < 256 else b"r" + struct.pack("<I", idx))

    def get(self, idx):
        self.op(b"h" + bytes([idx]) if idx < 256 else b"j" + struct.pack("<I", idx))

    def str_(self, s):
        b = s.encode("utf-8")
        self.op(b"X" + struct.pack("<I", len(b)) + b)

    def save(self, obj):
        if obj is None:
            self.op(b"N")
        elif obj is True:
            self.op(b"\x88")
        elif obj is False:
            self.op(b"\x89")
        elif isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            v = int(obj)
            if 0 <= v < 256:
                self.op(b"K" + bytes([v]))
            elif -(1 << 31) <= v < (1 << 31):
                self.op(b"J" + struct.pack("<i", v))
            else:
                b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
                self.op(b"\x8a" + bytes([len(b)]) + b)
        elif isinstance(obj, (float, np.floating)):
            self.op(b"G" + struct.pack(">d", float(obj)))
        elif isinstance(obj, str):
            self.str_(obj)
        elif isinstance(obj, np.ndarray):
            self.tensor(obj)
        elif isinstance(obj, tuple):
            self.op(b"(")
            for x in obj:
                self.save(x)
            self.op(b"t")
        elif isinstance(obj, list):
            self.op(b"](")
            for x in obj:
                self.save(x)
            self.op(b"e")
        elif isinstance(obj, collections.OrderedDict):
            self.glob("collections", "OrderedDict")
            self.op(b")R")
            self.items(obj)
        elif isinstance(obj, dict):
            self.op(b"}")
            self.items(obj)
        elif isinstance(obj, argparse.Namespace):
            self.glob("argparse", "Namespace")
            self.op(b")\x81}")
            self.items(vars(obj))
            self.op(b"b")
        else:
            raise TypeError(f"cannot write a {type(obj).__name__} into a .pt file")

    def items(self, d):
        if d:
            self.op(b"(")
            for k, v in d.items():
                self.save(k)
                self.save(v)
            self.op(b"u")

    def tensor(self, a):
        a = np.ascontiguousarray(a)
        if a.dtype not in _DTYPE_STORAGE:
            raise TypeError(f"cannot write a {a.dtype} tensor")
        key = str(len(self.storages))
        self.storages.append((key, a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()))
        self.glob("torch._utils", "_rebuild_tensor_v2")
        self.op(b"(")
        self.op(b"(")  # persistent id ('storage', type, key, location, numel)
        self.str_("storage")
        self.glob("torch", _DTYPE_STORAGE[a.dtype])
        self.str_(key)
        self.str_("cpu")
        self.save(int(a.size))
        self.op(b"tQ")
        self.save(0)
        self.save(tuple(int(d) for d in a.shape))
        strides, s = [], 1
        for d in reversed(a.shape):
            strides.append(s)
            s *= int(d)
        self.save(tuple(reversed(strides)))
        self.op(b"\x89")  # requires_grad
        self.glob("collections", "OrderedDict")
        self.op(b")Rt")
        self.op(b"R")


def _aligned_write(zf, name, data):
    """Stores `name` uncompressed with its data 64-byte aligned, as torch's writer does."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode())
    pad = (-(zf.fp.tell() + header + 4)) % 64
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    zf.writestr(info, data)


def save(obj, path):
    """Writes `obj` as torch.save(obj, path) would (protocol 2, zip format, version 3)."""
    w = _Writer()
    w.save(obj)
    w.op(b".")
    name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "archive"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        _aligned_write(zf, f"{name}/data.pkl", bytes(w.out))
        _aligned_write(zf, f"{name}/byteorder", b"little")
        for key, data in w.storages:
            _aligned_write(zf, f"{name}/data/{key}", data)
        _aligned_write(zf, f"{name}/version", b"3\n")
