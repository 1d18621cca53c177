#!/usr/bin/python3
"""A Python model of the DCP contract that test_dcp_merge.py asserts: used only by
`test_dcp_merge.py --self-test` to check the checker. It is not zerofold and never stands in
for it: it loads everything into memory with torch.

    dcp_reference_cli.py merge [--json] [--to safetensors] [--dtype D] [--select P] [--only G]
                               [--max-shard-size S] [--dry-run] [--verify] DIR OUT
    dcp_reference_cli.py inspect --json DIR

Errors: one line "zerofold: PATH: RECORD @ OFFSET: code: why" on stderr, exit 1, nothing
written. ZF_REFERENCE_BREAK=<mode> makes it wrong in one way (see test_dcp_merge.py).
Needs python3-zstandard for the zstd cases.
"""

import collections
import fnmatch
import io
import json
import os
import pickle
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402

BREAK = os.environ.get("ZF_REFERENCE_BREAK", "")
NON_MODEL = ("optimizer", "optim", "lr_scheduler", "dataloader", "train_state")
# torch.optim's per-param state names: GROUP.state.<param>.<name>
OPTIMIZER_STATE = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg",
                   "acc_delta", "sum", "exp_inf", "mu_product", "eta", "mu", "ax", "prev", "step_size", "row_var",
                   "col_var", "variance"}
SCHEMA = {
    ("torch.distributed._shard.checkpoint.metadata", n) for n in (
        "Metadata", "TensorStorageMetadata", "ChunkStorageMetadata", "BytesStorageMetadata", "MetadataIndex")
} | {("torch.distributed.checkpoint.metadata", n) for n in (
    "Metadata", "TensorStorageMetadata", "ChunkStorageMetadata", "BytesStorageMetadata", "MetadataIndex",
    "StorageMeta", "TensorProperties", "_MEM_FORMAT_ENCODING")} | {
    ("torch.distributed._shard.checkpoint.filesystem", "_StorageInfo"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch.distributed._shard.sharded_tensor.metadata", "TensorProperties"),
    ("torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING"),
    ("pathlib", "PosixPath"), ("pathlib._local", "PosixPath"), ("builtins", "getattr"), ("torch", "Size"),
    ("torch.serialization", "_get_layout")}
ST_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
             "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
             "BOOL": torch.bool}


class Error(Exception):
    def __init__(self, path, record, code, why, offset=0):
        super().__init__(f"zerofold: {path}: {record} @ {offset}: {code}: {why}")


class Obj:
    __hash__ = object.__hash__


class MetadataReader(pickle.Unpickler):
    def __init__(self, f, path):
        super().__init__(f)
        self.path = path

    def find_class(self, module, name):
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if (module, name) not in SCHEMA:
            root = module.split(".")[0]
            if root in ("os", "posix", "nt", "subprocess", "builtins", "__builtin__", "sys", "shutil"):
                raise Error(self.path, "pickle", "unsafe", f"global {module}.{name} would run code")
            raise Error(self.path, "pickle", "unsupported", f"global {module}.{name} is not DCP's schema"
                        + (" (torch 1.12 layout)" if "ShardedTensorStorage" in name else ""))
        if name == "Size":
            return torch.Size
        if name == "_get_layout":
            return lambda s: getattr(torch, s.split(".")[1])
        if name == "PosixPath":
            return lambda *parts: "/".join(parts)
        if name == "getattr":
            return lambda cls, member: member
        if name.endswith("MEM_FORMAT_ENCODING"):
            return lambda value: value
        if name == "TensorProperties":
            def setstate(self, state):
                self.dtype = state[0]
            return type(name, (Obj,), {"__setstate__": setstate})
        return type(name, (Obj,), {})


def fail_if(cond, *args, **kw):
    if cond:
        raise Error(*args, **kw)


# --------------------------------------------------------------------------------------------
# Reading: key -> ("tensor", dtype, shape, [(offsets, sizes, file, offset, length, transforms)])
#               or ("bytes", file, offset, length, transforms)

def find_folder(src):
    if os.path.isfile(os.path.join(src, ".metadata")):
        return src, "metadata"
    inner = os.path.join(src, "pytorch_model_fsdp_0")
    if os.path.isfile(os.path.join(inner, ".metadata")):
        return inner, "metadata"
    if any(n.startswith("shard-") and n.endswith(".safetensors") for n in os.listdir(src)):
        return src, "hf"
    raise Error(src, "folder", "unsupported", "no .metadata and no DCP safetensors shards: not a DCP checkpoint")


