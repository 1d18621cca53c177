#!/usr/bin/python3
"""The torch oracle: what real torch (Debian's python3-torch 1.13) loads from a file.

Every interop test compares zerofold with this module, and only with it. Run it with
/usr/bin/python3 (the python3 first on PATH may lack torch). Standard library + torch only.

API
---
load(path) -> object
    torch.load(path, map_location='cpu', weights_only=True) when torch 1.13 can; otherwise
    torch.load(..., weights_only=False) with stub modules standing in for every foreign global
    the pickle names (DeepSpeed is not installed). Before any load, the pickle opcodes are
    scanned (pickletools, no unpickling) and the file is refused if it names an unsafe global.
load_safetensors(path) -> OrderedDict name -> tensor
    A safetensors file (torch 1.13 reads none) through read_safetensors, this module's
    strict reader written from the format's specification: the tensors in name order, as
    safetensors.torch.load_file returns them. read_safetensors(path, writer_layout=True)
    -> SafetensorsFile(metadata, tensors, header_size) also checks the reference writer's
    layout; FormatError for anything the specification forbids.
load_info(path) -> Loaded(obj, mode, globals, stubbed, format)
    The same, and how: mode is "weights_only" or "stubbed" (the second path; `stubbed` lists
    the globals that got stubs, possibly none, e.g. when only builtins.set blocked weights_only).
scan(path) -> Scan(format, globals, stubbed, unsafe, problems, stub_pairs, storage_keys)
    The opcode scan alone: every GLOBAL / STACK_GLOBAL / INST as "module.name" in order of
    first appearance, the ones that would get stubs, the unsafe ones, other reasons to refuse,
    and the storage keys of the ('storage', cls, KEY, ...) persistent ids in order of first
    reference.
describe(obj) -> dict (JSON-able)
    {"tensors": [...], "leaves": [...], "objects": [...], "storages": [...]} in depth-first
    order of first visit; a tensor reached by two paths (tied weights) is listed under both.
    Names are path elements joined with "." (ints in decimal; list/tuple indices; inside a
    stub object "state" or "args" then the key/index: "loss_scaler.state.cur_scale").
    tensor: name, path, dtype ("float32", torch's name without "torch."), shape, stride,
      storage_offset (elements), storage (id "s0", "s1", ... per distinct StorageImpl, numbered
      in order of first visit; identity is the StorageImpl address, so empty storages stay
      distinct though their data_ptr is 0), storage_nbytes, storage_dtype, itemsize (torch's
      element_size(): 1 for the packed quint4x2/quint2x4), element_bits (4 and 2 for those,
      else 8 x itemsize), nbytes (the tensor's logical bytes: ceil(numel x element_bits / 8)),
      requires_grad, is_parameter, sha256 (of the tensor's logical bytes in C order: what
      tensor.contiguous().view(-1) holds; quantized tensors: of int_repr()), and for quantized
      tensors "quantized": {"qscheme", "scale", "zero_point"}.
    leaf: name, path, type (Python type name), value (JSON form: see _leaf_value).
    object: name, path, global ("module.Class") for each stub object.
    storages: id, nbytes, dtype, referenced_nbytes (see storage_usage).
named_tensors(obj) -> OrderedDict name -> tensor
    The tensors describe() lists, by name (first of a repeated name).
view_extent(shape, stride, offset, element_bits) -> (begin, end) | None
    Byte extent of a view: offset .. offset + sum((size_i-1)*stride_i) + 1 elements, in bytes
    (packed sub-byte dtypes: the bytes holding those elements); None for an empty tensor (a
    zero dim), which references no bytes.
storage_usage(tensors) -> {storage_id: referenced_nbytes}
    Union of the byte extents of each storage's views (overlaps counted once).
compare(a, b) -> list of str
    Differences between two loaded object trees (empty list: equal): the same structure,
    keys in the same order, equal leaves, and tensors equal by compare_tensors.
compare_tensors(a, b, strides=True) -> list of str
    Same dtype, shape, stride (unless strides=False), and values element by element, bit for
    bit (torch.equal on the bytes, so NaN equals the same NaN and -0.0 differs from 0.0);
    quantized tensors: int_repr and quantizer parameters.

CLI
---
    /usr/bin/python3 tests/torch_oracle.py dump FILE   # JSON: path, mode, globals, describe()
    /usr/bin/python3 tests/torch_oracle.py scan FILE   # JSON: the opcode scan
Exit 0 on success, 1 if the file is refused or fails to load (message on stderr).

Safety policy
-------------
Stubs run no code: a stub module holds stub classes that accept any constructor arguments
and any state. Globals of torch, numpy, collections, _codecs and builtins are real only if on
the allowlists below; any other name in those modules is refused, as are whole modules that
run code (os, posix, subprocess, sys, pickle, ...). `builtins.getattr` is allowed only as a
Python >= 3.11 pickle uses it for an Enum member: REDUCE of getattr on (a stubbed class,
a str not starting with "_"); any other use of it is refused. TorchScript archives are
refused (torch.load would compile their code). Stub modules shadow real modules of the same
name only while torch.load runs.
"""

