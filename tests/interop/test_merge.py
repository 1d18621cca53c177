#!/usr/bin/python3
"""`zerofold merge` rebuilds ground_truth.pt from every real DeepSpeed checkpoint, bit for bit.

For each case in fixtures/deepspeed (README.md there), with the binary in $ZEROFOLD, loaded
through tests/torch_oracle.py:
  - torch output has exactly ground_truth.pt's names, dtypes, shapes and values (tied, frozen,
    buffers included), the tied names share one storage, and the file is byte for byte what
    torch.save writes for the same OrderedDict (ties as model.state_dict() gives them);
  - safetensors output (its own minimal reader here, from the format's spec) and sharded
    output (index, ties in their owner's shard) hold the same values;
  - --dtype bfloat16/float16 output equals ground truth's floating tensors .to() that dtype;
  - copies with `shared_params` deleted from the model-states files (older DeepSpeed) still
    merge to ground truth: the tie is found from the module's views;
  - against DeepSpeed's own zero_to_fp32.py output: only the documented differences.
"""

import collections
import json
import os
import shutil
import struct
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
CASES = ["zero1_ws2_fp16", "zero1_ws3_bf16_bf16optimizer", "zero2_ws3_bf16", "zero3_ws3_fp16", "zero3_ws4_fp32"]
TIE, OWNER, FROZEN, INT_BUFFER = ("lm_head.weight", "transformer.wte.weight", "transformer.wpe.weight",
                                  "transformer.position_ids")

# safetensors dtype codes (the format's spec) for the dtypes merge writes.
ST_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
             "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}


