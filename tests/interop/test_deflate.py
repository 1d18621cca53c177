#!/usr/bin/python3
"""Deflated zip entries, as Python's zipfile (and other writers) rewrite torch archives.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_deflate.py   (unittest)

Archives rewritten by zipfile with ZIP_DEFLATED at every level 0-9, and with ZIP_STORED, from
a torch file made here with torch.save and from the fixtures (fixtures/torch, a DeepSpeed
rank file): each is loaded by torch (tests/torch_oracle.py) and by zerofold (`inspect --json`
against torch's description; `shrink`, whose output must be stored and load in torch equal,
element for element, to the input as torch loads it, and never bigger: stored, or the input
copied unchanged when the stored rewrite would not be smaller). A DeepSpeed checkpoint whose rank files
are all rewritten deflated merges to the same bytes as the original. The stream form
(`cat file | zerofold shrink - -`) reads deflated archives laid out as torch writes them
(data.pkl first), with data descriptors (zipfile writing to a pipe), and writes the file
form's bytes.
"""

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixture_list import ROOT, fixture  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "fixtures", "zip", "deflate"))

import torch  # noqa: E402

import torch_oracle as oracle  # noqa: E402
from make_deflate import stream_rewrite  # noqa: E402

ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))
LEVELS = list(range(10))
FIXTURES = ["torch/state_dict.pt", "torch/views.pt", "torch/dtypes.pt", "torch/tied_weights.pt",
            "torch/transposed_expand.pt"]
DS_CASE = "zero2_ws3_bf16"


def run(*args, stdin=None):
    return subprocess.run([ZEROFOLD, *args], capture_output=True, input=stdin)


def rewrite(src, dst, compression, level=None, stream=False):
    """Copies every record of `src` into `dst` in order (data.pkl stays first when torch
    wrote it first), compressed as asked. stream=True writes through an unseekable file,
    so zipfile uses data descriptors, as a streaming writer does."""
    with zipfile.ZipFile(src) as zin:
        infos = zin.infolist()
        if not stream:
            with zipfile.ZipFile(dst, "w", compression=compression, compresslevel=level) as zout:
                for info in infos:
                    zout.writestr(zipfile.ZipInfo(info.filename, date_time=(2020, 1, 1, 0, 0, 0)),
                                  zin.read(info.filename), compress_type=compression, compresslevel=level)
            return
    stream_rewrite(src, dst, level)


def methods(path):
    with zipfile.ZipFile(path) as z:
        return {i.compress_type for i in z.infolist()}


class DeflateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zf_test_deflate_")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def sources(self):
        made = self.path("made.pt")
        g = torch.Generator().manual_seed(7)
        flat = torch.randn(5000, generator=g)
        torch.save({"w": flat[:3000].view(60, 50), "b": flat[3000:3100], "t": flat[100:700].view(20, 30).t(),
                    "ids": torch.arange(100000, dtype=torch.int64) % 251,
                    "half": torch.randn(300, 7, generator=g).half()}, made)
        return [("made.pt", made)] + [(rel, fixture(rel)) for rel in FIXTURES]

    def check_inspect(self, path, want):
        r = run("inspect", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        doc = json.loads(r.stdout)["files"][0]
        names = [t["name"] for t in doc["tensors"]]
        self.assertEqual(names, [t["name"] for t in want["tensors"]])
        for got, exp in zip(doc["tensors"], want["tensors"]):
            self.assertEqual(got["shape"], exp["shape"])
            self.assertEqual(got["stride"], exp["stride"])
            self.assertEqual(got["dtype"], exp["dtype"])
        return doc

    def check_shrink(self, path, want_obj):
        out = self.path("out.pt")
        if os.path.exists(out):
            os.remove(out)
        r = run("shrink", "--verify", path, out)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        # Never bigger: rewritten stored, or copied unchanged when the stored
        # rewrite would not be smaller.
        with open(path, "rb") as a, open(out, "rb") as b:
            same = a.read() == b.read()
        self.assertLessEqual(os.path.getsize(out), os.path.getsize(path))
        if not same:
            self.assertEqual(methods(out), {zipfile.ZIP_STORED})
        self.assertEqual(oracle.compare(oracle.load(out), want_obj), [])
        return out

    def test_every_level_reads_as_torch_loads_it(self):
        checked = 0
        for rel, src in self.sources():
            want_obj = oracle.load(src)
            want = oracle.describe(want_obj)
            for level in LEVELS + ["stored"]:
                with self.subTest(file=rel, level=level):
                    dst = self.path("in.pt")
                    if level == "stored":
                        rewrite(src, dst, zipfile.ZIP_STORED)
                    else:
                        rewrite(src, dst, zipfile.ZIP_DEFLATED, level)
                    # torch reads the rewrite as the original.
                    self.assertEqual(oracle.compare(oracle.load(dst), want_obj), [])
                    doc = self.check_inspect(dst, want)
                    n = len(zipfile.ZipFile(dst).infolist())
                    self.assertEqual(doc["deflated_records"], 0 if level == "stored" else n)
                    out = self.check_shrink(dst, want_obj)
                    deflated = json.loads(run("inspect", "--json", out).stdout)["files"][0]["deflated_records"]
                    self.assertIn(deflated, (0, doc["deflated_records"]))
                    checked += 1
        self.assertEqual(checked, (1 + len(FIXTURES)) * (len(LEVELS) + 1))

    def test_stream_form_reads_deflated_archives(self):
        for rel, src in self.sources():
            want_obj = oracle.load(src)
            for level, stream in ((1, False), (6, False), (9, True), (6, True)):
                with self.subTest(file=rel, level=level, descriptors=stream):
                    dst = self.path("in.pt")
                    rewrite(src, dst, zipfile.ZIP_DEFLATED, level, stream=stream)
                    with zipfile.ZipFile(dst) as z:
                        self.assertTrue(z.infolist()[0].filename.endswith("/data.pkl"))
                        self.assertEqual(all(i.flag_bits & 0x08 for i in z.infolist()), stream)
                    with open(dst, "rb") as f:
                        r = run("shrink", "-", "-", stdin=f.read())
                    self.assertEqual(r.returncode, 0, r.stderr.decode())
                    piped = self.path("piped.pt")
                    with open(piped, "wb") as f:
                        f.write(r.stdout)
                    self.assertEqual(oracle.compare(oracle.load(piped), want_obj), [])
                    self.assertEqual(methods(piped), {zipfile.ZIP_STORED})

    def test_corrupt_deflate_is_refused_with_the_record(self):
        src = fixture("torch/state_dict.pt")
        dst = self.path("in.pt")
        rewrite(src, dst, zipfile.ZIP_DEFLATED, 6)
        with zipfile.ZipFile(dst) as z:
            info = [i for i in z.infolist() if i.filename.endswith("/data/0")][0]
        with open(dst, "rb") as f:
            data = bytearray(f.read())
        start = info.header_offset + 30 + len(info.filename.encode())
        data[start] |= 0x06  # block type 3, reserved
        bad = self.path("bad.pt")
        with open(bad, "wb") as f:
            f.write(data)
        r = run("shrink", bad, self.path("x.pt"))
        self.assertEqual(r.returncode, 1)
        m = re.match(rf"^zerofold: {bad}: {info.filename} @ (\d+): corrupt: deflate block type 3, .+\n$",
                                   r.stderr.decode())
        self.assertIsNotNone(m, r.stderr.decode())
        self.assertIn(int(m.group(1)), (start, start + 1))
        self.assertFalse(os.path.exists(self.path("x.pt")))

    def test_diff_reads_deflated_records(self):
        """diff of a deflated rewrite against torch.save files: the values torch loads. B is
        the original with torch changing a few elements; diff must count exactly those and
        report torch's own largest difference."""
        _, made = self.sources()[0]
        want = oracle.load(made)
        changed = {k: v.clone() for k, v in want.items()}
        changed["w"][3, 7] += 0.25
        changed["t"][5, 2] = -changed["t"][5, 2]
        changed["ids"][99999] += 1
        other = self.path("other.pt")
        torch.save(changed, other)
        for level in (1, 6, 9):
            with self.subTest(level=level):
                dst = self.path("deflated.pt")
                rewrite(made, dst, zipfile.ZIP_DEFLATED, level)
                self.assertEqual(methods(dst), {zipfile.ZIP_DEFLATED})
                for a, b in ((dst, made), (made, dst), (dst, dst)):
                    r = run("diff", a, b)
                    self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode())
                r = run("diff", "--json", dst, other)
                self.assertEqual(r.returncode, 1, r.stderr.decode())
                doc = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
                self.assertEqual(sorted(doc), sorted(want))
                for name, t in want.items():
                    d = doc[name]
                    diff = (t.double() - changed[name].double()).abs()
                    self.assertEqual(d["differing"], int((t != changed[name]).sum()), name)
                    self.assertEqual(d["max_abs_diff"], float(diff.max()), name)
                    if d["differing"]:
                        first = (t != changed[name]).flatten().nonzero()[0].item()
                        flat = []
                        for size in reversed(t.shape):
                            flat.insert(0, first % size)
                            first //= size
                        self.assertEqual(d["first_index"], flat, name)

    def test_merge_of_deflated_rank_files(self):
        ckpt = os.path.join(ROOT, "fixtures", "deepspeed", DS_CASE, "ckpt")
        copy = self.path("ckpt")
        shutil.copytree(ckpt, copy)
        rewritten = 0
        for folder, _, files in os.walk(copy):
            for name in files:
                if name.endswith(".pt"):
                    p = os.path.join(folder, name)
                    rewrite(p, p + ".tmp", zipfile.ZIP_DEFLATED, 6)
                    os.replace(p + ".tmp", p)
                    rewritten += 1
        self.assertGreater(rewritten, 3)
        os.makedirs(self.path("a"))
        os.makedirs(self.path("b"))
        a, b = self.path("a/merged.pt"), self.path("b/merged.pt")
        for c, out in ((ckpt, a), (copy, b)):
            r = run("merge", "--verify", c, out)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        truth = oracle.load(os.path.join(ROOT, "fixtures", "deepspeed", DS_CASE, "ground_truth.pt"))
        got = oracle.load(b)
        for name, t in truth.items():
            self.assertTrue(torch.equal(got[name], t), name)


if __name__ == "__main__":
    unittest.main()