import _compat_pickle
import collections
import hashlib
import io
import json
import math
import pickle
import pickletools
import re
import struct
import sys
import tarfile
import types
import warnings
import zipfile
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import torch

__all__ = [
    "OracleError", "UnsafeFile", "UnsupportedFile", "Loaded", "Scan", "StubObject",
    "StubEnumMember", "load", "load_info", "scan", "describe", "view_extent",
    "storage_usage", "compare", "compare_tensors", "tensor_bytes", "tensor_sha256",
    "element_bits", "packed_bytes",
]


class OracleError(Exception):
    """The oracle will not load this file."""


class UnsafeFile(OracleError):
    """The pickle names a global that would run code (listed in .globals)."""

    def __init__(self, path: str, globals_: List[str], problems: List[str]):
        self.globals = globals_
        self.problems = problems
        super().__init__(f"{path}: unsafe pickle: " + "; ".join(problems))


class UnsupportedFile(OracleError):
    """Not a file torch.load can give us without running code (TorchScript, tar format)."""


# ---------------------------------------------------------------------------------------
# Global classification

# Real globals a torch.save'd checkpoint may name, beyond torch's dtypes, storages, layouts,
# qschemes and memory formats (added in _allowed_real_globals).
_ALLOWED_REAL = {
    "collections.OrderedDict",
    "builtins.set", "builtins.frozenset", "builtins.bytearray", "builtins.complex",
    "builtins.slice",
    "_codecs.encode",  # protocol-2 pickles of bytes: _codecs.encode(str, "latin1")
    "torch.Size", "torch.Tensor", "torch.device", "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout",
    "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor", "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_sparse_csr_tensor", "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._tensor._rebuild_from_type", "torch._tensor._rebuild_from_type_v2",
    "numpy.core.multiarray._reconstruct", "numpy.core.multiarray.scalar", "numpy.ndarray",
    "numpy.dtype",
    # An IntEnum member (Megatron's common.pt keeps the exit signal): Signals(n) looks the
    # member up, nothing else runs; zerofold's plain-data list has it for the same reason.
    "signal.Signals",
}
_GETATTR = "builtins.getattr"
# Modules whose globals are never stubbed: real only if allowlisted, else refused.
_REAL_ROOTS = {"torch", "numpy", "collections", "_codecs", "builtins"}
# Modules that run code, touch the system or load nested pickles: always refused.
_UNSAFE_ROOTS = {
    "os", "posix", "nt", "subprocess", "sys", "runpy", "socket", "shutil", "pickle",
    "_pickle", "marshal", "importlib", "ctypes", "code", "codeop", "pty", "webbrowser",
    "multiprocessing", "signal", "pdb", "bdb", "timeit", "trace", "cProfile", "profile",
    "doctest", "types", "operator", "functools", "io", "_io", "tempfile", "dill",
    "cloudpickle", "joblib", "shelve", "platform", "asyncio", "threading", "_thread",
    "copyreg", "copy_reg", "__builtin__", "_posixsubprocess", "gc", "inspect",
}
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def _allowed_real_globals() -> set:
    allowed = set(_ALLOWED_REAL)
    for name in dir(torch):
        value = getattr(torch, name, None)
        if isinstance(value, (torch.dtype, torch.layout, torch.qscheme, torch.memory_format)):
            allowed.add("torch." + name)
    for cls in torch._storage_classes:
        allowed.add(f"{cls.__module__}.{cls.__name__}")
        allowed.add(f"torch.{cls.__name__}")  # torch.save writes torch.FloatStorage
    return allowed


_ALLOWED = _allowed_real_globals()


