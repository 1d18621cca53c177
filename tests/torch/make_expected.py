#!/usr/bin/python3
"""Writes tests/torch/expected/*.txt: what real torch (1.13) loads from each
fixture, as one line per storage and per tensor path, for
tests/torch/checkpoint_test.cc to compare with ReadCheckpoint.

Run from the repo root with Debian's python3-torch:
    /usr/bin/python3 tests/torch/make_expected.py FILE...
(no arguments: every fixture listed in FIXTURES).

Zip archives are loaded like torch.serialization._load, legacy files like
_legacy_load, with two hooks that change nothing torch computes:
  - persistent_load records each storage key in document order, with the
    storage's dtype and byte size as the persistent id declares them;
  - the torch._utils rebuild functions are wrapped to remember which storage
    key each rebuilt tensor views.
Globals that do not import (deepspeed.*, ...) become stub classes.
Tensor paths are named as zerofold names them: dict keys (str as is, int in
decimal), list/tuple indices, and for other objects ".state.<attr>" (BUILD
state) or ".args.<i>" (reduce arguments), joined with ".".

Output lines (tab-separated):
  format  torch-zip|torch-legacy
  storage KEY DTYPE NBYTES RECORD DATA_OFFSET RECORD_SIZE   first reference order
            (DTYPE of an UntypedStorage: uint8; RECORD "storage KEY" in legacy
            files; DATA_OFFSET from the zip local header / after the count)
  tensor  NAME DTYPE SHAPE STRIDE OFFSET KEY REQUIRES_GRAD IS_PARAMETER
SHAPE and STRIDE are comma-separated ("" for a scalar).
"""
import collections
import io
import os
import pickle
import struct
import sys
import zipfile

import torch
import torch._utils as tu
import torch.serialization as ts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "torch", "expected")

FIXTURES = [
    "fixtures/deepspeed/zero1_ws2_fp16/ckpt/global_step2/mp_rank_00_model_states.pt",
    "fixtures/deepspeed/zero1_ws2_fp16/ckpt/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/zero1_ws2_fp16/ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/zero1_ws2_fp16/ground_truth.pt",
    "fixtures/deepspeed/zero1_ws2_fp16/reference_zero_to_fp32.bin",
    "fixtures/deepspeed/zero1_ws3_bf16_bf16optimizer/ckpt/global_step2/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/zero1_ws3_bf16_bf16optimizer/ckpt/global_step2/mp_rank_00_model_states.pt",
    "fixtures/deepspeed/zero2_ws3_bf16/ckpt/global_step2/bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt",
    "fixtures/deepspeed/zero3_ws3_fp16/ckpt/global_step2/zero_pp_rank_1_mp_rank_00_model_states.pt",
    "fixtures/deepspeed/zero3_ws3_fp16/ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/zero3_ws4_fp32/ckpt/global_step2/zero_pp_rank_3_mp_rank_00_model_states.pt",
    "fixtures/deepspeed/zero3_ws4_fp32/ckpt/global_step2/zero_pp_rank_3_mp_rank_00_optim_states.pt",
    "fixtures/deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin",
    "fixtures/deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00001-of-00003.bin",
    "fixtures/deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00002-of-00003.bin",
    "fixtures/deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00003-of-00003.bin",
    "fixtures/deepspeed/bloat_zero2_ws2_bf16/expected_compacted_state_dict.pt",
    "fixtures/hf/bloated/pytorch_model-00001-of-00003.bin",
    "fixtures/hf/bloated/pytorch_model-00002-of-00003.bin",
    "fixtures/hf/bloated/pytorch_model-00003-of-00003.bin",
] + ["fixtures/torch/" + f for f in (
    "bare_tensor.pt", "dtypes.pt", "legacy_dtypes.pt", "legacy_state_dict.pt", "legacy_views_tied.pt",
    "optimizer_state.pt", "parameters.pt", "python_values.pt", "quantized.pt", "scalars_empty.pt",
    "state_dict.pt", "tied_weights.pt", "transposed_expand.pt", "views.pt", "zip_rewritten.pt")]

