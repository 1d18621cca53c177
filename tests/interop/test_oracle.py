#!/usr/bin/python3
"""Checks tests/torch_oracle.py against every fixture: each file loads in the expected mode
(weights_only where torch 1.13 can, stubs where the file names DeepSpeed classes), holds the
values make_fixtures.py put in it, and the bad ones are refused without running anything.

    /usr/bin/python3 tests/interop/test_oracle.py     (unittest; exit 1 on failure)
"""

import collections
import fnmatch
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_list import FIXTURES, ROOT, checkpoint_files as fixture_files  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, FIXTURES)

import torch  # noqa: E402

import make_fixtures as mf  # noqa: E402
import torch_oracle as oracle  # noqa: E402

DS = "deepspeed/*/ckpt/global_step2/"
DS_STUBS = {
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler",
    "deepspeed.runtime.fp16.loss_scaler.LossScaler",
    "deepspeed.runtime.zero.config.ZeroStageEnum",
    "deepspeed.utils.tensor_fragment.fragment_address",
}

# (glob under fixtures/, expected mode, stubs: exact set, or "deepspeed" for a non-empty
# subset of DS_STUBS). The first matching row wins; every loadable file must match a row.
EXPECTED = [
    ("torch/optimizer_state.pt", "stubbed", set()),
    ("torch/python_values.pt", "stubbed", set()),
    ("torch/quantized.pt", "stubbed", set()),
    ("torch/quantized_subbyte.pt", "stubbed", set()),
    ("torch/*.pt", "weights_only", set()),
    ("hf/bloated/*.bin", "weights_only", set()),
    ("bad/deflated.pt", "weights_only", set()),
    (DS + "*optim_states.pt", "stubbed", "deepspeed"),
    # v0.18.5+ stage-0 bf16 keeps BF16_Optimizer's state (fragment_address) in the model file.
    ("deepspeed/derived_zero0_ws2_bf16_v0185/ckpt/global_step2/mp_rank_00_model_states.pt", "stubbed", "deepspeed"),
    (DS + "*model_states.pt", "stubbed", set()),  # builtins.set and floats, no foreign class
    ("deepspeed/*universal_*/ckpt/*_universal/*model_states.pt", "stubbed", set()),
    ("deepspeed/universal_*/ckpt/*_universal/zero/optimizer_state.pt", "stubbed", "deepspeed"),
    ("deepspeed/*universal_*/ckpt/*_universal/zero/*/*.pt", "weights_only", set()),
    ("deepspeed/*/ground_truth.pt", "weights_only", set()),
    ("deepspeed/derived_*/expected.pt", "weights_only", set()),
    ("deepspeed/*/reference_zero_to_fp32.bin", "weights_only", set()),
    ("deepspeed/bloat_zero2_ws2_bf16/*", "weights_only", set()),
]
# Loadable files that hold no tensor: ds_to_universal.py's common optimizer state.
NO_TENSORS = ("zero/optimizer_state.pt",)
REFUSED = {
    "bad/unsafe_os_system.pt": (oracle.UnsafeFile, ["posix.system"]),
    "bad/unsafe_eval.pt": (oracle.UnsafeFile, ["builtins.eval"]),
    "bad/unsafe_getattr.pt": (oracle.UnsafeFile, []),
    "bad/torchscript.pt": (oracle.UnsupportedFile, None),
}


def expectation(rel):
    for pattern, mode, stubs in EXPECTED:
        if fnmatch.fnmatch(rel, pattern):
            return mode, stubs
    return None


def fx(rel):
    return os.path.join(FIXTURES, rel)