def _normalize(module: str, name: str) -> Tuple[str, str]:
    """Python 2 names as pickle maps them for protocols < 3 (__builtin__ -> builtins)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _classify(module: str, name: str) -> str:
    """One of "real", "getattr", "stub", "unsafe"."""
    if not _NAME_RE.match(module) or not _NAME_RE.match(name):
        return "unsafe"
    module, name = _normalize(module, name)
    full = f"{module}.{name}"
    root = module.split(".")[0]
    if full == _GETATTR:
        return "getattr"
    if full in _ALLOWED:
        return "real"
    if root in _UNSAFE_ROOTS or root in _REAL_ROOTS:
        return "unsafe"
    return "stub"


# ---------------------------------------------------------------------------------------
# Opcode scan: a symbolic run of the pickle machine that tracks only what the safety
# policy needs (which global is called with what). Nothing is unpickled.

class _Mark:
    pass


class _Glob(NamedTuple):
    module: str
    name: str


class _Str(NamedTuple):
    value: str


class _Tup(NamedTuple):
    items: tuple


_OTHER = object()
_MARK = _Mark()
_STR_OPS = {"UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "STRING",
            "BINSTRING", "SHORT_BINSTRING"}
_VALUE_OPS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT",
              "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE", "BINBYTES", "SHORT_BINBYTES",
              "BINBYTES8", "BYTEARRAY8", "PERSID", "NEXT_BUFFER", "EMPTY_LIST", "EMPTY_DICT",
              "EMPTY_SET"}
_POP_TO_MARK_OPS = {"APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"}


class _PickleScan:
    """Scans one pickle (stops at STOP) from a binary stream."""

    def __init__(self, globals_: Dict[str, str], problems: List[str]):
        self.globals = globals_    # "module.name" -> class, in order of first appearance
        self.pairs: List[Tuple[str, str]] = []  # (module, name) of each stubbed global
        self.storage_keys: List[str] = []  # keys of ('storage', cls, KEY, ...) persistent ids
        self.problems = problems
        self.stack: List[Any] = []
        self.memo: Dict[int, Any] = {}

    def _problem(self, pos: int, what: str) -> None:
        self.problems.append(f"@{pos}: {what}")

    def _pop(self, pos: int, n: int = 1) -> List[Any]:
        if len(self.stack) < n:
            raise OracleError(f"pickle stack underflow at byte {pos}")
        items = self.stack[len(self.stack) - n:]
        del self.stack[len(self.stack) - n:]
        for item in items:
            self._check_value_use(pos, item)
        return items

    def _pop_to_mark(self, pos: int) -> List[Any]:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] is _MARK:
                items = self.stack[i + 1:]
                del self.stack[i:]
                for item in items:
                    self._check_value_use(pos, item)
                return items
        raise OracleError(f"pickle MARK missing at byte {pos}")

    def _check_value_use(self, pos: int, item: Any) -> None:
        # getattr may only be the callable of a REDUCE; as a value it could reach a caller.
        if isinstance(item, _Glob) and self.globals.get(self._full(item)) == "getattr":
            self._problem(pos, "builtins.getattr used other than as an Enum member lookup")

    @staticmethod
    def _full(g: _Glob) -> str:
        return f"{g.module}.{g.name}"

    def _global(self, pos: int, module: str, name: str) -> _Glob:
        g = _Glob(module, name)
        full = self._full(g)
        if full not in self.globals:
            kind = _classify(module, name)
            self.globals[full] = kind
            if kind == "stub":
                # Under the name the pickle has and the name pickle imports for protocol < 3.
                self.pairs += sorted({(module, name), _normalize(module, name)})
            if kind == "unsafe":
                self._problem(pos, f"unsafe global {full}")
        return g

    def _call(self, pos: int, callable_: Any, args: Any) -> None:
        if not isinstance(callable_, _Glob):
            self._problem(pos, "calls something that is not a global")
            return
        if self.globals.get(self._full(callable_)) != "getattr":
            return
        ok = (isinstance(args, _Tup) and len(args.items) == 2
              and isinstance(args.items[0], _Glob)
              and self.globals.get(self._full(args.items[0])) == "stub"
              and isinstance(args.items[1], _Str)
              and not args.items[1].value.startswith("_"))
        if not ok:
            self._problem(pos, "builtins.getattr called on something other than "
                               "(a stubbed class, a public name)")

    def run(self, stream) -> None:
        for op, arg, pos in pickletools.genops(stream):
            name = op.name
            if name in ("PROTO", "FRAME", "STOP", "READONLY_BUFFER"):
                continue
            if name in _STR_OPS:
                self.stack.append(_Str(arg if isinstance(arg, str) else repr(arg)))
            elif name in _VALUE_OPS:
                self.stack.append(_OTHER)
            elif name == "MARK":
                self.stack.append(_MARK)
            elif name == "EMPTY_TUPLE":
                self.stack.append(_Tup(()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                self.stack.append(_Tup(tuple(self._pop(pos, int(name[-1])))))
            elif name == "TUPLE":
                self.stack.append(_Tup(tuple(self._pop_to_mark(pos))))
            elif name in ("LIST", "DICT", "FROZENSET"):
                self._pop_to_mark(pos)
                self.stack.append(_OTHER)
            elif name in ("APPEND", "BUILD", "POP"):
                self._pop(pos)
            elif name == "SETITEM":
                self._pop(pos, 2)
            elif name in _POP_TO_MARK_OPS:
                self._pop_to_mark(pos)
            elif name == "DUP":
                self.stack.append(self.stack[-1] if self.stack else _OTHER)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                self.memo[int(arg)] = self.stack[-1] if self.stack else _OTHER
            elif name == "MEMOIZE":
                self.memo[len(self.memo)] = self.stack[-1] if self.stack else _OTHER
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                if int(arg) not in self.memo:
                    raise OracleError(f"pickle memo {arg} missing at byte {pos}")
                self.stack.append(self.memo[int(arg)])
            elif name == "GLOBAL":
                module, _, gname = arg.partition(" ")
                self.stack.append(self._global(pos, module, gname))
            elif name == "STACK_GLOBAL":
                module, gname = self.stack[-2:] if len(self.stack) >= 2 else (None, None)
                self._pop(pos, 2)
                if isinstance(module, _Str) and isinstance(gname, _Str):
                    self.stack.append(self._global(pos, module.value, gname.value))
                else:
                    self._problem(pos, "STACK_GLOBAL on values that are not strings")
                    self.stack.append(_OTHER)
            elif name == "BINPERSID":
                pid = self._pop(pos)[0]
                if (isinstance(pid, _Tup) and len(pid.items) >= 3
                        and pid.items[0] == _Str("storage") and isinstance(pid.items[2], _Str)
                        and pid.items[2].value not in self.storage_keys):
                    self.storage_keys.append(pid.items[2].value)
                self.stack.append(_OTHER)
            elif name == "REDUCE":
                args = self._pop(pos)[0]
                callable_ = self.stack.pop() if self.stack else None
                self._call(pos, callable_, args)
                self.stack.append(_OTHER)
            elif name == "NEWOBJ":
                cls, args = self._pop(pos, 2)
                self._call(pos, cls, args)
                self.stack.append(_OTHER)
            elif name == "NEWOBJ_EX":
                cls, args, _ = self._pop(pos, 3)
                self._call(pos, cls, args)
                self.stack.append(_OTHER)
            elif name == "OBJ":
                items = self._pop_to_mark(pos)
                self._call(pos, items[0] if items else None, _Tup(tuple(items[1:])))
                self.stack.append(_OTHER)
            elif name == "INST":
                module, _, gname = arg.partition(" ")
                cls = self._global(pos, module, gname)
                self._call(pos, cls, _Tup(tuple(self._pop_to_mark(pos))))
                self.stack.append(_OTHER)
            elif name in ("EXT1", "EXT2", "EXT4"):
                self._problem(pos, f"{name} names a global through the copyreg registry")
                self.stack.append(_OTHER)
            else:
                self._problem(pos, f"opcode {name} not understood by the oracle's scan")
                self.stack.append(_OTHER)


class Scan(NamedTuple):
    format: str            # "torch-zip" or "torch-legacy"
    globals: List[str]     # "module.name" in order of first appearance
    stubbed: List[str]     # the globals that get stub classes
    unsafe: List[str]      # the globals refused as unsafe
    problems: List[str]    # every reason to refuse ("@OFFSET: what"), empty if none
    stub_pairs: List[Tuple[str, str]]  # (module, name) pairs the stub modules must hold
    storage_keys: List[str]  # storage keys in order of first reference by a persistent id


def _pickle_streams(path: str) -> Tuple[str, List[Tuple[io.BufferedIOBase, int]]]:
    """The file's format and the pickles to scan: (stream, how many pickles in a row)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            ordered = zf.namelist()
            if not ordered:
                raise OracleError(f"{path}: empty zip archive")
            top = ordered[0].split("/")[0]  # torch takes the first record's folder
            names = set(ordered)
            if f"{top}/constants.pkl" in names or any(n.startswith(f"{top}/code/")
                                                      for n in names):
                raise UnsupportedFile(f"{path}: TorchScript archive (torch.load would "
                                      f"compile its code with torch.jit.load)")
            if f"{top}/data.pkl" not in names:
                raise OracleError(f"{path}: zip archive without {top}/data.pkl")
            return "torch-zip", [(io.BytesIO(zf.read(f"{top}/data.pkl")), 1)]
    if tarfile.is_tarfile(path):
        raise UnsupportedFile(f"{path}: the tar-based format of torch < 0.4")
    # Legacy (torch < 1.6): magic number, protocol version, sys_info, the object, the list of
    # storage keys, then raw storage bytes (not a pickle).
    return "torch-legacy", [(open(path, "rb"), 5)]


