#!/usr/bin/python3
"""DeepSpeed layouts beyond ZeRO 1/2/3 (issue 14), with the binary in $ZEROFOLD, loaded
through tests/torch_oracle.py:
  - ZeRO-0 (FP16_UnfusedOptimizer, FP16_Optimizer, BF16_Optimizer) and universal checkpoints
    (ds_to_universal.py output) merge to ground_truth.pt element for element, dtypes and
    names included, the tie sharing its owner's storage;
  - `inspect --json CKPT_DIR` describes every DeepSpeed fixture: stage, world size, optimizer,
    dtypes, counts (from worker_info.json's ground-truth meta), fp32-master bytes (the
    numel of the masters torch loads x itemsize), file sizes (os.stat);
  - refusals are one line naming what was found.
"""

import glob
import shutil
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))
DEEPSPEED = os.path.join(ROOT, "fixtures", "deepspeed")
TIE, OWNER = "lm_head.weight", "transformer.wte.weight"

# case -> (ground-truth case, zero stage, world size, optimizer, master dtype, module dtype)
CASES = {
    "zero0_ws2_fp16_unfused": ("zero0_ws2_fp16_unfused", 0, 2, "FP16_UnfusedOptimizer", "float32", "float16"),
    "zero0_ws2_fp16_fused": ("zero0_ws2_fp16_fused", 0, 2, "FP16_Optimizer", "float32", "float16"),
    "zero0_ws2_bf16": ("zero0_ws2_bf16", 1, 2, "BF16_Optimizer", "float32", "bfloat16"),
    "universal_zero1_ws2_fp16": ("zero1_ws2_fp16", 1, 2, "universal", "float32", "float16"),
    "universal_zero2_ws3_bf16": ("zero2_ws3_bf16", 2, 3, "universal", "float32", "bfloat16"),
    "zero1_ws2_fp16": ("zero1_ws2_fp16", 1, 2, "DeepSpeedZeroOptimizer", "float32", "float16"),
    "zero2_ws3_bf16": ("zero2_ws3_bf16", 2, 3, "DeepSpeedZeroOptimizer", "float32", "bfloat16"),
    "zero3_ws3_fp16": ("zero3_ws3_fp16", 3, 3, "DeepSpeedZeroOptimizer_Stage3", "float32", "float16"),
    "zero3_ws4_fp32": ("zero3_ws4_fp32", 3, 4, "DeepSpeedZeroOptimizer_Stage3", "float32", "float32"),
    "zero1_ws3_bf16_bf16optimizer": ("zero1_ws3_bf16_bf16optimizer", 1, 3, "BF16_Optimizer", "float32", "bfloat16"),
}


def run(*args):
    return subprocess.run([ZEROFOLD, *args], capture_output=True, text=True)


def truth_meta(case):
    with open(os.path.join(DEEPSPEED, case, "worker_info.json")) as f:
        meta = json.load(f)["ground_truth_meta"]
    if isinstance(meta, str):  # older cases store its repr
        import ast
        meta = ast.literal_eval(meta)
    return meta


def assert_equals_truth(test, out_path, truth_case):
    got = oracle.load(out_path)
    want = oracle.load(os.path.join(DEEPSPEED, truth_case, "ground_truth.pt"))
    test.assertEqual(list(got), list(want))
    for name, w in want.items():
        g = got[name]
        test.assertEqual(g.dtype, w.dtype, name)
        test.assertEqual(g.shape, w.shape, name)
        test.assertTrue(torch.equal(g, w), name)
    test.assertEqual(got[TIE].data_ptr(), got[OWNER].data_ptr())


def master_bytes(case):
    """Bytes of the storages of the fp32 masters as torch loads them from the checkpoint's
    files (a saved partition may be a view cut short of its storage: the storage counts)."""
    tag = os.path.join(DEEPSPEED, case, "ckpt")
    with open(os.path.join(tag, "latest_universal" if case.startswith("universal_") else "latest")) as f:
        tag = os.path.join(tag, f.read().strip())
    n = 0

    def stored(tensors):
        return sum(t.storage().nbytes() for t in {t.storage().data_ptr(): t for t in tensors}.values())

    if case.startswith("universal_"):
        for p in glob.glob(os.path.join(tag, "zero", "*", "fp32.pt")):
            x = oracle.load(p)
            n += stored([x["param"] if isinstance(x, dict) else x])
        return n
    optim = sorted(glob.glob(os.path.join(tag, "*optim_states.pt")))
    for p in optim:
        osd = oracle.load(p)["optimizer_state_dict"]
        for key in ("single_partition_of_fp32_groups", "fp32_flat_groups"):
            if key in osd:
                n += stored(osd[key])
    if not optim:
        opt = oracle.load(os.path.join(tag, "mp_rank_00_model_states.pt"))["optimizer"]
        if "fp32_groups_flat" in opt:
            n += stored(opt["fp32_groups_flat"])
        else:
            n += stored([t for g in opt["fp32_groups"] for t in g])
    return n