class LoadModes(unittest.TestCase):
    def test_every_fixture_loads_in_its_expected_mode(self):
        files = fixture_files()
        self.assertGreater(len(files), 60)
        for rel in files:
            with self.subTest(rel=rel):
                if rel in REFUSED:
                    continue
                exp = expectation(rel)
                self.assertIsNotNone(exp, f"{rel}: no row in EXPECTED")
                mode, stubs = exp
                loaded = oracle.load_info(fx(rel))
                self.assertEqual(loaded.mode, mode)
                if stubs == "deepspeed":
                    self.assertTrue(loaded.stubbed)
                    self.assertLessEqual(set(loaded.stubbed), DS_STUBS)
                else:
                    self.assertEqual(set(loaded.stubbed), stubs)
                d = oracle.describe(loaded.obj)
                self.assertEqual(bool(d["tensors"]), not rel.endswith(NO_TENSORS), f"{rel}: tensors")

    def test_refused_files_are_all_listed(self):
        listed = {rel for rel in fixture_files() if rel.startswith("bad/")}
        self.assertEqual(listed - {"bad/deflated.pt"}, set(REFUSED))

    def test_stub_modules_do_not_outlive_the_load(self):
        oracle.load(fx("deepspeed/zero1_ws2_fp16/ckpt/global_step2/"
                       "zero_pp_rank_0_mp_rank_00_optim_states.pt"))
        self.assertNotIn("deepspeed", sys.modules)
        self.assertNotIn("deepspeed.runtime.zero.config", sys.modules)

    def test_formats(self):
        self.assertEqual(oracle.scan(fx("torch/legacy_views_tied.pt")).format, "torch-legacy")
        self.assertEqual(oracle.scan(fx("torch/views.pt")).format, "torch-zip")
        self.assertEqual(oracle.scan(fx("torch/zip_rewritten.pt")).format, "torch-zip")


