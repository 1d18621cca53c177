#!/usr/bin/python3
"""`zerofold convert --dequantize bf16|fp32` against fixtures/quant: every case's in/ (a small
Hugging Face folder as the release ships it) dequantized into a safetensors folder and into a
torch file, each tensor compared bit for bit (names, shapes, dtypes, bytes) with
expected/{bf16,fp32}.safetensors, which the scheme's own reference code wrote
(fixtures/quant/README.md). Read through tests/torch_oracle.py (the strict safetensors reader
written from the format's specification; torch.load for the torch file).

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_dequantize.py
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import torch_oracle as oracle  # noqa: E402

ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))
QUANT = os.path.join(ROOT, "fixtures", "quant")
CASES = sorted(d for d in os.listdir(QUANT) if os.path.isfile(os.path.join(QUANT, d, "case.json")))
DTYPES = ("bf16", "fp32")
# Files a dequantized folder must not carry over: the weights (rewritten) and ModelOpt's
# hf_quant_config.json, which loaders (vLLM, TensorRT-LLM) read as "this checkpoint is
# quantized" whatever config.json says.
NOT_COPIED = {"model.safetensors.index.json", "config.json", "hf_quant_config.json"}


def run(*args, ok=True):
    p = subprocess.run([ZEROFOLD, "convert", *args], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"zerofold convert {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def bits(t):
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8)


def differing(got, want):
    """Elements whose bits differ, a NaN matching any NaN (the references' NaN bits are
    torch's conversion artifacts: fixtures/quant/README.md, "NaN")."""
    g = bits(got).view(-1, got.element_size())
    w = bits(want).view(-1, want.element_size())
    diff = (g != w).any(dim=1)
    if want.is_floating_point():
        gn, wn = torch.isnan(got.reshape(-1)), torch.isnan(want.reshape(-1))
        diff = (diff & ~(gn & wn)) | (gn != wn)
    return int(diff.sum())


def expected(case, dtype):
    return oracle.load_safetensors(os.path.join(QUANT, case, "expected", f"{dtype}.safetensors"))


def folder_tensors(out):
    """name -> tensor over every safetensors file of out; checks the index when there is one."""
    files = sorted(f for f in os.listdir(out) if f.endswith(".safetensors"))
    tensors, where = {}, {}
    for f in files:
        for name, t in oracle.load_safetensors(os.path.join(out, f)).items():
            if name in tensors:
                raise AssertionError(f"{name} in both {where[name]} and {f}")
            tensors[name], where[name] = t, f
    index = os.path.join(out, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as fh:
            weight_map = json.load(fh)["weight_map"]
        if weight_map != where:
            raise AssertionError(f"index weight_map {weight_map} != files {where}")
    elif len(files) != 1:
        raise AssertionError(f"{len(files)} safetensors files and no index in {out}")
    return tensors


class Dequantize(unittest.TestCase):
    def assert_tensors(self, got, want, what):
        self.assertEqual(sorted(got), sorted(want), f"{what}: tensor names")
        bad = []
        for name, w in want.items():
            g = got[name]
            if g.dtype != w.dtype or tuple(g.shape) != tuple(w.shape):
                bad.append(f"{name}: {g.dtype} {tuple(g.shape)}, expected {w.dtype} {tuple(w.shape)}")
            else:
                n = differing(g, w)
                if n:
                    bad.append(f"{name}: {n} of {w.numel()} elements differ")
        self.assertEqual(bad, [], f"{what}")

    def check_folder_files(self, case, out):
        src = os.path.join(QUANT, case, "in")
        with open(os.path.join(src, "config.json")) as f:
            cfg = json.load(f)
        cfg.pop("quantization_config")
        with open(os.path.join(out, "config.json")) as f:
            self.assertEqual(json.load(f), cfg, f"{case}: config.json minus quantization_config")
        for name in sorted(os.listdir(src)):
            if name.endswith(".safetensors") or name in NOT_COPIED:
                self.assertFalse(name == "hf_quant_config.json" and os.path.exists(
                    os.path.join(out, name)), f"{case}: {name} copied into the bf16 folder")
                continue
            with open(os.path.join(src, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), f"{case}: {name} not copied byte for byte")


def _folder_test(case, dtype):
    def test(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            run("--dequantize", dtype, os.path.join(QUANT, case, "in"), out)
            self.assert_tensors(folder_tensors(out), expected(case, dtype), f"{case} {dtype} folder")
            self.check_folder_files(case, out)
    return test


def _torch_test(case, dtype):
    def test(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "pytorch_model.bin")
            run("--dequantize", dtype, "--to", "torch", os.path.join(QUANT, case, "in"), out)
            sd = oracle.load(out)
            self.assertIsInstance(sd, dict)
            self.assert_tensors(dict(sd), expected(case, dtype), f"{case} {dtype} torch file")
    return test


for _case in CASES:
    for _dtype in DTYPES:
        setattr(Dequantize, f"test_{_case}_{_dtype}_folder", _folder_test(_case, _dtype))
        setattr(Dequantize, f"test_{_case}_{_dtype}_torch", _torch_test(_case, _dtype))


# ---------------------------------------------------------------------------------------
# Refusals: a copy of a case's in/ with one tensor changed (written back with the oracle's
# reader and the format's layout) must be refused with the tensor named, and nothing written.

def write_st(path, metadata, tensors):
    """tensors: name -> (code, shape, bytes), in order (huggingface/safetensors "Format")."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (code, shape, data) in tensors.items():
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(d for _, _, d in tensors.values()))


def mutated_copy(case, tmp, name, change):
    """in/ of case copied to tmp/in with change((code, shape, bytes)) -> record or None
    (None: the tensor is removed from its shard and the index)."""
    src, dst = os.path.join(QUANT, case, "in"), os.path.join(tmp, "in")
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "model.safetensors.index.json")) as f:
        index = json.load(f)
    shard = os.path.join(dst, index["weight_map"][name])
    st = oracle.read_safetensors(shard, writer_layout=False)
    tensors = dict(st.tensors)
    rec = change(tensors[name])
    if rec is None:
        del tensors[name]
        del index["weight_map"][name]
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f)
    else:
        tensors[name] = rec
    write_st(shard, st.metadata, tensors)
    return dst


def drop_rows(n):
    """The record with its first dimension n smaller (data cut to match)."""
    def change(rec):
        code, shape, data = rec
        row = len(data) // shape[0]
        return code, [shape[0] - n] + list(shape[1:]), data[:row * (shape[0] - n)]
    return change


def drop_last_column(rec):
    code, shape, data = rec
    rows, cols = shape[0], shape[1]
    size = len(data) // (rows * cols)
    out = b"".join(data[(r * cols) * size:(r * cols + cols - 1) * size] for r in range(rows))
    return code, [rows, cols - 1], out


def set_i64(values):
    return lambda rec: (rec[0], rec[1], struct.pack("<%dq" % len(values), *values))


REFUSALS = {  # test name -> (case, tensor changed, change, what stderr must name)
    "deepseek_scale_inv_short": ("deepseek_fp8_block", "model.layers.0.self_attn.q_a_proj.weight_scale_inv",
                                 drop_rows(1), "model.layers.0.self_attn.q_a_proj"),
    "deepseek_scale_inv_missing": ("deepseek_fp8_block", "model.layers.0.self_attn.q_a_proj.weight_scale_inv",
                                   lambda rec: None, "model.layers.0.self_attn.q_a_proj"),
    "ct_int4_weight_shape": ("ct_int4_pack", "model.layers.0.self_attn.k_proj.weight_shape",
                             set_i64([33, 72]), "model.layers.0.self_attn.k_proj"),
    "ct_int4_group_scales": ("ct_int4_pack", "model.layers.0.self_attn.q_proj.weight_scale",
                             drop_last_column, "model.layers.0.self_attn.q_proj"),
    "ct_int4_zero_points": ("ct_int4_asym", "model.layers.0.self_attn.k_proj.weight_zero_point",
                            drop_rows(1), "model.layers.0.self_attn.k_proj"),
    "ct_nvfp4_scales": ("ct_nvfp4", "model.layers.0.self_attn.q_proj.weight_scale",
                        drop_last_column, "model.layers.0.self_attn.q_proj"),
    "ct_nvfp4_global_missing": ("ct_nvfp4", "model.layers.0.self_attn.q_proj.weight_global_scale",
                                lambda rec: None, "model.layers.0.self_attn.q_proj"),
    "modelopt_scale_2_missing": ("modelopt_nvfp4", "model.layers.0.self_attn.q_proj.weight_scale_2",
                                 lambda rec: None, "model.layers.0.self_attn.q_proj"),
    "gpt_oss_scales": ("gpt_oss_mxfp4", "model.layers.0.mlp.experts.gate_up_proj_scales",
                       drop_rows(1), "model.layers.0.mlp.experts.gate_up_proj"),
}


class Refusals(unittest.TestCase):
    pass


def _refusal_test(case, name, change, named):
    def test(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = mutated_copy(case, tmp, name, change)
            out = os.path.join(tmp, "out")
            p = run("--dequantize", "bf16", src, out, ok=False)
            self.assertNotEqual(p.returncode, 0, f"{case}: {name} changed, yet exit 0")
            self.assertIn(named, p.stderr, f"{case}: the error does not name {named}")
            self.assertLessEqual(len(p.stderr.strip().splitlines()), 2, p.stderr)
            self.assertFalse(os.path.exists(out), f"{case}: partial output left at {out}")
    return test


for _name, (_case, _tensor, _change, _named) in REFUSALS.items():
    setattr(Refusals, f"test_{_name}", _refusal_test(_case, _tensor, _change, _named))


class Fixtures(unittest.TestCase):
    """The fixtures themselves: every case has both expected files, a case.json naming its
    reference, a weight and its scale in different shards somewhere, and stays under 1 MB."""

    def test_cases_complete(self):
        self.assertGreaterEqual(len(CASES), 10)
        for case in CASES:
            d = os.path.join(QUANT, case)
            with open(os.path.join(d, "case.json")) as f:
                meta = json.load(f)
            self.assertEqual(sorted(meta), ["notes", "reference", "scheme"], case)
            self.assertRegex(meta["reference"], r"[\w.-]+/[\w.-]+@[0-9a-f]{40} ", case)
            for dtype in DTYPES:
                self.assertTrue(os.path.isfile(os.path.join(d, "expected", f"{dtype}.safetensors")))
            size = sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)
            self.assertLess(size, 1 << 20, f"{case}: {size} bytes")

    def test_scale_in_other_shard(self):
        for case in CASES:
            index = os.path.join(QUANT, case, "in", "model.safetensors.index.json")
            self.assertTrue(os.path.exists(index), case)
            with open(index) as f:
                wm = json.load(f)["weight_map"]
            split = [n for n in wm if n.rsplit(".", 1)[-1] in (
                "weight_scale_inv", "weight_scale", "scale", "weight_scale_2")
                or n.endswith("_scales")]
            self.assertTrue(any(wm[n] != wm.get(n.rsplit(".", 1)[0] + ".weight",
                                                 wm.get(n.rsplit(".", 1)[0] + ".weight_packed",
                                                        wm.get(n[:-len("_scales")] + "_blocks", wm[n])))
                                for n in split), f"{case}: no weight and scale in different shards")

    def test_expected_dtypes(self):
        """Quantized groups come out in the requested dtype; the rest as they were."""
        for case in CASES:
            b, f = expected(case, "bf16"), expected(case, "fp32")
            self.assertEqual(sorted(b), sorted(f), case)
            for name in b:
                if b[name].dtype != f[name].dtype:
                    self.assertEqual((b[name].dtype, f[name].dtype), (torch.bfloat16, torch.float32))
                    self.assertEqual(differing(f[name].to(torch.bfloat16), b[name]), 0,
                                     f"{case} {name}: bf16 expected is not RNE of fp32 expected")


if __name__ == "__main__":
    unittest.main()