class Merge(unittest.TestCase):
    def test_new_layouts_equal_ground_truth(self):
        with tempfile.TemporaryDirectory() as tmp:
            for case, (truth, *_rest) in CASES.items():
                if not case.startswith(("zero0_", "universal_")):
                    continue
                with self.subTest(case=case):
                    out = os.path.join(tmp, case + ".bin")
                    r = run("merge", "--quiet", os.path.join(DEEPSPEED, case, "ckpt"), out)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    assert_equals_truth(self, out, truth)

    def test_universal_bfloat16_output_is_the_rounded_truth(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.bin")
            r = run("merge", "--quiet", "--dtype", "bfloat16", os.path.join(DEEPSPEED, "universal_zero1_ws2_fp16", "ckpt"), out)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = oracle.load(out)
            want = oracle.load(os.path.join(DEEPSPEED, "zero1_ws2_fp16", "ground_truth.pt"))
            for name, w in want.items():
                self.assertTrue(torch.equal(got[name], w.to(torch.bfloat16) if w.is_floating_point() else w), name)


# Layouts newer DeepSpeed writes, derived from the real cases by make_derived.py.
DERIVED = ["derived_bf16_master_weights", "derived_zero0_ws2_bf16_v0185", "derived_zero1_ws2_fp16_legacy",
           "derived_zero3_ws3_fp16_nvme", "derived_universal_zero3_ws3_fp16"]


class Derived(unittest.TestCase):
    def test_merge_equals_expected(self):
        with tempfile.TemporaryDirectory() as tmp:
            for case in DERIVED:
                with self.subTest(case=case):
                    out = os.path.join(tmp, case + ".bin")
                    r = run("merge", "--quiet", os.path.join(DEEPSPEED, case, "ckpt"), out)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = oracle.load(out)
                    want = oracle.load(os.path.join(DEEPSPEED, case, "expected.pt"))
                    self.assertEqual(list(got), list(want))
                    for name, w in want.items():
                        self.assertEqual(got[name].dtype, w.dtype, name)
                        self.assertTrue(torch.equal(got[name], w), name)
                    self.assertEqual(got[TIE].data_ptr(), got[OWNER].data_ptr())

    def test_bf16_masters_keep_their_values_as_bfloat16(self):
        case = "derived_bf16_master_weights"
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.bin")
            r = run("merge", "--quiet", "--dtype", "bfloat16", os.path.join(DEEPSPEED, case, "ckpt"), out)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = oracle.load(out)
            for name, w in oracle.load(os.path.join(DEEPSPEED, case, "expected.pt")).items():
                self.assertTrue(torch.equal(got[name], w.to(torch.bfloat16) if w.is_floating_point() else w), name)
        r = run("inspect", "--json", os.path.join(DEEPSPEED, case, "ckpt"))
        self.assertEqual(json.loads(r.stdout)["files"][0]["deepspeed"]["master_dtypes"], ["bfloat16"])

    def test_refusals_name_the_record(self):
        for case, words in (("derived_refuse_tp2", "tp_degree 2"), ("derived_refuse_pp2", "pp_degree 2"),
                            ("derived_refuse_autoep", "ds_autoep_layers")):
            with self.subTest(case=case), tempfile.TemporaryDirectory() as tmp:
                r = run("merge", os.path.join(DEEPSPEED, case, "ckpt"), os.path.join(tmp, "m.bin"))
                self.assertEqual(r.returncode, 1)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(words, r.stderr)
                self.assertIn("mp_rank_00_model_states.pt", r.stderr)
                self.assertEqual(os.listdir(tmp), [])
                i = run("inspect", "--json", os.path.join(DEEPSPEED, case, "ckpt"))
                merge = json.loads(i.stdout)["files"][0]["deepspeed"]["merge"]
                self.assertFalse(merge["mergeable"])
                self.assertIn(words, merge["refusal"]["message"])

    def test_nvme_partitions_without_their_folder_are_refused_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            shutil.copytree(os.path.join(DEEPSPEED, "derived_zero3_ws3_fp16_nvme", "ckpt"), ckpt)
            shutil.rmtree(os.path.join(ckpt, "global_step2", "offloaded_tensors", "rank01"))
            r = run("merge", ckpt, os.path.join(tmp, "m.bin"))
            self.assertEqual(r.returncode, 3, r.stderr)  # kNotFound, as for a missing rank file
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(os.path.join(ckpt, "global_step2", "offloaded_tensors", "rank01"), r.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "m.bin")))


    def test_universal_with_tensor_parallel_model_states_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            shutil.copytree(os.path.join(DEEPSPEED, "universal_zero1_ws2_fp16", "ckpt"), ckpt)
            tag = os.path.join(ckpt, "global_step2_universal")
            shutil.copy(os.path.join(tag, "mp_rank_00_model_states.pt"), os.path.join(tag, "mp_rank_01_model_states.pt"))
            r = run("merge", ckpt, os.path.join(tmp, "m.bin"))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("tensor-parallel checkpoint (mp_rank_01_model_states.pt)", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "m.bin")))

    def test_inspect_counts_nvme_swap_files_as_masters(self):
        case = "derived_zero3_ws3_fp16_nvme"
        r = run("inspect", "--json", os.path.join(DEEPSPEED, case, "ckpt"))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)["files"][0]["deepspeed"]
        swaps = glob.glob(os.path.join(DEEPSPEED, case, "ckpt", "global_step2", "offloaded_tensors", "rank*", "*.swp"))
        self.assertEqual(len(swaps), 6)
        self.assertEqual(d["master_bytes"], sum(os.path.getsize(p) for p in swaps))
        self.assertEqual(sorted(f["path"] for f in d["files"] if f["role"] == "nvme partition"), sorted(swaps))
        self.assertTrue(d["merge"]["mergeable"])