def scan(path: str) -> Scan:
    """Scans the file's pickle(s) without unpickling. Raises UnsupportedFile/OracleError."""
    fmt, streams = _pickle_streams(path)
    globals_: Dict[str, str] = {}
    problems: List[str] = []
    pairs: List[Tuple[str, str]] = []
    keys: List[str] = []
    for stream, count in streams:
        with stream:
            for _ in range(count):
                base = stream.tell()
                scanner = _PickleScan(globals_, problems)
                try:
                    scanner.run(stream)
                except OracleError:
                    raise
                except Exception as e:  # pickletools: truncated or bad opcode
                    raise OracleError(f"{path}: pickle at byte {base} does not parse: {e}")
                pairs += scanner.pairs
                keys += [k for k in scanner.storage_keys if k not in keys]
    return Scan(fmt, list(globals_), [g for g, k in globals_.items() if k == "stub"],
                [g for g, k in globals_.items() if k == "unsafe"], problems, pairs, keys)


# ---------------------------------------------------------------------------------------
# Stubs

class StubEnumMember:
    """What getattr(StubClass, "name") returns: an Enum member we cannot import."""

    def __init__(self, owner: str, name: str):
        self.owner = owner
        self.name = name

    def __repr__(self) -> str:
        return f"<stub {self.owner}.{self.name}>"

    def __eq__(self, other) -> bool:
        return (isinstance(other, StubEnumMember) and other.owner == self.owner
                and other.name == self.name)

    def __hash__(self) -> int:
        return hash((self.owner, self.name))


