#!/usr/bin/python3
"""Writes a synthetic Megatron-Core torch_dist checkpoint for the Megatron merge benchmark, in the
on-disk layout Megatron-Core 0.16's dist_checkpointing.save gives a GPTModel trained with TP2 x PP2
(fixtures/megatron/README.md, "Format facts"), without Megatron and without torch >= 2.

    nice /usr/bin/python3 bench/megatron_gen.py OUT_DIR            # ~1.55 GB of bf16 weights
    nice /usr/bin/python3 bench/megatron_gen.py OUT_DIR --layers 2 --hidden 64 --ffn 96 --vocab 256

Model (Llama-like GPT, SwiGLU, GQA, untied output layer): embedding.word_embeddings.weight
[vocab, hidden]; stacked decoder.layers.X [L, ...]: self_attention.linear_qkv.weight
[L, hidden + 2 * kv, hidden], self_attention.linear_proj.weight [L, hidden, hidden],
mlp.linear_fc1.weight [L, 2 * ffn, hidden] ([gate; up]), mlp.linear_fc2.weight [L, hidden, ffn]
(bf16), self_attention.linear_qkv.layer_norm_weight and mlp.linear_fc1.layer_norm_weight [L, hidden]
(fp32); decoder.final_layernorm.weight [hidden] (fp32), output_layer.weight [vocab, hidden] (bf16).
Defaults (hidden 2048, ffn 5632, 16 heads, 4 query groups, 12 layers, vocab 32000) give 1.55 GB.

Sharding as Megatron stores it: 4 ranks, rank = pp * 2 + tp; layers [pp * L/2, (pp+1) * L/2) on
stage pp, one chunk per (layer, tp) of shape [1, ...] at the layer's offset on axis 0 (prepended
axis); column-parallel weights (qkv, fc1, embedding, output layer) split on their first model dim,
SwiGLU fc1 as two chunks per tp (gate rows at tp * ffn/2, up rows at ffn + tp * ffn/2), row-
parallel ones (proj, fc2) on their last; norms only from tp 0 (main replicas). Beside them the
bytes entries Megatron writes: `_extra_state/shard_<layer>.<tp>_<L>.2` per (layer, tp) for qkv and
fc1 (a torch.save of [None]), `rng_state/shard_<pp>.<tp>_2.2` per rank. Each rank's items go to
`__<rank>_0.distcp` and `__<rank>_1.distcp` (balanced by size, as FileSystemWriterAsync's two
threads do), each item a torch.save archive of its chunk appended at the file's position.
`.metadata`: core 0.16's form (torch Metadata root: state_dict_metadata, planner_data None,
storage_data, storage_meta, all_local_plans of SavePlans with their WriteItems), pickled with
the globals and layout of the fixtures' own (fixtures/megatron/mcore_stubs.py, templates taken
from fixtures/megatron/sharded_ws4); metadata.json; common.pt with iteration, checkpoint_version
and content_metadata. Values: normal from a generator seeded per chunk.
"""

import argparse
import copy
import io
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "megatron")
sys.path.insert(0, FIXTURES)
import mcore_stubs  # noqa: E402

TP, PP = 2, 2
META = "torch.distributed.checkpoint.metadata"
PLANNER = "torch.distributed.checkpoint.planner"
FS = "torch.distributed.checkpoint.filesystem"


def templates():
    """Objects of the fixtures' own .metadata to copy: TensorProperties per dtype are built the
    same way, so only their first field changes."""
    md = mcore_stubs.load(os.path.join(FIXTURES, "sharded_ws4", "ckpt", ".metadata"))
    sdm = md.state["state_dict_metadata"]
    tensor = next(v for v in sdm.values() if v.zf_name == "TensorStorageMetadata")
    return md, tensor.state["properties"]


def properties(template, dtype):
    p = copy.deepcopy(template)
    p.state = (dtype,) + tuple(p.state[1:])
    return p


def size(values):
    return torch.Size(list(values))


class Writer:
    """Collects each rank's items and the .metadata entries while chunks are written."""

    def __init__(self, out, prop_template):
        self.out = out
        self.prop_template = prop_template
        self.files = {}          # name -> open file
        self.load = {}           # name -> bytes written
        self.sdm = {}            # key -> TensorStorageMetadata / BytesStorageMetadata
        self.storage = {}        # MetadataIndex -> _StorageInfo
        self.plans = [[] for _ in range(TP * PP)]

    def _file(self, rank, nbytes):
        names = [f"__{rank}_{n}.distcp" for n in range(2)]
        name = min(names, key=lambda n: self.load.get(n, 0))
        if name not in self.files:
            self.files[name] = open(os.path.join(self.out, name), "wb")
        self.load[name] = self.load.get(name, 0) + nbytes
        return name

    def _append(self, rank, payload):
        name = self._file(rank, len(payload))
        f = self.files[name]
        offset = f.tell()
        f.write(payload)
        return mcore_stubs.new(FS, "_StorageInfo", relative_path=name, offset=offset, length=len(payload))

    def tensor(self, rank, key, full_shape, dtype, offsets, chunk):
        if key not in self.sdm:
            self.sdm[key] = mcore_stubs.new(META, "TensorStorageMetadata",
                                            properties=properties(self.prop_template, dtype),
                                            size=size(full_shape), chunks=[])
        meta = self.sdm[key]
        box = mcore_stubs.new(META, "ChunkStorageMetadata", offsets=size(offsets), sizes=size(chunk.shape))
        meta.state["chunks"].append(box)
        buf = io.BytesIO()
        torch.save(chunk.contiguous(), buf)
        info = self._append(rank, buf.getvalue())
        index = mcore_stubs.new(META, "MetadataIndex", fqn=key, index=None, offset=size(offsets))
        self.storage[index] = info
        plan_index = mcore_stubs.new(META, "MetadataIndex", fqn=key, index=None, offset=size(offsets))
        self.plans[rank].append(mcore_stubs.new(
            PLANNER, "WriteItem", index=plan_index, type=mcore_stubs.enum(PLANNER, "WriteItemType", 2),
            tensor_data=mcore_stubs.new(PLANNER, "TensorWriteData", chunk=copy.deepcopy(box),
                                        properties=meta.state["properties"], size=size(full_shape))))

    def bytes_entry(self, rank, key, value):
        self.sdm[key] = mcore_stubs.new(META, "BytesStorageMetadata")
        buf = io.BytesIO()
        torch.save(value, buf)
        self.storage[mcore_stubs.new(META, "MetadataIndex", fqn=key, index=None)] = self._append(rank, buf.getvalue())
        self.plans[rank].append(mcore_stubs.new(
            PLANNER, "WriteItem", index=mcore_stubs.new(META, "MetadataIndex", fqn=key, index=None),
            type=mcore_stubs.enum(PLANNER, "WriteItemType", 3), tensor_data=None))

    def finish(self):
        for f in self.files.values():
            f.close()


