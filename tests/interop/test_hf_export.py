#!/usr/bin/python3
"""`zerofold merge CKPT OUT --hf BASE` against the export cases of fixtures/hfexport (issue 28).

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_hf_export.py [-k CASE]

Every fixtures/hfexport/<case>/case.json (layout: fixtures/hfexport/README.md) is checked twice:

(a) TestReference, independent of zerofold: the reference mapping (expected/) run through
    tests/interop/hf_models.py (a plain-torch port of transformers' forward) under BASE's
    config.json gives the trainer model's logits (logits.pt) within logits_atol, and gate/up
    or k/v exchanged in one layer misses them by over 100 x logits_atol; expected/ has exactly
    BASE's names and shapes; BASE's tensors have config.json's torch_dtype.
(b) TestExport: `$ZEROFOLD merge CKPT OUT --hf BASE [merge_args]` exits 0 and OUT holds exactly
    expected/'s names, each in BASE's dtype (or the one --dtype names), equal element for
    element, bit for bit, to expected cast to that dtype; OUT's logits match logits.pt
    (float32 outputs: within logits_atol; others: within 1e-5 of the same port run on expected
    cast to OUT's dtypes); every non-weight file of BASE (config, generation config, tokenizer
    files) is in OUT byte for byte. A BASE whose names do not fit the checkpoint (another case's
    BASE with other layer counts or families) is refused: non-zero exit, one line naming a
    tensor, no OUT.
Tensors are read only through tests/torch_oracle.py (load, load_safetensors).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402
import hf_models  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "fixtures", "hfexport")
ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


def cases():
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*", "case.json"))):
        with open(path) as f:
            c = json.load(f)
        c["name"] = os.path.basename(os.path.dirname(path))
        c["dir"] = os.path.dirname(path)
        out.append(c)
    return out


def case_path(c, key):
    return os.path.join(c["dir"], c[key])


def base_files(folder):
    """BASE's non-weight files (what OUT must copy byte for byte)."""
    return sorted(f for f in os.listdir(folder)
                  if f not in WEIGHT_FILES and not f.endswith(".safetensors") and not f.startswith("."))


def logits_diff(a, b):
    return float((a - b).abs().max())


class TestReference(unittest.TestCase):
    """(a): the reference mapping and the port agree with the trainer's model."""

    def test_expected_logits(self):
        for c in cases():
            with self.subTest(case=c["name"]):
                config, _ = hf_models.load(case_path(c, "base"))
                want = oracle.load(case_path(c, "logits"))
                got = hf_models.logits(config, oracle.load_safetensors(case_path(c, "expected")),
                                       oracle.load(case_path(c, "tokens")))
                self.assertEqual(tuple(got.shape), tuple(want.shape))
                self.assertLessEqual(logits_diff(got, want), c["logits_atol"], c["name"])

    def test_base_matches_expected(self):
        for c in cases():
            with self.subTest(case=c["name"]):
                config, base = hf_models.load(case_path(c, "base"))
                expected = oracle.load_safetensors(case_path(c, "expected"))
                self.assertEqual(sorted(base), sorted(expected))
                model = sorted(k for k in base if not hf_models.mtp_layer(config, k))
                self.assertEqual(model, sorted(hf_models.expected_names(config)))
                self.assertEqual(len(base) > len(model), config.get("num_nextn_predict_layers", 0) > 0)
                for k, v in base.items():
                    self.assertEqual(tuple(v.shape), tuple(expected[k].shape), k)
                    self.assertEqual(v.dtype, getattr(torch, config["torch_dtype"]), k)

    def test_wrong_mapping_is_caught(self):
        # the check (a) has power: a classic mapping slip (gate/up or k/v exchanged in one
        # layer) moves the logits by far more than logits_atol
        for c in cases():
            config, _ = hf_models.load(case_path(c, "base"))
            tokens, want = oracle.load(case_path(c, "tokens")), oracle.load(case_path(c, "logits"))
            expected = oracle.load_safetensors(case_path(c, "expected"))
            pairs = (("gate_proj.weight", "up_proj.weight"), ("w1.weight", "w3.weight"),
                     ("k_proj.weight", "v_proj.weight"))
            for a, b in pairs:
                first = next((k for k in expected if k.endswith(a)), None)
                if first is None or expected[first].shape != expected[first[:-len(a)] + b].shape:
                    continue
                with self.subTest(case=c["name"], swap=first):
                    w = dict(expected)
                    w[first], w[first[:-len(a)] + b] = w[first[:-len(a)] + b], w[first]
                    self.assertGreater(logits_diff(hf_models.logits(config, w, tokens), want), 100 * c["logits_atol"])

    def test_port_refuses_wrong_names(self):
        c = cases()[0]
        config, _ = hf_models.load(case_path(c, "base"))
        w = oracle.load_safetensors(case_path(c, "expected"))
        w["model.layers.0.extra.weight"] = torch.zeros(1)
        with self.assertRaises(KeyError):
            hf_models.logits(config, w, oracle.load(case_path(c, "tokens")))