class Inspect(unittest.TestCase):
    def test_every_deepspeed_fixture_is_described(self):
        for case, (truth, stage, ws, optimizer, master_dtype, module_dtype) in CASES.items():
            with self.subTest(case=case):
                ckpt = os.path.join(DEEPSPEED, case, "ckpt")
                r = run("inspect", "--json", ckpt)
                self.assertEqual(r.returncode, 0, r.stderr)
                doc = json.loads(r.stdout)
                self.assertEqual(len(doc["files"]), 1)
                d = doc["files"][0]["deepspeed"]
                self.assertEqual(doc["files"][0]["format"], "deepspeed")
                self.assertEqual(d["zero_stage"], stage)
                self.assertEqual(d["world_size"], ws)
                self.assertTrue(d["optimizer"].startswith(optimizer), d["optimizer"])
                self.assertEqual(d["master_dtypes"], [master_dtype])
                self.assertIn(module_dtype, d["module_dtypes"])
                meta = truth_meta(truth)
                trainable = [n for n, m in meta.items() if m["kind"] == "param" and m.get("trainable")
                             and not m.get("tied_to")]
                frozen = [n for n, m in meta.items() if m["kind"] == "param" and not m.get("trainable")]
                buffers = [n for n, m in meta.items() if m["kind"] == "buffer"]
                ties = [n for n, m in meta.items() if m.get("tied_to")]
                merge = d["merge"]
                if merge["linked_by_value"]:  # FP16_UnfusedOptimizer: linked when merging
                    self.assertEqual(d["params"], len(trainable))
                else:
                    self.assertTrue(merge["mergeable"])
                    self.assertEqual((d["params"], d["frozen_params"], d["buffers"], d["ties"]),
                                     (len(trainable), len(frozen), len(buffers), len(ties)))
                    self.assertEqual(merge["tensors"], len(meta))
                    truth_bytes = sum(t.numel() * t.element_size()
                                      for n, t in oracle.load(os.path.join(DEEPSPEED, truth, "ground_truth.pt")).items()
                                      if n != TIE)
                    self.assertEqual(merge["bytes"], truth_bytes)
                self.assertEqual(d["master_bytes"], master_bytes(case))
                for f in d["files"]:
                    self.assertEqual(f["bytes"], os.path.getsize(f["path"]), f["path"])
                with open(os.path.join(DEEPSPEED, truth, "worker_info.json")) as f:
                    # DeepSpeed run from a source checkout records version 0.0.0.
                    self.assertEqual(d["ds_version"], json.load(f).get("deepspeed_version", "0.14.5"))

    def test_human_form_names_stage_and_merge(self):
        r = run("inspect", os.path.join(DEEPSPEED, "zero0_ws2_fp16_fused", "ckpt"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("optimizer          FP16_Optimizer", r.stdout)
        self.assertIn("zero stage         0", r.stdout)
        self.assertIn("merge: writes 31 tensors", r.stdout)


if __name__ == "__main__":
    unittest.main()
