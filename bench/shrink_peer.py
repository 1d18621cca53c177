#!/usr/bin/python3
"""The peer approach to shrinking a bloated Hugging Face sharded checkpoint, for bench/shrink_bench.py.

What one does with torch alone (the usual fix for the ZeRO/FSDP flat-buffer bloat): for each shard
named in pytorch_model.bin.index.json, torch.load (map_location="cpu", weights_only=True: these
files hold only tensors), `.clone()` every tensor (a clone of a view gets a storage of exactly its
own bytes), torch.save of the clones under the same file name, then fsync of the written file, as
zerofold's output is fsynced. One shard is held at a time. The index and every other file are
copied unchanged (the index's total_size already counts only the params).

usage: shrink_peer.py IN_FOLDER OUT_FOLDER
"""

import json
import os
import shutil
import sys

import torch

INDEX = "pytorch_model.bin.index.json"


def fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(src, dst):
    with open(os.path.join(src, INDEX)) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    os.makedirs(dst, exist_ok=True)
    for name in shards:
        state = torch.load(os.path.join(src, name), map_location="cpu", weights_only=True)
        cloned = {key: tensor.clone() for key, tensor in state.items()}
        del state  # drops the whole flat buffer before writing
        out = os.path.join(dst, name)
        torch.save(cloned, out)
        del cloned
        fsync_file(out)
    for name in sorted(os.listdir(src)):
        if name not in shards and os.path.isfile(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
            fsync_file(os.path.join(dst, name))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
