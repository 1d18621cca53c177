#!/usr/bin/python3
"""Writes a synthetic 8-rank PyTorch Distributed Checkpoint for the DCP merge benchmark, in
exactly the on-disk layout torch 1.13's FileSystemWriter(single_file_per_rank=True) gives an
FSDP SHARDED_STATE_DICT save of {"model": ..., "optimizer": ...} flattened by key.

    nice /usr/bin/python3 bench/dcp_gen.py OUT_DIR                 # ~1.75 GB of weights, ~5.3 GB of files
    nice /usr/bin/python3 bench/dcp_gen.py OUT_DIR --layers 1 --hidden 64 --ffn 100 --vocab 500 --check

Model: a Llama-shaped Hugging Face model under Accelerate's "model." prefix, so every key is
"model.model.layers.N...." (merge strips one "model."): embed_tokens [vocab, hidden], per
layer q/k/v/o [hidden, hidden], gate/up [ffn, hidden], down [hidden, ffn], two RMS norms
[hidden], final norm, lm_head [vocab, hidden]; all float32. Defaults (hidden 2048, ffn 5632,
vocab 32000, 6 layers) give 1.75 GB of weights. Beside them, FSDP-style Adam state:
"optimizer.state.<fqn>.exp_avg" and ".exp_avg_sq" (float32, sharded as the param),
".step" (0-dim float32, written once by rank 0), and non-tensor
"optimizer.param_groups.0.{lr,betas,eps,weight_decay,params}" values.

Layout (torch/distributed/_shard/checkpoint/ in torch 1.13; the fixtures' README states the
facts): every tensor sharded on dim 0 as ChunkShardingSpec does (split = ceil(rows / 8),
rank r holds rows [r*split, min((r+1)*split, rows)), none past the end); rank r's items go to
__r_0.distcp, non-tensor values first, then tensors in state-dict order, each one
`torch.save(chunk, file)` appended at the file's position; plain tensors and non-tensor
values only on rank 0; .metadata is pickle.dump of torch 1.13's own Metadata built from the
same plan (state_dict_metadata in state-dict order, chunks rank by rank, MetadataIndex with
offsets and chunk index, _StorageInfo(file, offset, length)). Written without spawning 8
processes: one process writes the 8 files in turn, one chunk in memory at a time.

Values: each chunk is uniform [-1, 1) from a generator seeded by (crc32(key), rank), so a
full tensor is recomputable; --check reads the folder back with torch 1.13's own
load_state_dict(no_dist=True) and compares every tensor and value with the recomputed ones,
and also has torch 1.13's own save_state_dict write the same state (8 spawned gloo ranks,
ShardedTensors holding the same chunks) and requires every file, .metadata included, to be
byte for byte the same (use it on a small size: it holds the whole checkpoint in memory).
"""

import argparse
import collections
import os
import pickle
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures", "dcp"))
import torch  # noqa: E402
import dcp113  # noqa: E402

WORLD = 8


def model_shapes(layers, hidden, ffn, vocab):
    shapes = collections.OrderedDict()
    shapes["model.embed_tokens.weight"] = [vocab, hidden]
    for i in range(layers):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[p + f"self_attn.{name}.weight"] = [hidden, hidden]
        shapes[p + "mlp.gate_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.up_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.down_proj.weight"] = [hidden, ffn]
        shapes[p + "input_layernorm.weight"] = [hidden]
        shapes[p + "post_attention_layernorm.weight"] = [hidden]
    shapes["model.norm.weight"] = [hidden]
    shapes["lm_head.weight"] = [vocab, hidden]
    return shapes


def state_plan(shapes):
    """[(key, kind, shape or value)] in state-dict order: kind "sharded", "plain" or "bytes"."""
    plan = [("model." + fqn, "sharded", shape) for fqn, shape in shapes.items()]
    for fqn, shape in shapes.items():
        plan.append((f"optimizer.state.{fqn}.exp_avg", "sharded", shape))
        plan.append((f"optimizer.state.{fqn}.exp_avg_sq", "sharded", shape))
        plan.append((f"optimizer.state.{fqn}.step", "plain", []))
    plan += [("optimizer.param_groups.0.lr", "bytes", 0.0003),
             ("optimizer.param_groups.0.betas", "bytes", (0.9, 0.95)),
             ("optimizer.param_groups.0.eps", "bytes", 1e-08),
             ("optimizer.param_groups.0.weight_decay", "bytes", 0.1),
             ("optimizer.param_groups.0.params", "bytes", list(shapes))]
    return plan


