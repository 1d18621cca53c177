#!/usr/bin/python3
"""`zerofold shrink --to safetensors`, --max-shard-size, --dtype and --select, checked against
real torch (tests/torch_oracle.py) with the oracle's strict safetensors reader, written from
the format's specification (huggingface/safetensors README, "Format"), not from zerofold.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_safetensors_out.py
"""

import collections
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixture_list import FIXTURES, ROOT, checkpoint_files, fixture  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import torch_oracle as oracle  # noqa: E402

ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))

# The strict safetensors reader, written from the format's specification, is the oracle's
# (tests/torch_oracle.py read_safetensors).
from torch_oracle import TORCH_OF, FormatError, read_safetensors  # noqa: E402


# ---------------------------------------------------------------------------------------
# Helpers

def run(*args, ok=True):
    p = subprocess.run([ZEROFOLD, "shrink", *args], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"zerofold shrink {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def by_path(obj, path):
    """The value at a describe() path."""
    for elem in path:
        if isinstance(obj, oracle.StubObject):
            obj = getattr(obj, elem)
        elif isinstance(obj, dict):
            obj = next(v for k, v in obj.items() if oracle._path_elem(k) == elem)
        else:
            obj = obj[elem]
    return obj


def logical_bytes(t):
    return oracle.tensor_bytes(t)


def as_json(x):
    """What json.loads gives back for a plain Python value as zerofold writes it."""
    if isinstance(x, torch.Size):
        return list(x)
    if isinstance(x, dict):
        return {str(k): as_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [as_json(v) for v in x]
    return x


def tie_groups(tensors):
    """describe() tensors -> group number per tensor: views whose byte extents in one storage
    overlap by at least one byte, transitively; numbered in order of first tensor."""
    parent = list(range(len(tensors)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i
    by_storage = collections.defaultdict(list)
    for i, t in enumerate(tensors):
        ext = oracle.view_extent(t["shape"], t["stride"], t["storage_offset"], t["element_bits"])
        if ext:
            by_storage[t["storage"]].append((ext, i))
    for exts in by_storage.values():
        exts.sort()
        end, last = -1, None
        for (b, e), i in exts:
            if last is not None and b < end:
                a, c = find(last), find(i)
                parent[max(a, c)] = min(a, c)
                end = max(end, e)
            else:
                end = e
            last = i
    ids, out = {}, []
    for i in range(len(tensors)):
        out.append(ids.setdefault(find(i), len(ids)))
    return out


def greedy_shards(items, limit):
    """items: (name, nbytes, group) in output order -> list of shards (lists of names): groups
    in order of first name, a new shard when the group would pass the limit (transformers'
    shard_checkpoint), every name with its group."""
    order, size = [], collections.OrderedDict()
    for _, nbytes, g in items:
        if g not in size:
            order.append(g)
            size[g] = 0
        size[g] += nbytes
    shard_of, shards, cur = {}, [], 0
    for g in order:
        if not shards or cur + size[g] > limit:
            shards.append([])
            cur = 0
        shard_of[g] = len(shards) - 1
        cur += size[g]
    out = [[] for _ in shards]
    for name, _, g in items:
        out[shard_of[g]].append(name)
    return out


EXPECTED_REFUSALS = {
    # safetensors has no code for these dtypes; nothing is written.
    "torch/dtypes.pt": "complex128: unsupported: complex128 tensors have no safetensors dtype",
    "torch/legacy_dtypes.pt": "complex128: unsupported: complex128 tensors have no safetensors dtype",
    "torch/quantized.pt": "unsupported: quantized qint8 tensors have no safetensors dtype",
    "torch/quantized_subbyte.pt": "unsupported: quantized quint4x2 tensors have no safetensors dtype",
}


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zf_st_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)


# ---------------------------------------------------------------------------------------

class StrictReader(Tmp):
    """The reader refuses what the specification forbids (so passing it means something)."""

    def write(self, header_bytes, buffer=b"", pad=True):
        if pad:
            header_bytes += b" " * (-len(header_bytes) % 8)
        path = self.out("x.safetensors")
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + buffer)
        return path

    def test_accepts_a_valid_file_and_refuses_each_violation(self):
        good = b'{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
        f = read_safetensors(self.write(good, b"\0" * 8))
        self.assertEqual(list(f.tensors), ["a"])
        bad = [
            (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', b"\0" * 9),   # tail
            (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"\0" * 4),   # size
            (b'{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),   # dtype
            (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
             b'"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),    # duplicate
            (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12), # hole
            (b'{"__metadata__":{"n":1}}', b""),                                       # not str
            (b' {"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', b"\0" * 4),   # not {
            (b'{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}', b""),        # shape
            (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}', b"\0" * 4),
        ]
        for header, buf in bad:
            with self.assertRaises(FormatError, msg=header):
                read_safetensors(self.write(header, buf))
        with self.assertRaises(FormatError):  # unpadded: the writer's layout rule
            read_safetensors(self.write(good + b" ", b"\0" * 8, pad=False))


class EveryFixture(Tmp):
    """Every checkpoint fixture (but bad/) to one .safetensors file: the same names, dtypes,
    shapes and logical bytes as torch loads; plain values in __metadata__ equal torch's."""

    def check_metadata(self, rel, obj, described, metadata, stderr):
        self.assertEqual(metadata.get("format"), "pt", rel)
        entries = {k: json.loads(v) for k, v in metadata.items() if k not in ("format", "zerofold.tied")}
        for leaf in described["leaves"]:
            path, name = leaf["path"], leaf["name"]
            for i in range(len(path), -1, -1):
                key = ".".join(str(p) for p in path[:i])
                if key in entries:
                    value = entries[key]
                    for p in path[i:]:
                        value = value[str(p)] if isinstance(value, dict) else value[p]
                    self.assertEqual(value, as_json(by_path(obj, path)), f"{rel}: {name}")
                    break
            else:
                # Not plain data: named in a warning (at it or at a containing value).
                owners = [".".join(str(p) for p in path[:i]) for i in range(len(path) + 1)]
                self.assertTrue(any(f'value "{o}" not written' in stderr for o in owners),
                                f"{rel}: {name} is neither in __metadata__ nor in a warning\n{stderr}")

    def test_every_fixture(self):
        rels = [r for r in checkpoint_files() if not r.startswith("bad/")]
        self.assertGreaterEqual(len(rels), 35)
        converted = 0
        for rel in rels:
            with self.subTest(rel=rel):
                out = self.out("out.safetensors")
                p = run("--to", "safetensors", "--force", fixture(rel), out, ok=False)
                if rel in EXPECTED_REFUSALS:
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertIn(EXPECTED_REFUSALS[rel], p.stderr)
                    self.assertFalse(os.path.exists(out))
                    continue
                self.assertEqual(p.returncode, 0, p.stderr)
                obj = oracle.load(fixture(rel))
                d = oracle.describe(obj)
                f = read_safetensors(out)
                self.assertEqual(sorted(f.tensors), sorted(t["name"] for t in d["tensors"]))
                for t in d["tensors"]:
                    code, shape, data = f.tensors[t["name"]]
                    self.assertEqual(TORCH_OF[code], getattr(torch, t["dtype"]), t["name"])
                    self.assertEqual(shape, t["shape"], t["name"])
                    self.assertEqual(hashlib.sha256(data).hexdigest(), t["sha256"], t["name"])
                self.check_metadata(rel, obj, d, f.metadata, p.stderr)
                os.remove(out)
                converted += 1
        self.assertGreaterEqual(converted, 32)


class Ties(Tmp):
    def test_tied_names_written_or_deduplicated(self):
        for rel in ("torch/tied_weights.pt", "torch/legacy_views_tied.pt", "torch/views.pt"):
            d = oracle.describe(oracle.load(fixture(rel)))
            names = [t["name"] for t in d["tensors"]]
            run("--to", "safetensors", "--force", fixture(rel), self.out("all.safetensors"))
            self.assertEqual(sorted(read_safetensors(self.out("all.safetensors")).tensors), sorted(names))
            # Dropped: a name whose view equals an earlier name's.
            kept, dropped = [], {}
            for t in d["tensors"]:
                key = (t["storage"], t["storage_offset"], tuple(t["shape"]), tuple(t["stride"]), t["dtype"])
                first = next((k for k in kept if k[0] == key), None)
                if first:
                    dropped[t["name"]] = first[1]
                else:
                    kept.append((key, t["name"]))
            run("--to", "safetensors", "--dedupe-tied", "--force", fixture(rel), self.out("dedup.safetensors"))
            f = read_safetensors(self.out("dedup.safetensors"))
            self.assertEqual(sorted(f.tensors), sorted(k[1] for k in kept), rel)
            tied = json.loads(f.metadata["zerofold.tied"]) if "zerofold.tied" in f.metadata else {}
            self.assertEqual(tied, dropped, rel)
            for t in d["tensors"]:
                if t["name"] in f.tensors:
                    self.assertEqual(hashlib.sha256(f.tensors[t["name"]][2]).hexdigest(), t["sha256"])
            if rel == "torch/tied_weights.pt":
                self.assertEqual(dropped, {"lm_head.weight": "embed.weight", "decoder.weight": "embed.weight"})


BLOAT = "deepspeed/bloat_zero2_ws2_bf16"


class BloatShards(Tmp):
    """The bloated DeepSpeed shards to sharded outputs with a small --max-shard-size."""

    LIMIT = 20_000

    def check_folder(self, out, prefix, ext, want_shards, nbytes_of, values):
        index = load_json(os.path.join(out, f"{prefix}{ext}.index.json"))
        wm = index["weight_map"]
        self.assertEqual(list(wm), sorted(wm))
        n = len(want_shards)
        files = [f"{prefix}-{k + 1:05d}-of-{n:05d}{ext}" for k in range(n)]
        self.assertEqual(sorted(set(wm.values())), files)
        for k, names in enumerate(want_shards):
            self.assertEqual(sorted(x for x, f in wm.items() if f == files[k]), sorted(names), files[k])
        self.assertEqual(index["metadata"]["total_size"], sum(nbytes_of[x] for x in wm))
        self.assertEqual(sorted(wm), sorted(values))
        stale = [f for f in os.listdir(out) if f.startswith(prefix + "-") and f not in files]
        self.assertEqual(stale, [])
        return files

    def test_folder_to_safetensors_shards(self):
        src = fixture(BLOAT)
        index = load_json(os.path.join(src, "pytorch_model.bin.index.json"))
        shard_files = list(collections.OrderedDict.fromkeys(index["weight_map"].values()))
        items, values, nbytes_of = [], {}, {}
        base = 0
        for sf in shard_files:
            obj = oracle.load(os.path.join(src, sf))
            d = oracle.describe(obj)
            groups = tie_groups(d["tensors"])
            for t, g in zip(d["tensors"], groups):
                n = t["nbytes"]
                items.append((t["name"], n, base + g))
                values[t["name"]] = by_path(obj, t["path"])
                nbytes_of[t["name"]] = n
            base += max(groups) + 1
        out = self.out("st")
        run("--to", "safetensors", "--max-shard-size", str(self.LIMIT), src, out)
        want = greedy_shards(items, self.LIMIT)
        self.assertGreater(len(want), 3)
        files = self.check_folder(out, "model", ".safetensors", want, nbytes_of, values)
        for k, f in enumerate(files):
            st = read_safetensors(os.path.join(out, f))
            self.assertEqual(sorted(st.tensors), sorted(want[k]))
            self.assertEqual(st.metadata, {"format": "pt"})
            for name in st.tensors:
                self.assertEqual(st.tensors[name][2], logical_bytes(values[name]), name)
            data = sum(len(st.tensors[x][2]) for x in st.tensors)
            self.assertTrue(data <= self.LIMIT or len(set(i[2] for i in items if i[0] in st.tensors)) == 1, f)
        # config-like files copied, torch weights not.
        self.assertTrue(os.path.exists(os.path.join(out, "bloat_info.json")))
        self.assertFalse(any(f.startswith("pytorch_model") for f in os.listdir(out)))

    def single_file_items(self, nbytes_per="name", scale=1):
        src = fixture(BLOAT + "/pytorch_model.bin")
        obj = oracle.load(src)
        d = oracle.describe(obj)
        groups = tie_groups(d["tensors"])
        items, values, nbytes_of, span = [], {}, {}, {}
        for t, g in zip(d["tensors"], groups):
            n = t["nbytes"]
            ext = oracle.view_extent(t["shape"], t["stride"], t["storage_offset"], t["element_bits"])
            b, e = span.get(g, (ext[0], ext[1]))
            span[g] = (min(b, ext[0]), max(e, ext[1]))
            values[t["name"]] = by_path(obj, t["path"])
            nbytes_of[t["name"]] = n
            items.append([t["name"], n, g])
        if nbytes_per == "group":  # torch output: a group is one storage, counted once
            seen = set()
            for it in items:
                it[1] = 0 if it[2] in seen else (span[it[2]][1] - span[it[2]][0]) * scale
                seen.add(it[2])
        return src, d, [tuple(i) for i in items], values, nbytes_of

    def test_single_file_to_safetensors_shards_keeps_ties_together(self):
        src, d, items, values, nbytes_of = self.single_file_items()
        tied = [name for name, _, g in items if g == dict((n, g) for n, _, g in items)["lm_head.weight"]]
        self.assertEqual(sorted(tied), ["lm_head.weight", "transformer.wte.weight"])
        out = self.out("st1")
        run("--to", "safetensors", "--max-shard-size", str(self.LIMIT), src, out + "/")
        want = greedy_shards(items, self.LIMIT)
        files = self.check_folder(out, "model", ".safetensors", want, nbytes_of, values)
        wm = load_json(os.path.join(out, "model.safetensors.index.json"))["weight_map"]
        self.assertEqual(wm["lm_head.weight"], wm["transformer.wte.weight"])
        for f in files:
            st = read_safetensors(os.path.join(out, f))
            for name in st.tensors:
                self.assertEqual(st.tensors[name][2], logical_bytes(values[name]), name)

    def test_single_file_to_torch_shards(self):
        src, d, items, values, nbytes_of = self.single_file_items("group")
        out = self.out("pt")
        run("--max-shard-size", str(self.LIMIT), src, out + "/")
        want = greedy_shards(items, self.LIMIT)
        files = self.check_folder(out, "pytorch_model", ".bin", want, nbytes_of, values)
        for k, f in enumerate(files):
            path = os.path.join(out, f)
            loaded = oracle.load_info(path)
            self.assertEqual(loaded.mode, "weights_only", f)
            self.assertEqual(list(loaded.obj), want[k])
            for name, t in loaded.obj.items():
                self.assertEqual(oracle.compare_tensors(t, values[name]), [], name)
            # No storage carries bytes its tensors do not reference.
            for s in oracle.describe(loaded.obj)["storages"]:
                self.assertEqual(s["nbytes"], s["referenced_nbytes"], f)
            if "lm_head.weight" in loaded.obj:
                self.assertEqual(loaded.obj["lm_head.weight"].data_ptr(),
                                 loaded.obj["transformer.wte.weight"].data_ptr())

    def test_one_shard_is_pytorch_model_bin_without_index(self):
        src = fixture(BLOAT + "/pytorch_model.bin")
        out = self.out("one")
        run(src, out + "/")
        self.assertEqual(sorted(os.listdir(out)), ["pytorch_model.bin"])
        self.assertEqual(oracle.compare(oracle.load(os.path.join(out, "pytorch_model.bin")), oracle.load(src)), [])
        # A later sharded save removes it; a later single save removes the shards.
        run("--force", "--max-shard-size", "30KB", src, out + "/")
        self.assertNotIn("pytorch_model.bin", os.listdir(out))
        run("--force", src, out + "/")
        self.assertEqual(sorted(os.listdir(out)), ["pytorch_model.bin"])


# ---------------------------------------------------------------------------------------
# --dtype

def _bits(values, int_dtype, float_dtype):
    width = torch.iinfo(int_dtype).bits
    return torch.tensor([v - (1 << width) if v >= 1 << (width - 1) else v for v in values],
                        dtype=torch.int64).to(int_dtype).view(float_dtype)


def dtype_fixture():
    """Random bit patterns and edge values of every floating dtype, in several layouts."""
    g = torch.Generator().manual_seed(7)
    edges32 = [0x0, 0x80000000, 0x1, 0x7FFFFF, 0x8000, 0x18000, 0x3F808000, 0x3F818000, 0x3F808001,
               0x7F7FFFFF, 0x7F7F8000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF,
               0x477FE000, 0x477FEFFF, 0x477FF000, 0xC77FF000, 0x33800000, 0x33000000, 0x33000001,
               0x33C00000, 0x38800000, 0x387FC000, 0x387FE000, 0x3F801000, 0x3F803000, 0x337FFFFF]
    rnd32 = torch.randint(-2 ** 31, 2 ** 31, (200_000,), generator=g, dtype=torch.int64).to(torch.int32)
    f32 = torch.cat([_bits(edges32, torch.int32, torch.float32), rnd32.view(torch.float32)])
    # float64: random bits (under 32768 elements: one inner loop in torch), values halfway
    # between neighbouring floats (ties for float64 -> float32), and values whose rounding
    # to float32 makes a float16/bfloat16 tie (double rounding).
    rnd64 = torch.randint(-2 ** 62, 2 ** 62, (30_000,), generator=g, dtype=torch.int64) * 2
    rnd64 = rnd64 + torch.randint(0, 2, (30_000,), generator=g, dtype=torch.int64)
    lo = torch.randn(2000, generator=g, dtype=torch.float32)
    hi = torch.nextafter(lo, torch.full_like(lo, float("inf")))
    mids = (lo.double() + hi.double()) / 2
    double_round = torch.tensor([1 + 2 ** -11 + 2 ** -30, 1 + 2 ** -8 + 2 ** -30, 65519.99, 1e-40,
                                 -(1 + 2 ** -11 + 2 ** -40), 3.0e38 * 1.5, 2 ** -25 + 2 ** -50], dtype=torch.float64)
    f64 = torch.cat([rnd64.view(torch.float64), mids, double_round])
    all16 = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    nan64 = _bits([0x7FF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF, 0x3FF0000000000000] * 5 +
                  [0x7FF8000000000000, 0xFFF0000000000001], torch.int64, torch.float64)
    nan32 = _bits([0x7FFFFFFF, 0x7FC00001, 0xFF800001, 0x3F800000] * 16, torch.int32, torch.float32)
    matrix = nan32.clone().view(8, 8)
    sd = collections.OrderedDict()
    sd["f32"] = f32
    sd["f32_alias"] = f32                       # the same tensor under two names
    sd["f32_T"] = f32[:4096].view(64, 64).t()   # a transposed view of the same storage
    sd["f64"] = f64
    sd["f64_tail"] = nan64                      # 22 elements: torch's float64 vector loop tail
    # A strided float64 view holds no NaN: the tail of torch's float64 -> bfloat16 loop is
    # modeled for C-contiguous views only (src/torch/cast.h NanRule).
    sd["f64_strided"] = mids.clone()[::3]
    sd["f16_all"] = all16.view(torch.float16)
    sd["bf16_all"] = all16.clone().view(torch.bfloat16)
    sd["nan32_strided"] = nan32.clone()[1::3]   # torch's scalar loop: NaN 0x7FC0
    sd["nan32_T"] = matrix.t()
    sd["nan32_col"] = nan32.clone().view(8, 8)[:, 1]
    sd["nan32_expand"] = nan32[:7].clone().expand(5, 7)
    sd["nan32_expand_inner"] = nan32[:7].clone().view(7, 1).expand(7, 5)
    sd["nan32_0dim"] = nan32[0].clone()
    sd["nan32_param"] = torch.nn.Parameter(nan32[:10].clone(), requires_grad=True)
    sd["ints"] = torch.arange(-5, 5, dtype=torch.int64)
    sd["flags"] = torch.tensor([True, False])
    sd["complex"] = torch.randn(3, dtype=torch.complex64, generator=g)
    sd["empty"] = torch.empty(0, 3)
    return sd


class Dtype(Tmp):
    def test_cast_matches_torch_to(self):
        src = self.out("in.pt")
        torch.save(dtype_fixture(), src)
        sd = oracle.load(src)
        self.assertFalse(torch.isnan(sd["f64_strided"]).any())
        for target in ("bfloat16", "float16", "float32"):
            dt = getattr(torch, target)
            want = {k: (v.to(dt) if v.is_floating_point() else v) for k, v in sd.items()}
            # torch output: views, strides and ties kept, each storage cast once.
            pt = self.out(f"out_{target}.pt")
            run("--dtype", target, src, pt)
            info = oracle.load_info(pt)
            self.assertEqual(info.mode, "weights_only")
            got = info.obj
            self.assertEqual(list(got), list(sd))
            for k, v in sd.items():
                with self.subTest(target=target, out="torch", name=k):
                    self.assertEqual(got[k].dtype, want[k].dtype)
                    self.assertEqual(got[k].stride(), v.stride())
                    self.assertEqual(got[k].requires_grad, v.requires_grad)
                    self.assertEqual(isinstance(got[k], torch.nn.Parameter), isinstance(v, torch.nn.Parameter))
                    self.assertEqual(logical_bytes(got[k]), logical_bytes(want[k]))
            self.assertEqual(got["f32"].data_ptr(), got["f32_alias"].data_ptr())
            self.assertEqual(got["f32"].storage().data_ptr(), got["f32_T"].storage().data_ptr())
            # safetensors output: contiguous, every name.
            st_path = self.out(f"out_{target}.safetensors")
            run("--to", "safetensors", "--dtype", target, src, st_path)
            st = read_safetensors(st_path)
            self.assertEqual(sorted(st.tensors), sorted(sd))
            for k in sd:
                with self.subTest(target=target, out="safetensors", name=k):
                    code, shape, data = st.tensors[k]
                    self.assertEqual(TORCH_OF[code], want[k].dtype)
                    self.assertEqual(shape, list(want[k].shape))
                    self.assertEqual(data, logical_bytes(want[k]))

    def test_torch_folder_cast_keeps_its_shards(self):
        src = fixture("hf/bloated")
        out = self.out("bf16")
        run("--dtype", "bfloat16", src, out)
        index_in = load_json(os.path.join(src, "pytorch_model.bin.index.json"))
        index = load_json(os.path.join(out, "pytorch_model.bin.index.json"))
        self.assertEqual(index["weight_map"], index_in["weight_map"])
        total = 0
        for f in sorted(set(index["weight_map"].values())):
            want = oracle.load(os.path.join(src, f))
            got = oracle.load(os.path.join(out, f))
            self.assertEqual(list(got), list(want))
            for k, v in want.items():
                w = v.to(torch.bfloat16) if v.is_floating_point() else v
                self.assertEqual(oracle.compare_tensors(got[k], w, strides=False), [], k)
                if index["weight_map"].get(k) == f:
                    total += w.numel() * w.element_size()
        self.assertEqual(index["metadata"]["total_size"], total)
        self.assertTrue(os.path.exists(os.path.join(out, "config.json")))

    def test_bad_targets_are_usage_errors(self):
        p = run("--dtype", "float64", fixture("torch/state_dict.pt"), self.out("x.pt"), ok=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--dtype takes bfloat16 (bf16), float16 (fp16, half) or float32 (fp32, float), not 'float64'", p.stderr)


# ---------------------------------------------------------------------------------------
# --select

ZERO2 = "deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt"


class Select(Tmp):
    def test_module_of_zero2_model_states(self):
        src = fixture(ZERO2)
        want = oracle.load(src)["module"]
        pt = self.out("module.pt")
        run("--select", "module", src, pt)
        info = oracle.load_info(pt)
        self.assertEqual(info.mode, "weights_only")
        self.assertEqual(oracle.compare(info.obj, want), [])
        # Each tensor's storage now holds only the bytes its views reference.
        for s in oracle.describe(info.obj)["storages"]:
            self.assertEqual(s["nbytes"], s["referenced_nbytes"])
        st = self.out("module.safetensors")
        run("--to", "safetensors", "--select", "module", "--dtype", "float32", src, st)
        f = read_safetensors(st)
        self.assertEqual(sorted(f.tensors), sorted(want))
        for k, v in want.items():
            want_k = v.float() if v.is_floating_point() else v
            self.assertEqual(f.tensors[k][2], logical_bytes(want_k), k)

    def test_nested_select_and_missing_keys(self):
        src = fixture("torch/optimizer_state.pt")
        pt = self.out("state0.pt")
        run("--select", "optimizer/state/0", src, pt)
        self.assertEqual(oracle.compare(oracle.load(pt), oracle.load(src)["optimizer"]["state"][0]), [])
        p = run("--select", "optimizer/stat", src, self.out("x.pt"), ok=False)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.splitlines()[0],
                         f'zerofold: {src}: invalid argument: --select: no key "stat" in the dict at '
                         f'"optimizer"; its keys: "state", "param_groups"')
        self.assertFalse(os.path.exists(self.out("x.pt")))


class UsageErrors(Tmp):
    def test_refusals(self):
        src = fixture("torch/state_dict.pt")
        cases = [
            (["--max-shard-size", "1KB", src, self.out("a.pt")], "--max-shard-size writes shards into a folder"),
            (["--dedupe-tied", src, self.out("a.pt")], "--dedupe-tied needs --to safetensors"),
            (["--to", "onnx", src, self.out("a.pt")], "--to takes torch or safetensors, not 'onnx'"),
            (["--select", "a", fixture(BLOAT), self.out("f")], "--select takes one checkpoint file"),
            (["--max-shard-size", "1KB", fixture(BLOAT), self.out("f")], "a torch folder keeps its shards"),
        ]
        for args, message in cases:
            p = run(*args, ok=False)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)


if __name__ == "__main__":
    unittest.main()