class Refusals(unittest.TestCase):
    def test_bad_files_are_refused(self):
        for rel, (exc, unsafe) in REFUSED.items():
            with self.subTest(rel=rel):
                with self.assertRaises(exc) as cm:
                    oracle.load(fx(rel))
                if unsafe is not None:
                    self.assertEqual(cm.exception.globals, unsafe)

    def test_getattr_rule_names_each_bad_call(self):
        s = oracle.scan(fx("bad/unsafe_getattr.pt"))
        self.assertEqual(s.unsafe, [])
        self.assertEqual(s.globals, ["__builtin__.getattr", "torch._utils._rebuild_tensor_v2"])
        self.assertEqual(len([p for p in s.problems if "getattr called on" in p]), 2)
        self.assertEqual(len([p for p in s.problems if "not a global" in p]), 1)

    def test_getattr_on_a_stubbed_enum_is_accepted(self):
        rel = DS.replace("*", "zero2_ws3_bf16", 1) + "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"
        s = oracle.scan(fx(rel))
        self.assertIn("__builtin__.getattr", s.globals)
        self.assertEqual(s.problems, [])

    def test_nothing_runs_when_the_cli_refuses(self):
        # The fixture is live: a plain torch.load runs its echo. The oracle must not.
        path = fx("bad/unsafe_os_system.pt")
        with tempfile.TemporaryDirectory() as tmp:
            plain = subprocess.run(
                [sys.executable, "-c", "import sys, torch; torch.load(sys.argv[1])", path],
                cwd=tmp, capture_output=True, text=True, timeout=60)
            self.assertIn("this pickle was executed", plain.stdout)
            cli = subprocess.run(
                [sys.executable, os.path.join(ROOT, "tests", "torch_oracle.py"), "dump", path],
                cwd=tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual(cli.returncode, 1)
        self.assertEqual(cli.stdout, "")
        self.assertIn("unsafe global posix.system", cli.stderr)

    def test_truncated_files_fail_to_load(self):
        with tempfile.TemporaryDirectory() as tmp:
            for rel in ("torch/views.pt", "torch/legacy_views_tied.pt"):
                with open(fx(rel), "rb") as f:
                    data = f.read()
                for cut in (len(data) // 3, len(data) - 1):
                    with self.subTest(rel=rel, cut=cut):
                        path = os.path.join(tmp, "cut.pt")
                        with open(path, "wb") as f:
                            f.write(data[:cut])
                        with self.assertRaises(Exception):
                            oracle.load(path)


class Values(unittest.TestCase):
    """Each file holds what make_fixtures.py's builders make (same seeds), exactly."""

    BUILDERS = {
        "torch/state_dict.pt": mf.state_dict_fixture,
        "torch/optimizer_state.pt": mf.optimizer_fixture,
        "torch/python_values.pt": mf.python_values_fixture,
        "torch/tied_weights.pt": mf.tied_fixture,
        "torch/views.pt": mf.views_fixture,
        "torch/transposed_expand.pt": mf.transposed_expand_fixture,
        "torch/dtypes.pt": mf.dtypes_fixture,
        "torch/quantized.pt": mf.quantized_fixture,
        "torch/quantized_subbyte.pt": mf.quantized_subbyte_fixture,
        "torch/scalars_empty.pt": mf.scalars_empty_fixture,
        "torch/parameters.pt": mf.parameters_fixture,
        "torch/legacy_state_dict.pt": mf.state_dict_fixture,
        "torch/legacy_dtypes.pt": mf.dtypes_fixture,
        "torch/zip_rewritten.pt": mf.views_fixture,
        "bad/deflated.pt": mf.state_dict_fixture,
    }

    def test_files_equal_their_builders(self):
        for rel, build in self.BUILDERS.items():
            with self.subTest(rel=rel):
                self.assertEqual(oracle.compare(oracle.load(fx(rel)), build()), [])

    def test_legacy_views_tied(self):
        want = mf.views_fixture()
        want.update(mf.tied_fixture())
        got = oracle.load(fx("torch/legacy_views_tied.pt"))
        self.assertEqual(oracle.compare(got, want), [])
        self.assertIs(got["lm_head.weight"], got["embed.weight"])

    def test_hf_shards_equal_the_plan(self):
        sd = mf.hf_bloated_state_dict()
        with open(fx("hf/bloated/pytorch_model.bin.index.json")) as f:
            index = json.load(f)
        self.assertEqual(sorted(index["weight_map"]), sorted(sd))
        self.assertEqual(index["metadata"]["total_size"],
                         sum(t.numel() * t.element_size() for t in sd.values()))
        for i, names in enumerate(mf.hf_shard_plan(list(sd))):
            fname = f"pytorch_model-{i + 1:05d}-of-00003.bin"
            with self.subTest(shard=fname):
                got = oracle.load(fx("hf/bloated/" + fname))
                self.assertEqual(list(got), names)
                self.assertEqual(oracle.compare(got, collections.OrderedDict(
                    (n, sd[n]) for n in names)), [])
                self.assertTrue(all(index["weight_map"][n] == fname for n in names))

    def test_compare_finds_differences(self):
        a = mf.views_fixture()
        b = mf.views_fixture()
        b["tail"] = b["tail"].clone()
        b["tail"][3] = -1.0
        self.assertEqual(oracle.compare(a, b), ["tail: values differ"])
        self.assertEqual(oracle.compare_tensors(a["block"], a["block"].t().contiguous().t()),
                         ["stride (5, 1) != (1, 4)"])
        self.assertEqual(oracle.compare_tensors(a["block"], a["block"].t().contiguous().t(),
                                                strides=False), [])
        self.assertEqual(oracle.compare_tensors(torch.tensor([0.0]), torch.tensor([-0.0])),
                         ["values differ"])
        nan = torch.tensor([float("nan")])
        self.assertEqual(oracle.compare_tensors(nan, nan.clone()), [])
        self.assertEqual(oracle.compare({"a": 1, "b": 2}, {"b": 2, "a": 1}),
                         ["<root>: keys ['a', 'b'] != ['b', 'a']"])
        self.assertEqual(oracle.compare([1, 2.5], [1, 2.25]), ["1: 2.5 != 2.25"])


class Describe(unittest.TestCase):
    def describe(self, rel):
        return oracle.describe(oracle.load(fx(rel)))

    def test_views_share_one_storage_with_exact_extents(self):
        d = self.describe("torch/views.pt")
        rows = [(t["name"], t["shape"], t["stride"], t["storage_offset"], t["storage"])
                for t in d["tensors"]]
        self.assertEqual(rows, [
            ("head", [10], [1], 0, "s0"),
            ("block", [4, 5], [5, 1], 10, "s0"),
            ("overlap", [10], [1], 5, "s0"),
            ("strided", [8], [2], 32, "s0"),
            ("tail", [8], [1], 48, "s0"),
            ("mid_of_big", [10], [1], 40, "s1"),
        ])
        # s0: elements [0, 30) + [32, 47) + [48, 56) = 53 elements; s1: 10 of 100.
        self.assertEqual(d["storages"], [
            {"id": "s0", "nbytes": 256, "dtype": "float32", "referenced_nbytes": 212},
            {"id": "s1", "nbytes": 400, "dtype": "float32", "referenced_nbytes": 40},
        ])

    def test_tied_names_share_a_storage(self):
        d = self.describe("torch/tied_weights.pt")
        ids = {t["name"]: t["storage"] for t in d["tensors"]}
        self.assertEqual(ids, {"embed.weight": "s0", "lm_head.weight": "s0",
                               "decoder.weight": "s0", "proj.weight": "s1",
                               "proj.bias": "s2"})

    def test_strides_and_zero_strides(self):
        d = self.describe("torch/transposed_expand.pt")
        rows = {t["name"]: (t["shape"], t["stride"], t["storage_offset"], t["storage"])
                for t in d["tensors"]}
        self.assertEqual(rows["transposed"], ([4, 3], [1, 4], 0, "s0"))
        self.assertEqual(rows["transposed_narrow"], ([2, 3], [1, 4], 1, "s0"))
        self.assertEqual(rows["expand_row"], ([4, 3], [0, 1], 0, "s1"))
        self.assertEqual(rows["expand_scalar"], ([2, 3], [0, 0], 0, "s2"))
        self.assertEqual(rows["expand_column"], ([3, 5], [1, 0], 0, "s3"))
        self.assertEqual(rows["permuted"], ([4, 2, 3], [1, 12, 4], 0, "s4"))
        self.assertEqual([s["referenced_nbytes"] for s in d["storages"]], [48, 12, 4, 12, 96])

    def test_empty_tensors_reference_nothing(self):
        d = self.describe("torch/scalars_empty.pt")
        storages = {s["id"]: (s["nbytes"], s["referenced_nbytes"]) for s in d["storages"]}
        by_name = {t["name"]: t for t in d["tensors"]}
        self.assertEqual(by_name["empty_view"]["storage_offset"], 5)
        self.assertEqual(by_name["empty_view"]["storage"],
                         by_name["view_next_to_empty"]["storage"])
        self.assertEqual(storages[by_name["empty_view"]["storage"]], (40, 8))
        self.assertEqual(storages[by_name["empty"]["storage"]], (0, 0))
        self.assertNotEqual(by_name["empty"]["storage"], by_name["empty_3x0"]["storage"])
        self.assertEqual(storages[by_name["scalar_bool"]["storage"]], (1, 1))

    def test_digest_is_sha256_of_logical_bytes(self):
        d = self.describe("torch/bare_tensor.pt")
        self.assertEqual(len(d["tensors"]), 1)
        t = d["tensors"][0]
        self.assertEqual((t["name"], t["path"], t["dtype"]), ("", [], "int64"))
        self.assertEqual(t["sha256"], hashlib.sha256(struct.pack("<5q", 0, 1, 2, 3, 4))
                         .hexdigest())
        d = self.describe("torch/transposed_expand.pt")
        t = next(t for t in d["tensors"] if t["name"] == "expand_scalar")
        self.assertEqual(t["sha256"], hashlib.sha256(struct.pack("<6f", *[7.0] * 6))
                         .hexdigest())

    def test_dtypes_and_quantized(self):
        d = self.describe("torch/dtypes.pt")
        self.assertEqual([(t["name"], t["dtype"], t["itemsize"]) for t in d["tensors"]], [
            ("float64", "float64", 8), ("float32", "float32", 4), ("float16", "float16", 2),
            ("bfloat16", "bfloat16", 2), ("int64", "int64", 8), ("int32", "int32", 4),
            ("int16", "int16", 2), ("int8", "int8", 1), ("uint8", "uint8", 1),
            ("bool", "bool", 1), ("complex64", "complex64", 8),
            ("complex128", "complex128", 16)])
        d = self.describe("torch/quantized.pt")
        self.assertEqual([(t["dtype"], t["storage_dtype"], t["storage_nbytes"],
                           t["quantized"]["zero_point"]) for t in d["tensors"]],
                         [("qint8", "qint8", 10, 3), ("quint8", "quint8", 10, 128),
                          ("qint32", "qint32", 40, -7)])
        d = self.describe("torch/quantized_subbyte.pt")
        self.assertEqual([(t["dtype"], t["shape"], t["itemsize"], t["element_bits"],
                           t["nbytes"]) for t in d["tensors"]],
                         [("quint4x2", [5], 1, 4, 3), ("quint2x4", [7], 1, 2, 2)])
        self.assertEqual([(s["nbytes"], s["referenced_nbytes"]) for s in d["storages"]],
                         [(3, 3), (2, 2)])

    def test_parameters(self):
        d = self.describe("torch/parameters.pt")
        self.assertEqual([(t["name"], t["is_parameter"], t["requires_grad"])
                          for t in d["tensors"]],
                         [("weight", True, True), ("frozen", True, False),
                          ("half_param", True, True), ("leaf_requires_grad", False, True),
                          ("plain", False, False)])

    def test_leaves_and_paths(self):
        d = self.describe("torch/optimizer_state.pt")
        leaves = {l["name"]: (l["path"], l["value"]) for l in d["leaves"]}
        self.assertEqual(leaves["global_step"], (["global_step"], 2 ** 40 + 1))
        self.assertEqual(leaves["int_keys.7"], (["int_keys", 7], "seven"))
        self.assertEqual(leaves["nested.deep.deeper.4.leaf"],
                         (["nested", "deep", "deeper", 4, "leaf"], True))
        self.assertEqual(leaves["optimizer.param_groups.1.name"][1], "no_decay")
        self.assertEqual(leaves["empty.tuple"], (["empty", "tuple"], []))
        self.assertEqual(leaves["notes"][1], None)
        steps = [t for t in d["tensors"] if t["name"].endswith(".step")]
        self.assertEqual([(t["path"], t["shape"]) for t in steps],
                         [(["optimizer", "state", i, "step"], []) for i in range(6)])
        d = self.describe("torch/dtypes.pt")  # no leaves: every value is a tensor
        self.assertEqual(d["leaves"], [])

    def test_hf_shards_carry_the_whole_buffer(self):
        got = []
        for i in range(3):
            d = self.describe(f"hf/bloated/pytorch_model-{i + 1:05d}-of-00003.bin")
            got.append([(s["nbytes"], s["referenced_nbytes"]) for s in d["storages"]])
        self.assertEqual(got, [[(14848, 8512)], [(14848, 5312)], [(14848, 64), (400, 400)]])

    def test_deepspeed_stub_objects(self):
        base = fx("deepspeed/zero1_ws2_fp16/ckpt/global_step2/")
        sd = oracle.load(base + "zero_pp_rank_0_mp_rank_00_optim_states.pt")
        osd = sd["optimizer_state_dict"]
        scaler = osd["loss_scaler"]
        self.assertIsInstance(scaler, oracle.StubObject)
        self.assertEqual(type(scaler).__stub_global__,
                         "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler")
        self.assertEqual(scaler.state["cur_scale"], 256)
        self.assertEqual(scaler.state["dtype"], torch.float16)
        self.assertEqual(osd["zero_stage"], oracle.StubEnumMember(
            "deepspeed.runtime.zero.config.ZeroStageEnum", "optimizer_states"))
        frag = osd["param_slice_mappings"][0]["transformer.h.0.attn.c_proj.weight"]
        self.assertEqual(frag.state, {"numel": 1296, "start": 3888})
        self.assertEqual([p.shape for p in osd["single_partition_of_fp32_groups"]],
                         [torch.Size([15768]), torch.Size([4162])])
        d = oracle.describe(sd)
        objects = [o["name"] for o in d["objects"]]
        self.assertEqual(objects[0], "optimizer_state_dict.loss_scaler")
        leaves = {l["name"]: l["value"] for l in d["leaves"]}
        self.assertEqual(leaves["optimizer_state_dict.zero_stage"],
                         {"enum": "deepspeed.runtime.zero.config.ZeroStageEnum."
                                  "optimizer_states"})
        self.assertEqual(leaves["optimizer_state_dict.loss_scaler.state.cur_scale"], 256)

    def test_deepspeed_ground_truth(self):
        for case in ("zero1_ws2_fp16", "zero3_ws4_fp32"):
            with self.subTest(case=case):
                gt = oracle.load(fx(f"deepspeed/{case}/ground_truth.pt"))
                dtypes = {n: str(t.dtype) for n, t in gt.items()}
                self.assertEqual(dtypes.pop("transformer.position_ids"), "torch.int64")
                self.assertEqual(set(dtypes.values()), {"torch.float32"})
                self.assertIn("lm_head.weight", gt)
                self.assertEqual(oracle.compare(gt["lm_head.weight"],
                                                gt["transformer.wte.weight"]), [])


class Extents(unittest.TestCase):
    def test_view_extent(self):
        self.assertEqual(oracle.view_extent([4, 5], [5, 1], 10, 32), (40, 120))
        self.assertEqual(oracle.view_extent([2, 3], [0, 0], 0, 32), (0, 4))
        self.assertEqual(oracle.view_extent([3, 5], [1, 0], 2, 64), (16, 40))
        self.assertEqual(oracle.view_extent([], [], 7, 16), (14, 16))
        self.assertIsNone(oracle.view_extent([3, 0], [1, 1], 5, 32))
        self.assertEqual(oracle.view_extent([5], [1], 0, 4), (0, 3))    # quint4x2
        self.assertEqual(oracle.view_extent([7], [1], 0, 2), (0, 2))    # quint2x4

    def test_storage_usage_counts_overlaps_once(self):
        def t(sid, shape, stride, offset, bits=32):
            return {"storage": sid, "shape": shape, "stride": stride,
                    "storage_offset": offset, "element_bits": bits}
        self.assertEqual(oracle.storage_usage([
            t("a", [10], [1], 0), t("a", [10], [1], 5), t("a", [2], [1], 20),
            t("b", [0], [1], 3), t("c", [4], [0], 9, 16)]),
            {"a": 4 * 15 + 4 * 2, "b": 0, "c": 2})


class Cli(unittest.TestCase):
    def test_dump(self):
        out = subprocess.run(
            [sys.executable, os.path.join(ROOT, "tests", "torch_oracle.py"), "dump",
             fx("torch/tied_weights.pt")], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        d = json.loads(out.stdout)
        self.assertEqual((d["format"], d["mode"], d["stubbed"]),
                         ("torch-zip", "weights_only", []))
        self.assertEqual([t["name"] for t in d["tensors"]],
                         ["embed.weight", "lm_head.weight", "decoder.weight", "proj.weight",
                          "proj.bias"])


if __name__ == "__main__":
    unittest.main()