class _StubMeta(type):
    def __getattr__(cls, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        member = StubEnumMember(cls.__stub_global__, name)
        setattr(cls, name, member)
        return member


class StubObject(metaclass=_StubMeta):
    """Base of stub classes: keeps constructor args, kwargs, state, items; runs nothing."""

    __stub_global__ = "?"

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        self.args, self.kwargs, self.state = tuple(args), dict(kwargs), None
        self.items: Dict[Any, Any] = {}
        self.list_items: List[Any] = []
        return self

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            self.args, self.kwargs = tuple(args), dict(kwargs)

    def __setstate__(self, state):
        self.state = state

    def __setitem__(self, key, value):  # SETITEM(S) on an object pickled as a dict subclass
        self.items[key] = value

    def append(self, value):            # APPEND(S) on an object pickled as a list subclass
        self.list_items.append(value)

    def extend(self, values):
        self.list_items.extend(values)

    def __repr__(self) -> str:
        return f"<stub {self.__stub_global__} args={self.args!r} state={self.state!r}>"


def _stub_modules(pairs: List[Tuple[str, str]]) -> Dict[str, Any]:
    """Stub modules (parents included) holding a stub class for each (module, name)."""
    modules: Dict[str, Any] = {}

    def module(name: str):
        if name not in modules:
            modules[name] = types.ModuleType(name, "zerofold oracle stub")
            parent, _, leaf = name.rpartition(".")
            if parent:
                setattr(module(parent), leaf, modules[name])
        return modules[name]

    for mod_name, name in pairs:
        owner = module(mod_name)
        parts = name.split(".")  # protocol 4 qualified names: Outer.Inner
        for i, part in enumerate(parts):
            if not isinstance(vars(owner).get(part), type):
                qual = mod_name + "." + ".".join(parts[:i + 1])
                setattr(owner, part, _StubMeta(part, (StubObject,), {"__stub_global__": qual}))
            owner = getattr(owner, part)
    return modules


class _Shadow:
    """Installs stub modules in sys.modules for the duration of a with-block."""

    def __init__(self, modules: Dict[str, Any]):
        self.modules = modules
        self.saved: Dict[str, Any] = {}

    def __enter__(self):
        for name, mod in self.modules.items():
            self.saved[name] = sys.modules.get(name)
            sys.modules[name] = mod
        return self

    def __exit__(self, *exc):
        for name, old in self.saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
        return False


# ---------------------------------------------------------------------------------------
# Loading

class Loaded(NamedTuple):
    obj: Any
    mode: str              # "weights_only" or "stubbed"
    globals: List[str]
    stubbed: List[str]
    format: str


def load_info(path: str) -> Loaded:
    """Loads path with torch; raises UnsafeFile, UnsupportedFile or OracleError."""
    s = scan(path)
    if s.problems:
        raise UnsafeFile(path, s.unsafe, s.problems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
            return Loaded(obj, "weights_only", s.globals, [], s.format)
        except pickle.UnpicklingError:
            pass  # a global or opcode weights_only does not take: load with stubs
        with _Shadow(_stub_modules(s.stub_pairs)):
            obj = torch.load(path, map_location="cpu", weights_only=False)
    return Loaded(obj, "stubbed", s.globals, s.stubbed, s.format)


def load(path: str) -> Any:
    return load_info(path).obj


# ---------------------------------------------------------------------------------------
# safetensors: a strict reader, from the specification (huggingface/safetensors README,
# "Format"), not from zerofold; torch 1.13 has no safetensors reader of its own:
#   8 bytes: N, u64 little-endian; N bytes: a UTF-8 JSON object starting with "{", possibly
#   padded with spaces; the rest: the byte buffer. Each tensor: {"dtype", "shape",
#   "data_offsets": [BEGIN, END]} relative to the buffer; "__metadata__" a str -> str map;
#   no duplicate keys; the buffer entirely indexed, without holes (the reference validates
#   sorted offsets: each BEGIN is the previous END, the last END the buffer's length);
#   END - BEGIN = numel x element size; the reference refuses headers over 100,000,000 bytes.

MAX_HEADER = 100_000_000
# The reference's Dtype enum in declaration order (its writer sorts by it, descending):
# code -> bits per element.
DTYPES = collections.OrderedDict([
    ("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8),
    ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8), ("I16", 16), ("U16", 16), ("F16", 16),
    ("BF16", 16), ("I32", 32), ("U32", 32), ("F32", 32), ("C64", 64), ("F64", 64),
    ("I64", 64), ("U64", 64),
])
DTYPE_RANK = {code: i for i, code in enumerate(DTYPES)}
TORCH_OF = {
    "BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16,
    "F16": torch.float16, "BF16": torch.bfloat16, "I32": torch.int32, "F32": torch.float32,
    "C64": torch.complex64, "F64": torch.float64, "I64": torch.int64,
}
CODE_OF = {v: k for k, v in TORCH_OF.items()}


class FormatError(Exception):
    pass


def _no_duplicates(pairs):
    out = collections.OrderedDict()
    for k, v in pairs:
        if k in out:
            raise FormatError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _no_constants(name):
    raise FormatError(f"{name} is not JSON")


def _is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


class SafetensorsFile(collections.namedtuple("SafetensorsFile", "metadata tensors header_size")):
    """metadata: dict or None; tensors: OrderedDict name -> (code, shape, bytes) in header order."""

    def tensor(self, name):
        code, shape, data = self.tensors[name]
        dt = TORCH_OF[code]
        if not data:
            return torch.empty(shape, dtype=dt)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dt).reshape(shape)


def read_safetensors(path, writer_layout=True):
    """Parses and validates a file; writer_layout adds the reference writer's layout rules
    (header size a multiple of 8, __metadata__ first, tensors ordered by dtype rank
    descending then name, data in that order)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise FormatError("shorter than the 8-byte header size")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER:
        raise FormatError(f"header of {n} bytes is over the limit")
    if 8 + n > len(blob):
        raise FormatError(f"header of {n} bytes runs past the file's {len(blob)} bytes")
    raw = blob[8:8 + n]
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise FormatError(f"header is not UTF-8: {e}")
    if not text.startswith("{"):
        raise FormatError("header does not start with {")
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    try:
        header, end = decoder.raw_decode(text)
    except ValueError as e:
        raise FormatError(f"header is not JSON: {e}")
    if text[end:].strip(" ") != "":
        raise FormatError(f"header has {text[end:]!r} after the JSON object")
    if not isinstance(header, dict):
        raise FormatError("header is not an object")
    metadata = header.get("__metadata__")
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise FormatError("__metadata__ is not a str -> str map")
    buffer = blob[8 + n:]
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{name!r}: entry {info!r} is not dtype, shape, data_offsets")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if code not in DTYPES:
            raise FormatError(f"{name!r}: unknown dtype {code!r}")
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            raise FormatError(f"{name!r}: bad shape {shape!r}")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(o) for o in offsets):
            raise FormatError(f"{name!r}: bad data_offsets {offsets!r}")
        numel = 1
        for d in shape:
            numel *= d
        bits = numel * DTYPES[code]
        if bits % 8:
            raise FormatError(f"{name!r}: {bits} bits is not whole bytes")
        if offsets[1] - offsets[0] != bits // 8:
            raise FormatError(f"{name!r}: data_offsets {offsets} for {bits // 8} bytes")
        entries.append((name, code, shape, offsets))
    start = 0
    for name, code, shape, (b, e) in sorted(entries, key=lambda x: (x[3][0], x[3][1])):
        if b != start or e < b:
            raise FormatError(f"{name!r}: data_offsets [{b}, {e}] leave a hole or overlap at {start}")
        start = e
    if start != len(buffer):
        raise FormatError(f"tensors index {start} of the buffer's {len(buffer)} bytes")
    if writer_layout:
        if n % 8:
            raise FormatError(f"header size {n} is not a multiple of 8")
        keys = list(header)
        if metadata is not None and keys[0] != "__metadata__":
            raise FormatError("__metadata__ is not first")
        order = sorted(entries, key=lambda x: (-DTYPE_RANK[x[1]], x[0].encode("utf-8")))
        if [x[0] for x in order] != [x[0] for x in entries]:
            raise FormatError("tensors are not in the reference writer's order")
        if [x[3] for x in order] != sorted(x[3] for x in order):
            raise FormatError("data is not in header order")
    tensors = collections.OrderedDict(
        (name, (code, shape, buffer[b:e])) for name, code, shape, (b, e) in entries)
    return SafetensorsFile(metadata, tensors, n)


def load_safetensors(path: str) -> "collections.OrderedDict[str, torch.Tensor]":
    """The tensors of a safetensors file (read_safetensors, any valid layout) as
    safetensors.torch.load_file returns them: name -> tensor, in name order."""
    f = read_safetensors(path, writer_layout=False)
    return collections.OrderedDict((name, f.tensor(name)) for name in sorted(f.tensors))


# ---------------------------------------------------------------------------------------
# Describing

def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The tensor's logical bytes in C order (quantized: its int_repr)."""
    if t.is_quantized:
        t = t.int_repr()
    flat = t.detach().contiguous().view(-1)
    if flat.numel() == 0:
        return b""
    return flat.view(torch.uint8).numpy().tobytes()


def tensor_sha256(t: torch.Tensor) -> str:
    return hashlib.sha256(tensor_bytes(t)).hexdigest()


# Packed quantized dtypes: torch stores 2 (quint4x2) or 4 (quint2x4) elements per byte, the
# storage counts bytes, and element_size() says 1. A tensor of 5 quint4x2 elements has shape
# (5,), stride (1,) and a 3-byte storage.
_PACKED_BITS = {torch.quint4x2: 4, torch.quint2x4: 2}


def element_bits(t: torch.Tensor) -> int:
    return _PACKED_BITS.get(t.dtype, t.element_size() * 8)


def packed_bytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def view_extent(shape, stride, offset: int, bits: int) -> Optional[Tuple[int, int]]:
    """Half-open byte range [begin, end) of a view of `bits`-bit elements, None if it has
    no elements."""
    if any(s == 0 for s in shape):
        return None
    last = offset + sum((s - 1) * st for s, st in zip(shape, stride))
    return offset * bits // 8, packed_bytes(last + 1, bits)


def storage_usage(tensors: List[dict]) -> Dict[str, int]:
    """storage id -> bytes in the union of its views' extents (describe()'s tensors)."""
    ranges: Dict[str, List[Tuple[int, int]]] = collections.defaultdict(list)
    for t in tensors:
        ranges.setdefault(t["storage"], [])
        ext = view_extent(t["shape"], t["stride"], t["storage_offset"], t["element_bits"])
        if ext is not None:
            ranges[t["storage"]].append(ext)
    usage = {}
    for sid, rs in ranges.items():
        total, end = 0, -1
        for b, e in sorted(rs):
            if b > end:
                total += e - b
                end = e
            elif e > end:
                total += e - end
                end = e
        usage[sid] = total
    return usage


def _float_value(x: float):
    if math.isnan(x) or math.isinf(x):
        return {"float": repr(x)}
    return x


def _leaf_value(x: Any) -> Any:
    """JSON form of a non-container, non-tensor value."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return _float_value(x)
    if isinstance(x, complex):
        return {"complex": [_float_value(x.real), _float_value(x.imag)]}
    if isinstance(x, (bytes, bytearray)):
        return {"bytes": bytes(x).hex()}
    if isinstance(x, torch.dtype):
        return {"dtype": _dtype_name(x)}
    if isinstance(x, torch.Size):
        return {"size": list(x)}
    if isinstance(x, torch.device):
        return {"device": str(x)}
    if isinstance(x, (set, frozenset)):
        return {type(x).__name__: sorted((_leaf_value(v) for v in x), key=repr)}
    if isinstance(x, StubEnumMember):
        return {"enum": f"{x.owner}.{x.name}"}
    if isinstance(x, type):
        return {"class": f"{x.__module__}.{x.__qualname__}"}
    return {"repr": repr(x)}


def _path_elem(key: Any) -> Any:
    if isinstance(key, bool) or key is None:
        return str(key)
    if isinstance(key, (int, str)):
        return key
    return repr(key)


class _Describer:
    def __init__(self):
        self.tensors: List[dict] = []
        self.tensor_values: List[torch.Tensor] = []  # parallel to tensors
        self.leaves: List[dict] = []
        self.objects: List[dict] = []
        self.storage_ids: Dict[int, str] = {}
        self.storages: Dict[str, dict] = {}
        self.active: set = set()  # containers on the current path (cycle guard)

    def storage_id(self, t: torch.Tensor) -> str:
        typed = t.storage()
        untyped = typed._storage if hasattr(typed, "_storage") else typed.untyped()
        key = untyped._cdata
        if key not in self.storage_ids:
            sid = f"s{len(self.storage_ids)}"
            self.storage_ids[key] = sid
            self.storages[sid] = {"id": sid, "nbytes": untyped.nbytes(),
                                  "dtype": _dtype_name(typed.dtype)}
        return self.storage_ids[key]

    def tensor(self, path: List[Any], t: torch.Tensor) -> None:
        sid = self.storage_id(t)
        entry = {
            "name": ".".join(str(p) for p in path),
            "path": list(path),
            "dtype": _dtype_name(t.dtype),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "storage_offset": t.storage_offset(),
            "storage": sid,
            "storage_nbytes": self.storages[sid]["nbytes"],
            "storage_dtype": self.storages[sid]["dtype"],
            "itemsize": t.element_size(),
            "element_bits": element_bits(t),
            "nbytes": packed_bytes(t.numel(), element_bits(t)),
            "requires_grad": bool(t.requires_grad),
            "is_parameter": isinstance(t, torch.nn.Parameter),
            "sha256": tensor_sha256(t),
        }
        if t.is_quantized:
            entry["quantized"] = {"qscheme": str(t.qscheme()).replace("torch.", ""),
                                  "scale": t.q_scale(), "zero_point": t.q_zero_point()}
        self.tensors.append(entry)
        self.tensor_values.append(t)

    def walk(self, path: List[Any], x: Any) -> None:
        if isinstance(x, torch.Tensor):
            self.tensor(path, x)
            return
        name = ".".join(str(p) for p in path)
        if isinstance(x, (dict, list, tuple, StubObject)) and not isinstance(x, torch.Size):
            if id(x) in self.active:
                self.leaves.append({"name": name, "path": list(path), "type": "cycle",
                                    "value": None})
                return
            self.active.add(id(x))
            try:
                self.walk_container(path, name, x)
            finally:
                self.active.discard(id(x))
            return
        self.leaves.append({"name": name, "path": list(path), "type": type(x).__name__,
                            "value": _leaf_value(x)})

    def walk_container(self, path: List[Any], name: str, x: Any) -> None:
        if isinstance(x, StubObject):
            self.objects.append({"name": name, "path": list(path),
                                 "global": type(x).__stub_global__})
            if x.args:
                self.walk(path + ["args"], x.args)
            if x.kwargs:
                self.walk(path + ["kwargs"], x.kwargs)
            if x.state is not None:
                self.walk(path + ["state"], x.state)
            if x.items:
                self.walk(path + ["items"], x.items)
            if x.list_items:
                self.walk(path + ["list_items"], x.list_items)
            return
        items = x.items() if isinstance(x, dict) else enumerate(x)
        empty = True
        for k, v in items:
            empty = False
            self.walk(path + [_path_elem(k)], v)
        if empty:
            self.leaves.append({"name": name, "path": list(path), "type": type(x).__name__,
                                "value": {} if isinstance(x, dict) else []})


def describe(obj: Any) -> dict:
    d = _Describer()
    d.walk([], obj)
    usage = storage_usage(d.tensors)
    storages = []
    for sid, s in d.storages.items():
        storages.append(dict(s, referenced_nbytes=usage.get(sid, 0)))
    return {"tensors": d.tensors, "leaves": d.leaves, "objects": d.objects,
            "storages": storages}


def named_tensors(obj: Any) -> "collections.OrderedDict[str, torch.Tensor]":
    """Every tensor of a loaded tree under its describe() name, in describe() order (a name
    reached twice keeps its first tensor)."""
    d = _Describer()
    d.walk([], obj)
    out = collections.OrderedDict()
    for entry, t in zip(d.tensors, d.tensor_values):
        out.setdefault(entry["name"], t)
    return out


# ---------------------------------------------------------------------------------------
# Comparing

def compare_tensors(a: torch.Tensor, b: torch.Tensor, strides: bool = True,
                    where: str = "") -> List[str]:
    at = f"{where}: " if where else ""
    diffs = []
    if a.dtype != b.dtype:
        diffs.append(f"{at}dtype {a.dtype} != {b.dtype}")
    if tuple(a.shape) != tuple(b.shape):
        diffs.append(f"{at}shape {tuple(a.shape)} != {tuple(b.shape)}")
    if strides and tuple(a.stride()) != tuple(b.stride()):
        diffs.append(f"{at}stride {a.stride()} != {b.stride()}")
    if diffs:
        return diffs
    if a.is_quantized != b.is_quantized:
        return [f"{at}quantized {a.is_quantized} != {b.is_quantized}"]
    if a.is_quantized:
        qa = (a.qscheme(), a.q_scale(), a.q_zero_point())
        qb = (b.qscheme(), b.q_scale(), b.q_zero_point())
        if qa != qb:
            diffs.append(f"{at}quantizer {qa} != {qb}")
        a, b = a.int_repr(), b.int_repr()
    ab = a.detach().contiguous().view(-1)
    bb = b.detach().contiguous().view(-1)
    if ab.numel() and not torch.equal(ab.view(torch.uint8), bb.view(torch.uint8)):
        diffs.append(f"{at}values differ")
    return diffs


def compare(a: Any, b: Any, strides: bool = True, where: str = "") -> List[str]:
    """Differences between two loaded trees ("" where = the root)."""
    at = where or "<root>"
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return [f"{at}: {type(a).__name__} != {type(b).__name__}"]
        return compare_tensors(a, b, strides, at)
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()):
            return [f"{at}: keys {list(a.keys())} != {list(b.keys())}"]
        out = []
        for k in a:
            out += compare(a[k], b[k], strides, f"{where}.{k}" if where else str(k))
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) \
            and not isinstance(a, torch.Size):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{at}: {type(a).__name__}[{len(a)}] != {type(b).__name__}[{len(b)}]"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += compare(x, y, strides, f"{where}.{i}" if where else str(i))
        return out
    if isinstance(a, StubObject) and isinstance(b, StubObject):
        if type(a).__stub_global__ != type(b).__stub_global__:
            return [f"{at}: {type(a).__stub_global__} != {type(b).__stub_global__}"]
        out = []
        for field in ("args", "kwargs", "state", "items", "list_items"):
            out += compare(getattr(a, field), getattr(b, field), strides, f"{at}.{field}")
        return out
    if type(a) is not type(b) or _leaf_value(a) != _leaf_value(b):
        return [f"{at}: {_leaf_value(a)!r} != {_leaf_value(b)!r}"]
    return []


# ---------------------------------------------------------------------------------------
# CLI

def _main(argv: List[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("dump", "scan"):
        print("usage: torch_oracle.py dump|scan FILE", file=sys.stderr)
        return 2
    path = argv[2]
    try:
        if argv[1] == "scan":
            out = scan(path)._asdict()
        else:
            loaded = load_info(path)
            out = {"path": path, "format": loaded.format, "mode": loaded.mode,
                   "globals": loaded.globals, "stubbed": loaded.stubbed}
            out.update(describe(loaded.obj))
    except Exception as e:  # the CLI reports every failure as one line
        print(f"torch_oracle: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