# Globals imported for real; every other one becomes a stub, so no fixture
# can run code here.
REAL_GLOBALS = {
    ("collections", "OrderedDict"), ("_codecs", "encode"),
} | {(m, n) for m in ("builtins", "__builtin__")
     for n in ("set", "frozenset", "complex", "slice", "bytearray", "getattr")}


# --- stubs for globals that do not import ---------------------------------

class _StubMeta(type):
    def __getattr__(cls, name):  # getattr(Enum, "member") as Python >= 3.11 pickles enums
        if name.startswith("__"):
            raise AttributeError(name)
        return cls(name)


class Stub(metaclass=_StubMeta):
    def __init__(self, *args, **kwargs):
        self._stub_args = args
        self._stub_kwargs = kwargs

    def __setstate__(self, state):
        self._stub_state = state

    def __reduce_ex__(self, proto):
        raise TypeError("stub")


_stubs = {}


def stub_class(module, name):
    key = (module, name)
    if key not in _stubs:
        _stubs[key] = _StubMeta(name, (Stub,), {"__module__": module})
    return _stubs[key]


# --- the hooks ---------------------------------------------------------------

class Recorder:
    def __init__(self):
        self.storage_order = []  # (key, dtype, nbytes)
        self.records = {}  # key -> (record, data_offset, record_size)
        self.key_of_storage = {}  # id(TypedStorage) -> key
        self.key_of_tensor = {}  # id(tensor) -> key
        self.keep = []  # keeps ids stable

    def note_storage(self, key, storage, dtype, nbytes):
        if key not in {k for k, _, _ in self.storage_order}:
            self.storage_order.append((key, dtype, nbytes))
        self.key_of_storage[id(storage)] = key
        self.keep.append(storage)

    def wrap(self, fn):
        def rebuild(*args):
            t = fn(*args)
            first = args[0]
            if id(first) in self.key_of_storage:
                self.key_of_tensor[id(t)] = self.key_of_storage[id(first)]
            elif id(first) in self.key_of_tensor:  # _rebuild_parameter(data, ...)
                self.key_of_tensor[id(t)] = self.key_of_tensor[id(first)]
            self.keep.append(t)
            return t
        return rebuild


REBUILDS = {"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_qtensor", "_rebuild_parameter",
            "_rebuild_parameter_with_state"}


def make_unpickler(rec, persistent_load):
    class Unpickler(pickle.Unpickler):
        def find_class(self, mod_name, name):
            if type(name) is str and "Storage" in name:
                try:
                    return ts.StorageType(name)
                except KeyError:
                    pass
            mod_name = {"torch.tensor": "torch._tensor"}.get(mod_name, mod_name)
            if mod_name == "torch._utils" and name in REBUILDS:
                return rec.wrap(getattr(tu, name))
            if not (mod_name == "torch" or mod_name.startswith("torch.")) and (mod_name, name) not in REAL_GLOBALS:
                return stub_class(mod_name, name)
            return super().find_class(mod_name, name)

        def persistent_load(self, saved_id):
            return persistent_load(saved_id)

    return Unpickler


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def load_zip(path, rec):
    reader = torch._C.PyTorchFileReader(open(path, "rb"))
    loaded = {}

    def persistent_load(saved_id):
        typename, storage_type, key, location, numel = saved_id
        assert typename == "storage"
        dtype = torch.uint8 if storage_type is torch.UntypedStorage else storage_type.dtype
        nbytes = numel * tu._element_size(dtype)
        if key not in loaded:
            untyped = reader.get_storage_from_record("data/" + key, nbytes, torch.uint8).storage().untyped()
            loaded[key] = torch.storage.TypedStorage(wrap_storage=untyped, dtype=dtype)
        rec.note_storage(key, loaded[key], dtype_name(dtype), nbytes)
        return loaded[key]

    data = io.BytesIO(reader.get_record("data.pkl"))
    result = make_unpickler(rec, persistent_load)(data).load()
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        top = z.namelist()[0].split("/")[0]
        for key in loaded:
            info = z.getinfo(top + "/data/" + key)
            f.seek(info.header_offset + 26)
            name_len, extra_len = struct.unpack("<HH", f.read(4))
            rec.records[key] = (info.filename, info.header_offset + 30 + name_len + extra_len, info.file_size)
    return result


