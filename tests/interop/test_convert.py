#!/usr/bin/python3
"""`zerofold convert` and `zerofold diff`, checked against real torch (tests/torch_oracle.py):
every fixture converted torch -> safetensors -> torch and compared element for element with
what torch loads from the input; legacy files to zip archives; folders to sharded folders
both ways; --dtype against torch's .to(); and diff's reported counts, first indices, largest
absolute and relative differences and exit codes against what torch computes for pairs of
files made with torch.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_convert.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixture_list import ROOT, checkpoint_files, fixture  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import torch_oracle as oracle  # noqa: E402

ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))

# Dtypes safetensors has codes for (the others make convert refuse the file, exit 1).
SAFETENSORS_DTYPES = {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                      torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64}
FLOATING = {torch.float16, torch.bfloat16, torch.float32, torch.float64}


def zf(*args, ok=True):
    p = subprocess.run([ZEROFOLD, *args], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"zerofold {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def torch_tensors(path):
    return oracle.named_tensors(oracle.load(path))


def torch_checkpoints():
    """Torch checkpoint fixtures that load (the bad/ ones are refused on purpose)."""
    out = []
    for rel in checkpoint_files():
        if rel.startswith("bad/") or not rel.endswith((".pt", ".bin")):
            continue
        out.append(rel)
    return out


class ConvertTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zf_convert_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def assertSameTensors(self, want, got, strides):
        self.assertEqual(list(sorted(want)), list(sorted(got)))
        for name, t in want.items():
            self.assertEqual(oracle.compare_tensors(t, got[name], strides=strides, where=name), [])

    def test_torch_to_safetensors_to_torch(self):
        converted = 0
        for rel in torch_checkpoints():
            with self.subTest(rel):
                src = fixture(rel)
                want = torch_tensors(src)
                st = self.out(rel.replace("/", "_") + ".safetensors")
                p = zf("convert", src, st, ok=False)
                if any(t.dtype not in SAFETENSORS_DTYPES or t.is_quantized for t in want.values()):
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertIn("unsupported", p.stderr)
                    self.assertFalse(os.path.exists(st))
                    continue
                self.assertEqual(p.returncode, 0, p.stderr)
                # The file follows the reference writer's layout; tensors as torch holds them.
                oracle.read_safetensors(st, writer_layout=True)
                got = oracle.load_safetensors(st)
                self.assertSameTensors(want, got, strides=False)
                # Back to torch: torch.save of the state dict load_file returns.
                back = self.out(rel.replace("/", "_") + ".back.pt")
                zf("convert", st, back)
                info = oracle.load_info(back)
                self.assertEqual(info.mode, "weights_only")
                self.assertIsInstance(info.obj, dict)
                self.assertEqual(list(info.obj), sorted(got, key=lambda n: n.encode("utf-8")))
                self.assertSameTensors(got, info.obj, strides=True)
                # One storage per tensor, exactly its bytes, at offset 0.
                d = oracle.describe(info.obj)
                self.assertEqual(len(d["storages"]), len(d["tensors"]))
                for t in d["tensors"]:
                    self.assertEqual(t["storage_offset"], 0, t["name"])
                    self.assertEqual(t["storage_nbytes"], t["nbytes"], t["name"])
                converted += 1
        self.assertGreaterEqual(converted, 15)

    def test_legacy_to_zip(self):
        # Legacy files by their bytes, not their names (a folder named
        # *_legacy also holds zip files).
        legacy = [rel for rel in torch_checkpoints() if not zipfile.is_zipfile(fixture(rel))]
        self.assertGreaterEqual(len(legacy), 3)
        for rel in legacy:
            with self.subTest(rel):
                src = fixture(rel)
                out = self.out(os.path.basename(rel))
                zf("convert", src, out)
                self.assertTrue(zipfile.is_zipfile(out))
                self.assertEqual(oracle.compare(oracle.load(src), oracle.load(out)), [])
                self.assertEqual(zf("diff", src, out).returncode, 0)

    def test_folder_to_sharded_folder_and_back(self):
        for folder in ("hf/bloated", "deepspeed/bloat_zero2_ws2_bf16"):
            with self.subTest(folder):
                src = fixture(folder)
                index = load_json(os.path.join(src, "pytorch_model.bin.index.json"))
                want = {}
                for shard in sorted(set(index["weight_map"].values())):
                    want.update(torch_tensors(os.path.join(src, shard)))
                st = self.out(folder.replace("/", "_") + "_st") + "/"
                zf("convert", "--to", "safetensors", "--max-shard-size", "8KB", src, st)
                st_index = load_json(os.path.join(st, "model.safetensors.index.json"))
                shards = sorted(set(st_index["weight_map"].values()))
                self.assertGreater(len(shards), 1)
                got = {}
                for shard in shards:
                    f = oracle.read_safetensors(os.path.join(st, shard), writer_layout=True)
                    for name in f.tensors:
                        self.assertEqual(st_index["weight_map"][name], shard)
                        got[name] = f.tensor(name)
                self.assertSameTensors(want, got, strides=False)
                self.assertEqual(st_index["metadata"]["total_size"],
                                 sum(len(oracle.tensor_bytes(t)) for t in want.values()))
                # safetensors shards -> torch shards of the same numbers.
                tf = self.out(folder.replace("/", "_") + "_torch") + "/"
                zf("convert", "--to", "torch", st, tf)
                t_index = load_json(os.path.join(tf, "pytorch_model.bin.index.json"))
                self.assertEqual(t_index["metadata"], st_index["metadata"])
                back = {}
                for shard in sorted(set(t_index["weight_map"].values())):
                    info = oracle.load_info(os.path.join(tf, shard))
                    self.assertEqual(info.mode, "weights_only")
                    back.update(oracle.named_tensors(info.obj))
                self.assertSameTensors(want, back, strides=False)
                self.assertEqual(zf("diff", src, tf).returncode, 0)
                self.assertEqual(zf("diff", st, tf).returncode, 0)
        # The bloated DeepSpeed folder holds what its compacted single file holds.
        compact = torch_tensors(fixture("deepspeed/bloat_zero2_ws2_bf16/expected_compacted_state_dict.pt"))
        one = self.out("bloat.safetensors")
        zf("convert", fixture("deepspeed/bloat_zero2_ws2_bf16"), one)
        self.assertSameTensors(compact, oracle.load_safetensors(one), strides=False)

    def test_dtype(self):
        src = fixture("torch/state_dict.pt")
        want = torch_tensors(src)
        st = self.out("bf16.safetensors")
        zf("convert", "--dtype", "bfloat16", src, st)
        got = oracle.load_safetensors(st)
        for name, t in want.items():
            expect = t.to(torch.bfloat16) if t.dtype in FLOATING else t
            self.assertEqual(oracle.compare_tensors(expect, got[name], strides=False, where=name), [])
        # safetensors in, torch out, cast to float16.
        f32 = self.out("f32.safetensors")
        zf("convert", src, f32)
        f16 = self.out("f16.pt")
        zf("convert", "--dtype", "float16", f32, f16)
        got16 = torch_tensors(f16)
        for name, t in want.items():
            expect = t.to(torch.float16) if t.dtype in FLOATING else t
            self.assertEqual(oracle.compare_tensors(expect, got16[name], strides=False, where=name), [])
        # safetensors to safetensors: cast, re-sharded, selected.
        st16 = self.out("st16") + "/"
        zf("convert", "--dtype", "bfloat16", "--max-shard-size", "100", "--to", "safetensors", f32, st16)
        index = load_json(os.path.join(st16, "model.safetensors.index.json"))
        self.assertGreater(len(set(index["weight_map"].values())), 1)
        got_st = {}
        for shard in sorted(set(index["weight_map"].values())):
            got_st.update(oracle.load_safetensors(os.path.join(st16, shard)))
        for name, t in want.items():
            expect = t.to(torch.bfloat16) if t.dtype in FLOATING else t
            self.assertEqual(oracle.compare_tensors(expect, got_st[name], strides=False, where=name), [])
        one = self.out("one.safetensors")
        zf("convert", "--select", "0.weight", f32, one)
        self.assertEqual(oracle.compare_tensors(want["0.weight"], oracle.load_safetensors(one)["0.weight"],
                                                strides=False), [])


def expected_diff(a, b, atol=None, rtol=None, equal_nan=False):
    """What torch computes for a pair, as diff reports it (float64 arithmetic)."""
    close_mode = atol is not None or rtol is not None
    x, y = a.double(), b.double()
    if close_mode:
        differs = ~torch.isclose(x, y, rtol=1e-05 if rtol is None else rtol,
                                 atol=1e-08 if atol is None else atol, equal_nan=equal_nan)
    else:
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        differs = a.contiguous().view(ints) != b.contiguous().view(ints)
    finite = torch.isfinite(x) & torch.isfinite(y)
    abs_diff = (x - y).abs()
    max_abs = abs_diff[finite].max().item() if finite.any() else 0.0
    rel_ok = finite & (y != 0)
    max_rel = (abs_diff[rel_ok] / y[rel_ok].abs()).max().item() if rel_ok.any() else 0.0
    count = int(differs.sum())
    first = [int(i) for i in differs.nonzero()[0]] if count else None
    return {"differing": count, "first_index": first, "max_abs_diff": max_abs,
            "max_rel_diff": max_rel, "same": count == 0}


class DiffTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zf_diff_")
        self.gen = torch.Generator().manual_seed(1234)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def pair(self, dtype, shape=(37, 53), changes=(((3, 7), 0.5), ((20, 0), -1e-3), ((36, 52), 2.0))):
        a = torch.randn(*shape, generator=self.gen, dtype=torch.float64).to(dtype)
        b = a.clone()
        for index, delta in changes:
            b[index] = b[index] + delta
        return a, b

    def run_diff(self, a_path, b_path, *flags):
        p = zf("diff", "--json", *flags, a_path, b_path, ok=False)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return p.returncode, json.loads(p.stdout)

    def check(self, report, name, want):
        t = [x for x in report["tensors"] if x["name"] == name][0]
        for key, value in want.items():
            self.assertEqual(t[key], value, f"{name} {key}: {t}")

    def test_perturbed_pairs_against_torch(self):
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            with self.subTest(dtype=dtype):
                a, b = self.pair(dtype)
                a[5, 5] = float("nan")
                b[5, 5] = float("nan")
                b[6, 6] = -0.0 if a[6, 6].item() == 0 else b[6, 6]
                ints = torch.arange(12, dtype=torch.int64).reshape(3, 4)
                ints_b = ints.clone()
                ints_b[2, 1] += 7
                pa, pb = self.out("a.pt"), self.out("b.pt")
                torch.save({"w": a, "i": ints, "same": a[:2].clone()}, pa)
                # B's tensor is a transposed view: another layout, the same logical values.
                torch.save({"w": b.t().contiguous().t(), "i": ints_b, "same": a[:2].clone()}, pb)
                self.assertFalse(torch.load(pb)["w"].is_contiguous())
                code, r = self.run_diff(pa, pb)
                self.assertEqual(code, 1)
                self.assertFalse(r["same"])
                self.check(r, "w", expected_diff(a, b))
                self.check(r, "i", expected_diff(ints, ints_b))
                self.check(r, "same", {"same": True, "differing": 0, "first_index": None})
                # The same through safetensors: B converted; names and values as before.
                sb = self.out("b.safetensors")
                zf("convert", "--force", pb, sb)
                code, r2 = self.run_diff(pa, sb)
                self.assertEqual(code, 1)
                self.assertEqual(r2["tensors"], [dict(t, xxh3_128=t["xxh3_128"]) for t in r["tensors"]])
                # Close mode, as torch.isclose / allclose.
                for atol, rtol, equal_nan in ((0.5, 0.0, True), (2.0, 0.0, False), (2.0, 0.0, True),
                                              (1e-3, 1e-3, True)):
                    code, rc = self.run_diff(pa, pb, "--atol", repr(atol), "--rtol", repr(rtol),
                                             *(["--equal-nan"] if equal_nan else []))
                    want = expected_diff(a, b, atol, rtol, equal_nan)
                    self.check(rc, "w", want)
                    want_i = expected_diff(ints, ints_b, atol, rtol, equal_nan)
                    self.assertEqual(code, 0 if want["same"] and want_i["same"] else 1)
                    allclose = torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=equal_nan)
                    self.assertEqual(want["same"], allclose)

    def test_widened_dtypes_and_names(self):
        a = torch.randn(4, 9, generator=self.gen)
        pa, pb = self.out("a.pt"), self.out("b.pt")
        torch.save({"x": a, "only_a": a[0].clone()}, pa)
        torch.save({"x": a.to(torch.bfloat16), "only_b": a[1].clone()}, pb)
        code, r = self.run_diff(pa, pb)
        self.assertEqual(code, 1)
        self.assertEqual((r["only_in_a"], r["only_in_b"]), (["only_a"], ["only_b"]))
        self.check(r, "x", {"same": False, "values_compared": False, "dtype": ["float32", "bfloat16"]})
        code, r = self.run_diff(pa, pb, "--rtol", "0.01")
        self.assertEqual(code, 1)  # the names only on one side still differ
        self.check(r, "x", expected_diff(a, a.to(torch.bfloat16), None, 0.01))
        self.check(r, "x", {"same": True, "values_compared": True})


if __name__ == "__main__":
    unittest.main(verbosity=1)