def chunk_values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args()
    L, H, F, V = a.layers, a.hidden, a.ffn, a.vocab
    assert L % PP == 0 and F % TP == 0 and V % TP == 0 and H % TP == 0
    kv = H // a.heads * a.groups
    os.makedirs(a.out, exist_ok=True)
    template_md, prop_template = templates()
    w = Writer(a.out, prop_template)
    seed = [0]

    def put(rank, key, full, dtype, offsets, shape):
        seed[0] += 1
        w.tensor(rank, key, full, dtype, offsets, chunk_values(shape, dtype, seed[0]))

    bf16, fp32 = torch.bfloat16, torch.float32
    per_stage = L // PP
    for tp in range(TP):  # stage 0: the embedding
        put(tp, "embedding.word_embeddings.weight", [V, H], bf16, [tp * V // TP, 0], [1 * V // TP, H])
    stacked = [
        ("self_attention.linear_qkv.layer_norm_weight", [H], fp32, None),
        ("self_attention.linear_qkv.weight", [H + 2 * kv, H], bf16, 0),
        ("self_attention.linear_proj.weight", [H, H], bf16, 1),
        ("mlp.linear_fc1.layer_norm_weight", [H], fp32, None),
        ("mlp.linear_fc1.weight", [2 * F, H], bf16, "swiglu"),
        ("mlp.linear_fc2.weight", [H, F], bf16, 1),
    ]
    for name, shape, dtype, split in stacked:
        key = "decoder.layers." + name
        full = [L] + shape
        for layer in range(L):
            pp = layer // per_stage
            for tp in range(TP):
                rank = pp * TP + tp
                if split is None:
                    if tp == 0:
                        put(rank, key, full, dtype, [layer, 0], [1] + shape)
                elif split == "swiglu":
                    rows = F // TP
                    put(rank, key, full, dtype, [layer, tp * rows, 0], [1, rows, H])
                    put(rank, key, full, dtype, [layer, F + tp * rows, 0], [1, rows, H])
                else:
                    part = list(shape)
                    part[split] //= TP
                    offsets = [layer, 0, 0]
                    offsets[1 + split] = tp * part[split]
                    put(rank, key, full, dtype, offsets, [1] + part)
    for layer in range(L):
        pp = layer // per_stage
        for tp in range(TP):
            for module in ("self_attention.linear_qkv", "mlp.linear_fc1"):
                w.bytes_entry(pp * TP + tp, f"decoder.layers.{module}._extra_state/shard_{layer}.{tp}_{L}.{TP}", [None])
    last = (PP - 1) * TP
    put(last, "decoder.final_layernorm.weight", [H], fp32, [0], [H])
    for tp in range(TP):
        put(last + tp, "output_layer.weight", [V, H], bf16, [tp * V // TP, 0], [V // TP, H])
    for pp in range(PP):
        for tp in range(TP):
            w.bytes_entry(pp * TP + tp, f"rng_state/shard_{pp}.{tp}_{PP}.{TP}",
                          [{"random_rng_state": (3, tuple(range(8)), None), "torch_rng_state": torch.zeros(16, dtype=torch.uint8)}])
    w.finish()

    md = copy.copy(template_md)
    md.state = {
        "state_dict_metadata": w.sdm,
        "planner_data": None,
        "storage_data": w.storage,
        "storage_meta": mcore_stubs.new(META, "StorageMeta", checkpoint_id="ckpt", save_id="bench", load_id=None),
        "all_local_plans": [mcore_stubs.new(PLANNER, "SavePlan", items=items, storage_data=None, planner_data={})
                            for items in w.plans],
    }
    mcore_stubs.dump(md, os.path.join(a.out, ".metadata"))
    with open(os.path.join(a.out, "metadata.json"), "w") as f:
        json.dump({"sharded_backend": "torch_dist", "sharded_backend_version": 1, "common_backend": "torch",
                   "common_backend_version": 1}, f)
    torch.save({"iteration": 1000, "checkpoint_version": 3.0,
                "content_metadata": {"singleton_local_shards": False, "chained_optim_avoid_prefix": True}},
               os.path.join(a.out, "common.pt"))


if __name__ == "__main__":
    main()