def merge(c, out, base=None):
    args = [ZEROFOLD, "merge", case_path(c, "ckpt"), out, "--hf", base or case_path(c, "base")] + c["merge_args"]
    return subprocess.run(args, capture_output=True, text=True)


def out_dtype(c, base_tensor):
    a = c["merge_args"]
    if "--dtype" in a:
        return getattr(torch, a[a.index("--dtype") + 1])
    return base_tensor.dtype


@unittest.skipUnless(os.path.exists(ZEROFOLD), f"no zerofold binary at {ZEROFOLD}")
class TestExport(unittest.TestCase):
    """(b): zerofold's export equals the reference mapping."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hfexport_")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def export(self, c):
        out = os.path.join(self.tmp, c["name"])
        r = merge(c, out)
        self.assertEqual(r.returncode, 0, f"{c['name']}: merge --hf: {r.stderr.strip()}")
        return out

    def test_tensors_equal_expected(self):
        for c in cases():
            with self.subTest(case=c["name"]):
                out = self.export(c)
                _, got = hf_models.load(out)
                _, base = hf_models.load(case_path(c, "base"))
                expected = oracle.load_safetensors(case_path(c, "expected"))
                self.assertEqual(sorted(got), sorted(expected))
                for k, want in expected.items():
                    dtype = out_dtype(c, base[k])
                    self.assertEqual(got[k].dtype, dtype, k)
                    self.assertEqual(oracle.compare_tensors(got[k], want.to(dtype).contiguous(), strides=False),
                                     [], k)

    def test_logits(self):
        for c in cases():
            with self.subTest(case=c["name"]):
                out = self.export(c)
                config, got = hf_models.load(out)
                tokens = oracle.load(case_path(c, "tokens"))
                mine = hf_models.logits(config, got, tokens)
                if all(v.dtype == torch.float32 for v in got.values()):
                    self.assertLessEqual(logits_diff(mine, oracle.load(case_path(c, "logits"))), c["logits_atol"])
                else:  # the reference mapping in OUT's dtypes through the same port
                    expected = oracle.load_safetensors(case_path(c, "expected"))
                    cast = {k: v.to(got[k].dtype) for k, v in expected.items()}
                    self.assertLessEqual(logits_diff(mine, hf_models.logits(config, cast, tokens)), 1e-5)

    def test_base_files_copied(self):
        for c in cases():
            with self.subTest(case=c["name"]):
                out = self.export(c)
                base = case_path(c, "base")
                for f in base_files(base):
                    with open(os.path.join(base, f), "rb") as a, open(os.path.join(out, f), "rb") as b:
                        self.assertEqual(a.read(), b.read(), f"{c['name']}: {f}")

    def test_mismatched_base_refused(self):
        all_cases = cases()

        def layers(case):  # BASE's, whatever trainer wrote the case
            with open(os.path.join(case_path(case, "base"), "config.json")) as f:
                return json.load(f)["num_hidden_layers"]

        for c in all_cases:
            other = next((o for o in all_cases if o["family"] != c["family"] or layers(o) != layers(c)), None)
            if other is None:
                continue
            with self.subTest(case=c["name"], base=other["name"]):
                out = os.path.join(self.tmp, "refused_" + c["name"])
                r = merge(c, out, base=case_path(other, "base"))
                self.assertNotEqual(r.returncode, 0, f"{c['name']} with {other['name']}'s BASE was accepted")
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("zerofold: "), lines[0])
                self.assertFalse(os.path.exists(out), "a refused export left output")


if __name__ == "__main__":
    unittest.main(verbosity=2)