def read_metadata(folder):
    path = os.path.join(folder, ".metadata")
    with open(path, "rb") as f:
        try:
            md = MetadataReader(f, path).load()
        except Error:
            raise
        except Exception as e:
            raise Error(path, "pickle", "corrupt", f"cannot read: {e}")
    entries = collections.OrderedDict()
    storage = {}
    for index, info in getattr(md, "storage_data", None).items():
        off = getattr(index, "offset", None)
        storage[(index.fqn, tuple(off) if off is not None else None)] = info
    for key, smd in md.state_dict_metadata.items():
        if type(smd).__name__ == "BytesStorageMetadata":
            info = storage.get((key, None))
            fail_if(info is None, path, key, "corrupt", "no storage entry")
            entries[key] = ("bytes", info)
            continue
        fail_if(not hasattr(smd, "chunks"), path, key, "unsupported", "not the torch >= 1.13 schema")
        chunks = []
        for ch in smd.chunks:
            info = storage.get((key, tuple(ch.offsets)))
            fail_if(info is None, path, key, "corrupt", f"chunk at {list(ch.offsets)} has no storage entry")
            chunks.append((list(ch.offsets), list(ch.sizes), info))
        entries[key] = ("tensor", smd.properties.dtype, list(smd.size), chunks)
    return entries


def check_tiling(path, key, shape, boxes):
    numel = 1
    for d in shape:
        numel *= d
    total = 0
    for i, (o, s) in enumerate(boxes):
        if BREAK != "skip-bounds":
            fail_if(len(o) != len(shape) or any(a < 0 or b < 0 or a + b > d for a, b, d in zip(o, s, shape)),
                    path, key, "corrupt", f"chunk at {o} size {s} outside the shape {shape}")
        n = 1
        for b in s:
            n *= b
        total += n
        if BREAK != "skip-overlap":
            for o2, s2 in boxes[i + 1:]:
                fail_if(all(a < c + e and c < a + b for a, b, c, e in zip(o, s, o2, s2)) and shape,
                        path, key, "corrupt", f"chunks at {o} and {o2} overlap")
    if BREAK != "skip-overlap":
        fail_if(total != numel, path, key, "corrupt", f"chunks cover {total} of {numel} elements")


def read_slice(folder, key, info):
    rel = info.relative_path
    if BREAK != "follow-paths":
        fail_if(os.path.isabs(rel) or "/" in rel or rel in (".", ".."), os.path.join(folder, ".metadata"), key,
                "corrupt", f"relative_path {rel} leaves the folder")
    path = os.path.join(folder, rel)
    fail_if(not os.path.isfile(path), path, key, "corrupt", f"file {rel} missing")
    size = os.path.getsize(path)
    if BREAK != "skip-bounds":
        fail_if(info.offset < 0 or info.length < 0 or info.offset + info.length > size, path, key, "corrupt",
                f"slice [{info.offset}, +{info.length}) past the end ({size})", offset=max(0, min(info.offset, size)))
    with open(path, "rb") as f:
        f.seek(min(max(info.offset, 0), size))
        raw = f.read(max(0, min(info.length, size)))
    for d in (getattr(info, "transform_descriptors", None) or []) if BREAK != "ignore-transforms" else []:
        fail_if(d != "stream.zstd/1", path, key, "unsupported", f"transform {d}")
        import zstandard
        try:
            raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
        except zstandard.ZstdError as e:
            raise Error(path, key, "corrupt", f"zstd: {e}", offset=info.offset)
    return path, raw


def load_archive(path, key, raw):
    with tempfile.NamedTemporaryFile(suffix=".pt") as tmp:
        tmp.write(raw)
        tmp.flush()
        try:
            return oracle.load(tmp.name)
        except oracle.UnsafeFile as e:
            raise Error(path, key, "unsafe", str(e).split(": ", 1)[-1])
        except Exception as e:
            raise Error(path, key, "corrupt", f"chunk archive: {type(e).__name__}")


