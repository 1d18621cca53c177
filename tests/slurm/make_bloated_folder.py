"""Writes a bloated Hugging Face sharded torch folder with torch.save, as a
model saved in shards while its params are views into one flat buffer
(DeepSpeed ZeRO-1/2, FSDP) comes out: every shard file carries the whole
buffer.

usage: make_bloated_folder.py OUT SHARDS PARAMS_PER_SHARD PARAM_ELEMENTS

OUT gets pytorch_model-0000K-of-0000N.bin for K in 1..SHARDS, each holding
PARAMS_PER_SHARD fp32 params of PARAM_ELEMENTS elements (views into one
flat buffer of SHARDS * PARAMS_PER_SHARD * PARAM_ELEMENTS elements),
pytorch_model.bin.index.json and config.json. Values are deterministic.
"""
import json
import os
import sys

import torch


def main():
    out, shards, per_shard, elements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(out, exist_ok=True)
    total = shards * per_shard * elements
    flat = torch.arange(total, dtype=torch.float32).mul_(1.0 / 1024).sin_()
    weight_map = {}
    for s in range(shards):
        name = "pytorch_model-%05d-of-%05d.bin" % (s + 1, shards)
        state = {}
        for p in range(per_shard):
            i = s * per_shard + p
            key = "model.layers.%d.weight" % i
            state[key] = flat[i * elements:(i + 1) * elements].view(elements // 64, 64)
            weight_map[key] = name
        torch.save(state, os.path.join(out, name))
    index = {"metadata": {"total_size": total * 4}, "weight_map": weight_map}
    with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"model_type": "zerofold-slurm-test"}, f)


if __name__ == "__main__":
    main()