def row_ranges(rows):
    split = -(-rows // WORLD)
    return [(r, r * split, min((r + 1) * split, rows)) for r in range(WORLD) if r * split < rows]


def chunk_values(key, rank, shape):
    g = torch.Generator().manual_seed(zlib.crc32(key.encode()) * 16 + rank)
    t = torch.empty(shape, dtype=torch.float32)
    return t.uniform_(-1, 1, generator=g) if t.numel() else t


def plain_value(key):
    return torch.tensor(float(zlib.crc32(key.encode()) % 1000))


def full_tensor(key, kind, shape):
    if kind == "plain":
        return plain_value(key)
    parts = [chunk_values(key, r, [b - a] + shape[1:]) for r, a, b in row_ranges(shape[0])]
    return torch.cat(parts, 0)


def write(out, plan):
    dcp = dcp113.import_dcp()
    from torch.distributed._shard.checkpoint.filesystem import _StorageInfo
    from torch.distributed._shard.checkpoint.metadata import (
        BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex, TensorStorageMetadata)
    from torch.distributed._shard.sharded_tensor.metadata import TensorProperties
    del dcp
    os.makedirs(out, exist_ok=True)
    def props():  # one per key, as each ShardedTensor / tensor carries its own
        return TensorProperties(dtype=torch.float32, layout=torch.strided, requires_grad=False,
                                memory_format=torch.contiguous_format, pin_memory=False)
    sdm = {}
    for key, kind, shape in plan:  # rank 0 holds a chunk of every key, so its order is the plan's
        sdm[key] = BytesStorageMetadata() if kind == "bytes" else \
            TensorStorageMetadata(properties=props(), size=torch.Size(shape), chunks=[])
    storage = {}
    total = 0

    def gathered(key):
        # torch's storage entries come back to rank 0 through all_gather_object, so their fqn
        # is a separate str object from the metadata key: pickle writes it again, no memo ref
        return (key + "\0")[:-1]
    for rank in range(WORLD):
        name = f"__{rank}_0.distcp"
        with open(os.path.join(out, name), "wb") as f:
            items = [p for p in plan if p[1] == "bytes" and rank == 0] + \
                    [p for p in plan if p[1] == "sharded" or (p[1] == "plain" and rank == 0)]
            for key, kind, shape in items:
                start = f.tell()
                if kind == "bytes":
                    torch.save(shape, f)
                    storage[MetadataIndex(gathered(key))] = _StorageInfo(name, start, f.tell() - start)
                    continue
                if kind == "plain":
                    offsets, t = [], plain_value(key)
                else:
                    mine = [(a, b) for r, a, b in row_ranges(shape[0]) if r == rank]
                    if not mine:
                        continue
                    a, b = mine[0]
                    offsets, t = [a] + [0] * (len(shape) - 1), chunk_values(key, rank, [b - a] + shape[1:])
                torch.save(t, f)
                md = sdm[key]
                index = MetadataIndex(gathered(key), offsets, len(md.chunks))
                storage[index] = _StorageInfo(name, start, f.tell() - start)
                md.chunks.append(ChunkStorageMetadata(offsets=torch.Size(offsets), sizes=t.size()))
            total += f.tell()
    with open(os.path.join(out, ".metadata.tmp"), "wb") as f:
        pickle.dump(Metadata(sdm, None, storage), f)
    os.replace(os.path.join(out, ".metadata.tmp"), os.path.join(out, ".metadata"))
    return total


def check(out, plan):
    """torch 1.13's own reader against the recomputed values."""
    _, state = dcp113.torch_read(out)
    for key, kind, shape in plan:
        want = shape if kind == "bytes" else full_tensor(key, kind, shape)
        ok = state[key] == want if kind == "bytes" else dcp113.equal(state[key], want)
        if not ok:
            sys.exit(f"check: {key} differs")
    independent = dcp113.assemble(out)
    for key, kind, shape in plan:
        if kind != "bytes" and not dcp113.equal(independent[key], state[key]):
            sys.exit(f"check: {key}: the slice reader differs from torch's")
    print(f"check: torch 1.13's load_state_dict reads all {len(plan)} keys back exactly")
    compare_with_torch_writer(out, plan)


def torch_writer(rank, plan, folder, port):
    """One rank of torch 1.13's own save_state_dict of the same state."""
    import make_dcp_fixtures as fx
    import torch.distributed as dist
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    state = collections.OrderedDict()
    for key, kind, shape in plan:
        if kind == "sharded":
            state[key] = fx.sharded(full_tensor(key, kind, shape), ("dim", 0), rank, WORLD)
        else:
            state[key] = shape if kind == "bytes" else plain_value(key)
    fx.dcp.save_state_dict(state, fx.dcp.FileSystemWriter(folder, single_file_per_rank=True))
    dist.barrier()
    dist.destroy_process_group()


def compare_with_torch_writer(out, plan):
    import tempfile
    import torch.multiprocessing as mp
    import make_dcp_fixtures as fx
    with tempfile.TemporaryDirectory(prefix="dcp_gen_torch_") as ref:
        mp.spawn(torch_writer, args=(plan, ref, fx.free_port()), nprocs=WORLD, join=True)
        names = sorted(os.listdir(ref))
        if names != sorted(os.listdir(out)):
            sys.exit(f"check: torch wrote {names}, we wrote {sorted(os.listdir(out))}")
        for name in names:
            with open(os.path.join(ref, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"check: {name} differs from what torch 1.13's save_state_dict writes")
    print(f"check: byte for byte what torch 1.13's save_state_dict writes ({len(names)} files)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    shapes = model_shapes(a.layers, a.hidden, a.ffn, a.vocab)
    plan = state_plan(shapes)
    weights = sum(4 * torch.Size(s).numel() for s in shapes.values())
    start = time.monotonic()
    total = write(a.out, plan)
    print(f"wrote {a.out}: {WORLD} ranks, {len(shapes)} params, {weights / 1e9:.3f} GB of fp32 weights, "
          f"{total / 1e9:.3f} GB of .distcp files in {time.monotonic() - start:.1f} s")
    if a.check:
        check(a.out, plan)


if __name__ == "__main__":
    main()