def load_legacy(path, rec):
    with open(path, "rb") as f:
        assert pickle.load(f) == ts.MAGIC_NUMBER
        assert pickle.load(f) == ts.PROTOCOL_VERSION
        pickle.load(f)  # sys_info
        loaded = {}

        def persistent_load(saved_id):
            typename = saved_id[0]
            if typename == "module":
                return saved_id[1]
            _, storage_type, key, location, numel, view_metadata = saved_id
            assert view_metadata is None
            dtype = torch.uint8 if storage_type is torch.UntypedStorage else storage_type.dtype
            nbytes = numel * tu._element_size(dtype)
            if key not in loaded:
                loaded[key] = torch.storage.TypedStorage(wrap_storage=torch.UntypedStorage(nbytes), dtype=dtype)
            rec.note_storage(key, loaded[key], dtype_name(dtype), nbytes)
            return loaded[key]

        result = make_unpickler(rec, persistent_load)(f).load()
        keys = pickle.load(f)
        for key in keys:  # the counts must agree, as torch checks
            (count,) = struct.unpack("<q", f.read(8))
            storage = loaded[key]
            rec.records[key] = ("storage " + key, f.tell(), storage.nbytes())
            assert count * storage.element_size() == storage.nbytes(), key
            f.seek(storage.nbytes(), 1)
        return result


# --- naming -----------------------------------------------------------------

def key_text(k):
    if isinstance(k, bool) or k is None:
        return repr(k)
    if isinstance(k, (int, str)):
        return str(k)
    return repr(k)


def walk(obj, path, out, on_path):
    if isinstance(obj, torch.Tensor):
        out.append((".".join(path), obj))
        return
    if id(obj) in on_path:
        return
    on_path.add(id(obj))
    if isinstance(obj, dict):
        for k, v in obj.items():
            walk(v, path + [key_text(k)], out, on_path)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            walk(v, path + [str(i)], out, on_path)
    elif isinstance(obj, (set, frozenset)):
        assert not any(isinstance(v, torch.Tensor) for v in obj), "tensors in a set have no stable order"
    elif isinstance(obj, Stub):
        if getattr(obj, "_stub_args", ()):  # NEWOBJ skips __init__
            walk(obj._stub_args, path + ["args"], out, on_path)
        if hasattr(obj, "_stub_state"):
            walk(obj._stub_state, path + ["state"], out, on_path)
    on_path.discard(id(obj))


def describe(path):
    rec = Recorder()
    with open(path, "rb") as f:
        head = f.read(4)
    fmt = "torch-zip" if head == b"PK\x03\x04" else "torch-legacy"
    obj = load_zip(path, rec) if fmt == "torch-zip" else load_legacy(path, rec)
    lines = ["format\t" + fmt]
    for key, dtype, nbytes in rec.storage_order:
        record, data_offset, record_size = rec.records[key]
        lines.append("\t".join(["storage", key, dtype, str(nbytes), record, str(data_offset), str(record_size)]))
    named = []
    walk(obj, [], named, set())
    for name, t in named:
        lines.append("\t".join([
            "tensor", name, dtype_name(t.dtype),
            ",".join(str(d) for d in t.shape), ",".join(str(s) for s in t.stride()),
            str(t.storage_offset()), rec.key_of_tensor[id(t)],
            str(int(t.requires_grad)), str(int(isinstance(t, torch.nn.Parameter))),
        ]))
    return "\n".join(lines) + "\n"


def main(argv):
    paths = argv[1:] or FIXTURES
    os.makedirs(OUT, exist_ok=True)
    for rel in paths:
        text = describe(os.path.join(ROOT, rel))
        out = os.path.join(OUT, rel.replace("fixtures/", "", 1).replace("/", "__") + ".txt")
        with open(out, "w") as f:
            f.write(text)
        print(out, text.count("\ntensor"), "tensors")


if __name__ == "__main__":
    main(sys.argv)