def assemble_metadata(folder, entries, wanted):
    meta = os.path.join(folder, ".metadata")
    out = collections.OrderedDict()
    for key, e in entries.items():
        if e[0] != "tensor":
            continue
        _, dtype, shape, chunks = e
        check_tiling(meta, key, shape, [(o, s) for o, s, _ in chunks])
        if key not in wanted:
            continue
        full = torch.zeros(shape, dtype=dtype)
        for o, s, info in chunks:
            path, raw = read_slice(folder, key, info)
            t = load_archive(path, key, raw)
            fail_if(not isinstance(t, torch.Tensor) or list(t.shape) != s or t.dtype != dtype, path, key,
                    "corrupt", f"chunk archive holds {getattr(t, 'dtype', type(t))} {list(getattr(t, 'shape', []))}, "
                    f"metadata says {dtype} {s}", offset=info.offset)
            full[tuple(slice(a, a + b) for a, b in zip(o, s))] = t
        out[key] = full
    return out


def read_hf(folder):
    chunks = collections.OrderedDict()
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".safetensors"):
            continue
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            data = f.read()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        sharding = json.loads(header.pop("__metadata__", {}).get("DCP_SHARDING_INFO", "{}"))
        for key, v in header.items():
            b, e = v["data_offsets"]
            dtype = ST_DTYPES[v["dtype"]]
            t = torch.frombuffer(bytearray(data[8 + n + b:8 + n + e]), dtype=dtype) if e > b else \
                torch.empty(0, dtype=dtype)
            chunks.setdefault(key, []).append((sharding.get(key, {}).get("saved_offsets", [0] * len(v["shape"])),
                                               t.reshape(v["shape"]), path))
    out = collections.OrderedDict()
    for key, parts in chunks.items():
        shape = [max(o[i] + t.shape[i] for o, t, _ in parts) for i in range(parts[0][1].dim())]
        check_tiling(parts[0][2], key, shape, [(o, list(t.shape)) for o, t, _ in parts])
        full = torch.zeros(shape, dtype=parts[0][1].dtype)
        for o, t, _ in parts:
            full[tuple(slice(a, a + b) for a, b in zip(o, t.shape))] = t
        out[key] = full
    return out


# --------------------------------------------------------------------------------------------

def training_groups(keys):
    """{group: why} for the top-level groups of tensor keys that are not model weights: by
    name, or holding only optimizer state (GROUP.state.<param>.<state name>, GROUP.param_groups.*)."""
    out = {}
    groups = collections.defaultdict(list)
    for k in keys:
        groups[k.split(".")[0]].append(k)
    for g, ks in groups.items():
        def optimizer_key(k):
            parts = k.split(".")
            if len(parts) > 1 and parts[1] == "param_groups":
                return True
            return len(parts) >= 4 and parts[1] == "state" and parts[-1] in OPTIMIZER_STATE
        if BREAK == "keep-optim" and g == "optim":
            continue
        if g in NON_MODEL:
            out[g] = "name"
        elif any(k.split(".")[1:2] == ["state"] for k in ks) and \
                all(optimizer_key(k) for k in ks):
            out[g] = "optimizer state"
    return out


def left_out(keys, args):
    """({group: tensors left out}, {group: why}) for the options."""
    chosen = {k for k, _ in select(keys, dict(args, only=None))}
    training = training_groups(keys)
    counts, why = collections.Counter(), {}
    for k in keys:
        if k not in chosen:
            g = k.split(".")[0]
            counts[g] += 1
            why[g] = "not selected" if args.get("select") is not None else training[g]
    return dict(counts), why


def select(keys, args):
    """[(stored key, output name)] for the options."""
    if args.get("select") is not None:
        p = args["select"]
        chosen = [(k, k[len(p) + 1:]) for k in keys if k.startswith(p + ".")]
    else:
        training = training_groups(keys)
        model = [k for k in keys if k.split(".")[0] not in training]
        strip = model and all(k.startswith("model.") for k in model) and BREAK != "keep-prefix"
        chosen = [(k, k[6:] if strip else k) for k in model]
    if args.get("only"):
        pats = args["only"].split(",")
        chosen = [(k, n) for k, n in chosen if any(fnmatch.fnmatchcase(n, p) for p in pats)]
    if BREAK == "reorder":
        chosen.reverse()
    return chosen