def merge(ckpt, out, *flags):
    """Runs zerofold merge --json; returns the parsed summary (fails the test on error)."""
    r = subprocess.run([ZEROFOLD, "merge", "--json", *flags, ckpt, out], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"zerofold merge {ckpt} {out} {flags}: exit {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout)


def ground_truth(case):
    return oracle.load(os.path.join(DEEPSPEED, case, "ground_truth.pt"))


def meta(case):
    with open(os.path.join(DEEPSPEED, case, "worker_info.json")) as f:
        return json.load(f)["ground_truth_meta"]


def storage_of(t):
    return t.storage().data_ptr(), t.storage().size()


def read_safetensors(path):
    """name -> tensor, and the __metadata__, checking the layout rules of the spec."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, f"header length {n} not a multiple of 8"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None)
    out = collections.OrderedDict()
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == end, f"{name}: gap or overlap at {b}, previous end {end}"
        end = e
        raw = bytearray(data[8 + n + b:8 + n + e])
        dtype = ST_DTYPES[info["dtype"]]
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"])
    assert 8 + n + end == len(data), "bytes after the last tensor"
    return out, metadata


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zf_test_merge_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def out(self, *parts):
        return os.path.join(self.tmp, *parts)

    def assert_equal_to_ground_truth(self, got, case, names_in_order=True):
        self.assert_equal_to_ground_truth_values(got, ground_truth(case), names_in_order)

    def test_torch_output_equals_ground_truth_with_the_tie_sharing_storage(self):
        for case in CASES:
            with self.subTest(case=case):
                out = self.out(case)
                summary = merge(os.path.join(DEEPSPEED, case, "ckpt"), out, "--verify")
                self.assertEqual(summary["verified"], {"tensors": 31, "bytes": summary["tensor_bytes"]})
                self.assertEqual([o["path"] for o in summary["outputs"]], [os.path.join(out, "pytorch_model.bin")])
                loaded = oracle.load_info(os.path.join(out, "pytorch_model.bin"))
                self.assertEqual(loaded.mode, "weights_only")  # nothing but tensors and an OrderedDict
                got = loaded.obj
                self.assertIsInstance(got, collections.OrderedDict)
                self.assertEqual(got[INT_BUFFER].dtype, torch.int64)
                self.assertEqual(got[FROZEN].dtype, torch.float32)
                self.assert_equal_to_ground_truth(got, case)
                # The tie shares its owner's storage; every other name has its own.
                storages = {name: storage_of(t) for name, t in got.items()}
                self.assertEqual(storages[TIE], storages[OWNER])
                self.assertEqual(got[TIE].storage_offset(), 0)
                others = [s for name, s in storages.items() if name != TIE]
                self.assertEqual(len(set(others)), len(others))
                for name, t in got.items():
                    self.assertEqual(t.storage().size(), t.numel(), name)  # exactly sized

    def test_torch_output_is_what_torch_save_writes(self):
        for case in CASES:
            with self.subTest(case=case):
                out = self.out(case)
                merge(os.path.join(DEEPSPEED, case, "ckpt"), out)
                ours = os.path.join(out, "pytorch_model.bin")
                got = oracle.load(ours)
                want = ground_truth(case)
                tied_to = {name: m.get("tied_to") for name, m in meta(case).items()}
                sd = collections.OrderedDict()
                for name in got:
                    owner = tied_to.get(name)
                    # model.state_dict() gives a tied name a second tensor on the same storage.
                    sd[name] = sd[owner].detach() if owner in sd else want[name].clone()
                ref_dir = self.out(case + "_torch")
                os.makedirs(ref_dir)
                ref = os.path.join(ref_dir, "pytorch_model.bin")
                torch.save(sd, ref)
                with open(ours, "rb") as a, open(ref, "rb") as b:
                    self.assertEqual(a.read(), b.read())

    def test_the_top_folder_is_what_torch_save_names_it(self):
        case = "zero1_ws2_fp16"
        got_path = self.out("model.v2.bin")
        merge(os.path.join(DEEPSPEED, case, "ckpt"), got_path)
        got = oracle.load(got_path)
        ref_path = self.out("ref", "model.v2.bin")
        os.makedirs(os.path.dirname(ref_path))
        sd = collections.OrderedDict()
        for name, t in got.items():
            sd[name] = sd[OWNER].detach() if name == TIE else t.clone()
        torch.save(sd, ref_path)
        with open(got_path, "rb") as a, open(ref_path, "rb") as b:
            self.assertEqual(a.read(), b.read())  # top folder "model.v2", as torch names it

    def test_one_file_out_and_safetensors(self):
        case = "zero2_ws3_bf16"
        ckpt = os.path.join(DEEPSPEED, case, "ckpt")
        for name in ("model.pt", "weights.bin"):
            summary = merge(ckpt, self.out(name))
            self.assertEqual(summary["outputs"][0]["path"], self.out(name))
            self.assertEqual(summary["outputs"][0]["bytes"], os.path.getsize(self.out(name)))
            self.assert_equal_to_ground_truth(oracle.load(self.out(name)), case)
        for case in CASES:
            with self.subTest(case=case):
                ckpt = os.path.join(DEEPSPEED, case, "ckpt")
                summary = merge(ckpt, self.out(case + ".safetensors"), "--verify")
                self.assertEqual(summary["format"], "safetensors")
                got, metadata = read_safetensors(self.out(case + ".safetensors"))
                self.assertEqual(metadata, {"format": "pt"})
                self.assert_equal_to_ground_truth(got, case, names_in_order=False)
                merge(ckpt, self.out(case + "_st"), "--to", "safetensors")
                again, _ = read_safetensors(self.out(case + "_st", "model.safetensors"))
                self.assert_equal_to_ground_truth(again, case, names_in_order=False)

    def test_shards_keep_each_tie_with_its_owner(self):
        for fmt, ext in (("torch", ".bin"), ("safetensors", ".safetensors")):
            with self.subTest(format=fmt):
                case = "zero3_ws4_fp32"
                out = self.out("shards_" + fmt)
                summary = merge(os.path.join(DEEPSPEED, case, "ckpt"), out, "--to", fmt, "--max-shard-size", "40KB",
                                "--verify")
                files = [o["path"] for o in summary["outputs"]]
                self.assertGreater(len(files), 2)
                prefix = "pytorch_model" if fmt == "torch" else "model"
                self.assertEqual([os.path.basename(f) for f in files],
                                 [f"{prefix}-{k:05d}-of-{len(files):05d}{ext}" for k in range(1, len(files) + 1)])
                index_name = "pytorch_model.bin.index.json" if fmt == "torch" else "model.safetensors.index.json"
                self.assertEqual(summary["index"], os.path.join(out, index_name))
                with open(summary["index"]) as f:
                    text = f.read()
                index = json.loads(text)
                self.assertEqual(text, json.dumps(index, indent=2, sort_keys=True) + "\n")  # as transformers writes it
                got = collections.OrderedDict()
                stored = 0
                for path in files:
                    if fmt == "torch":
                        shard = oracle.load(path)
                        unique = {storage_of(t): t for t in shard.values()}.values()
                        shard_bytes = sum(t.storage().nbytes() for t in unique)
                    else:
                        shard, _ = read_safetensors(path)
                        shard_bytes = sum(t.numel() * t.element_size() for t in shard.values())
                    stored += shard_bytes
                    holders = [n for n in shard if n != TIE or OWNER not in shard]
                    # Past the limit only when one tensor (with its tie) is larger alone.
                    self.assertTrue(shard_bytes <= 40000 or len(holders) == 1, (path, shard_bytes, list(shard)))
                    for name in shard:
                        self.assertEqual(index["weight_map"][name], os.path.basename(path), name)
                    if TIE in shard:
                        self.assertIn(OWNER, shard)
                        if fmt == "torch":
                            self.assertEqual(storage_of(shard[TIE]), storage_of(shard[OWNER]))
                    got.update(shard)
                self.assertEqual(sorted(index["weight_map"]), sorted(got))
                self.assertEqual(index["metadata"]["total_size"], stored)
                self.assert_equal_to_ground_truth(got, case, names_in_order=False)

    def test_only_exclude_frozen(self):
        case = "zero3_ws3_fp16"
        ckpt = os.path.join(DEEPSPEED, case, "ckpt")
        want = ground_truth(case)
        merge(ckpt, self.out("owner.bin"), "--only", "transformer.wte.*")
        got = oracle.load(self.out("owner.bin"))
        self.assertEqual(list(got), [OWNER, TIE])  # the tie follows its owner
        self.assertEqual(storage_of(got[TIE]), storage_of(got[OWNER]))
        merge(ckpt, self.out("tie.bin"), "--only", "lm_*")
        got = oracle.load(self.out("tie.bin"))
        self.assertEqual(list(got), [TIE])  # selected alone, the tie holds the data
        self.assertEqual(oracle.compare_tensors(got[TIE], want[TIE]), [])
        merge(ckpt, self.out("blocks.bin"), "--only", "transformer.h.1.*,transformer.ln_f.*")
        got = oracle.load(self.out("blocks.bin"))
        self.assertEqual(list(got), [n for n in want if n.startswith(("transformer.h.1.", "transformer.ln_f."))])
        for name in got:
            self.assertEqual(oracle.compare_tensors(got[name], want[name]), [], name)
        merge(ckpt, self.out("trainable.bin"), "--exclude-frozen")
        got = oracle.load(self.out("trainable.bin"))
        self.assertEqual(list(got), [n for n in want if n != FROZEN])

    def test_dtype_rounds_as_torch_does(self):
        for case in CASES:
            for name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
                with self.subTest(case=case, dtype=name):
                    out = self.out(case + "_" + name)
                    summary = merge(os.path.join(DEEPSPEED, case, "ckpt"), out, "--dtype", name, "--verify")
                    self.assertEqual(summary["verified"]["tensors"], 31)
                    got = oracle.load(os.path.join(out, "pytorch_model.bin"))
                    want = collections.OrderedDict(
                        (k, v.to(dtype) if v.is_floating_point() else v) for k, v in ground_truth(case).items())
                    self.assertEqual(got[INT_BUFFER].dtype, torch.int64)  # integers keep their dtype
                    self.assert_equal_to_ground_truth_values(got, want)
                    self.assertEqual(storage_of(got[TIE]), storage_of(got[OWNER]))
                    st = self.out(case + "_" + name + ".safetensors")
                    merge(os.path.join(DEEPSPEED, case, "ckpt"), st, "--dtype", name)
                    got, _ = read_safetensors(st)
                    self.assert_equal_to_ground_truth_values(got, want, names_in_order=False)

    def assert_equal_to_ground_truth_values(self, got, want, names_in_order=True):
        if names_in_order:
            self.assertEqual(list(got.keys()), list(want.keys()))
        else:
            self.assertEqual(sorted(got.keys()), sorted(want.keys()))
        for name, w in want.items():
            self.assertEqual(oracle.compare_tensors(got[name], w, True, name), [], name)

    def test_without_shared_params_the_tie_is_found_from_the_module(self):
        for case in ("zero2_ws3_bf16", "zero3_ws3_fp16"):
            with self.subTest(case=case):
                ckpt = self.out(case + "_old")
                shutil.copytree(os.path.join(DEEPSPEED, case, "ckpt"), ckpt)
                tag = os.path.join(ckpt, "global_step2")
                edited = 0
                for name in sorted(os.listdir(tag)):
                    if not name.endswith("_model_states.pt"):
                        continue
                    path = os.path.join(tag, name)
                    loaded = oracle.load_info(path)
                    self.assertEqual(loaded.stubbed, [])  # plain data: torch.save can write it back
                    states = loaded.obj
                    # DeepSpeed 0.14.5 records the tie in rank 0's file; ZeRO-3 ranks 1+ hold {}.
                    first = name.startswith(("mp_rank_00", "zero_pp_rank_0_"))
                    self.assertEqual(states["shared_params"], {TIE: OWNER} if first else {})
                    del states["shared_params"]  # as DeepSpeed before shared_params wrote it
                    torch.save(states, path)
                    self.assertNotIn("shared_params", oracle.load(path))
                    edited += 1
                self.assertEqual(edited, 1 if case.startswith("zero2") else 3)
                out = self.out(case + "_merged")
                summary = merge(ckpt, out, "--verify")
                self.assertEqual(summary["ties"], 1)
                got = oracle.load(os.path.join(out, "pytorch_model.bin"))
                self.assert_equal_to_ground_truth(got, case)
                self.assertEqual(storage_of(got[TIE]), storage_of(got[OWNER]))

    def test_differences_from_zero_to_fp32_are_the_known_ones(self):
        # DeepSpeed 0.14.5's zero_to_fp32.py, compared with ground truth (fixtures/deepspeed/README.md):
        #   - ZeRO-1 drops the frozen param (the engine records frozen params only for stage 2/3,
        #     though its value is in `module`): we write it;
        #   - it writes frozen params 16-bit in fp16/bf16 runs: we upcast them to float32, exactly;
        #   - it casts the int64 buffer position_ids to float32: we keep int64;
        #   - it refuses BF16_Optimizer checkpoints (no reference for zero1_ws3_bf16_bf16optimizer).
        # Everything else is identical, bit for bit.
        known = {
            "zero1_ws2_fp16": {"missing": {FROZEN}, "cast": {INT_BUFFER: torch.float32}},
            "zero2_ws3_bf16": {"missing": set(), "cast": {INT_BUFFER: torch.float32, FROZEN: torch.bfloat16}},
            "zero3_ws3_fp16": {"missing": set(), "cast": {INT_BUFFER: torch.float32, FROZEN: torch.float16}},
            "zero3_ws4_fp32": {"missing": set(), "cast": {INT_BUFFER: torch.float32}},
        }
        for case, diff in known.items():
            with self.subTest(case=case):
                ref_path = os.path.join(DEEPSPEED, case, "reference_zero_to_fp32.bin")
                self.assertTrue(os.path.exists(ref_path))
                ref = oracle.load(ref_path)
                out = self.out(case)
                merge(os.path.join(DEEPSPEED, case, "ckpt"), out)
                ours = oracle.load(os.path.join(out, "pytorch_model.bin"))
                self.assertEqual(set(ours) - set(ref), diff["missing"])
                self.assertEqual(set(ref) - set(ours), set())
                cast = {name: ref[name].dtype for name in ref if ref[name].dtype != ours[name].dtype}
                self.assertEqual(cast, diff["cast"])
                for name in ref:
                    # A cast name matches once ours is cast the same way (every value is exact in both).
                    mine = ours[name].to(ref[name].dtype)
                    self.assertEqual(oracle.compare_tensors(mine, ref[name]), [], name)
                    if name in cast and ours[name].is_floating_point():
                        self.assertEqual(oracle.compare_tensors(ref[name].float(), ours[name]), [], name)
        self.assertFalse(os.path.exists(os.path.join(DEEPSPEED, "zero1_ws3_bf16_bf16optimizer",
                                                     "reference_zero_to_fp32.bin")))


if __name__ == "__main__":
    unittest.main()