def parse_size(s):
    units = {"KB": 1000, "MB": 1000**2, "GB": 1000**3, "B": 1}
    for u in ("KB", "MB", "GB", "B"):
        if s.endswith(u):
            return int(s[:-len(u)]) * units[u]
    return int(s)


def write_outputs(tensors, out, args):
    st = args.get("to") == "safetensors" or out.endswith(".safetensors")
    if st:
        path = out if out.endswith(".safetensors") else os.path.join(out, "model.safetensors")
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "dcp"))
        import make_dcp2x_fixtures as v2
        with open(path, "wb") as f:
            f.write(v2.safetensors_bytes(tensors, {"format": "pt"}))
        return [path]
    if args.get("max-shard-size"):
        limit = parse_size(args["max-shard-size"])
        shards, cur, size = [], collections.OrderedDict(), 0
        for k, v in tensors.items():
            n = v.numel() * v.element_size()
            if cur and size + n > limit:
                shards.append(cur)
                cur, size = collections.OrderedDict(), 0
            cur[k] = v
            size += n
        shards.append(cur)
        os.makedirs(out, exist_ok=True)
        paths, weight_map = [], {}
        for i, shard in enumerate(shards, 1):
            p = os.path.join(out, f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin")
            torch.save(shard, p)
            paths.append(p)
            weight_map.update({k: os.path.basename(p) for k in shard})
        with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
        return paths
    path = out if out.endswith((".bin", ".pt")) else os.path.join(out, "pytorch_model.bin")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(tensors, path)
    return [path]


def merge(argv):
    args, pos = {}, []
    it = iter(argv)
    for a in it:
        if a in ("--json", "--dry-run", "--verify"):
            args[a[2:]] = True
        elif a.startswith("--"):
            args[a[2:]] = next(it)
        else:
            pos.append(a)
    src, out = pos
    folder, kind = find_folder(src)
    if kind == "metadata":
        entries = read_metadata(folder)
        keys = [k for k, e in entries.items() if e[0] == "tensor"]
        chosen = select(keys, args)
        full = assemble_metadata(folder, entries, {k for k, _ in chosen})
    else:
        full = read_hf(folder)
        chosen = select(list(full), args)
    tensors = collections.OrderedDict((name, full[k]) for k, name in chosen)
    if args.get("dtype") and BREAK != "no-cast":
        dt = getattr(torch, args["dtype"])
        tensors = collections.OrderedDict((k, v.to(dt) if v.is_floating_point() else v) for k, v in tensors.items())
    if BREAK == "flip-bit":
        for v in tensors.values():
            if v.dtype == torch.float32 and v.numel():
                v.view(-1).view(torch.int32)[0] ^= 1
                break
    if args.get("dry-run"):
        print(json.dumps({"dry_run": True, "tensors": list(tensors)}))
        return 0
    paths = write_outputs(tensors, out, args)
    counts, why = left_out(keys if kind == "metadata" else list(full), args)
    print(json.dumps({"outputs": [{"path": p} for p in paths], "left_out": counts, "left_out_why": why}))
    return 0


def inspect(argv):
    src = [a for a in argv if not a.startswith("--")][0]
    folder, kind = find_folder(src)
    tensors, values = [], []
    if kind == "metadata":
        for key, e in read_metadata(folder).items():
            if e[0] == "tensor":
                tensors.append({"name": key, "dtype": str(e[1]).replace("torch.", ""), "shape": e[2],
                                "chunks": len(e[3]), "files": sorted({c[2].relative_path for c in e[3]})})
            else:
                values.append({"name": key})
    else:
        for key, t in read_hf(folder).items():
            tensors.append({"name": key, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)})
    print(json.dumps({"files": [{"path": src, "format": "dcp", "tensors": tensors, "values": values}]}))
    return 0


def main(argv):
    try:
        if argv[0] == "merge":
            return merge(argv[1:])
        if argv[0] == "inspect":
            return inspect(argv[1:])
        print("usage: merge|inspect", file=sys.stderr)
        return 2
    except Error as e:
        if BREAK == "keep-output" and argv[0] == "merge":
            with open(argv[-1], "wb") as f:  # a partial output left behind
                f.write(b"PK")
        msg = str(e)
        if BREAK == "two-lines":
            msg = msg.replace(": ", ":\n", 1)
        print(msg, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
