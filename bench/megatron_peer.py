#!/usr/bin/python3
"""The peer approach to merging a Megatron-Core torch_dist checkpoint, for the Megatron merge
benchmark: what Megatron's own load does for a conversion script (dist_checkpointing.load into a
state dict of full-size tensors, i.e. torch DCP's load_state_dict reading every chunk, the
approach of slime's and verl's converters and of torch's dcp_to_torch_save), then one save, on
Debian's torch 1.13.

    /usr/bin/python3 bench/megatron_peer.py TORCH_DIST_DIR OUT.safetensors

1. Read .metadata with torch 1.13's own DCP classes standing in for torch 2.x's (the same
   dataclasses under torch.distributed._shard.*); Megatron's additions (all_local_plans of
   SavePlans) are unpickled as inert stubs and ignored.
2. Allocate every tensor key at its full size (torch.empty), bytes entries (ShardedObjects,
   _extra_state, rng state) loaded too, as a full load does.
3. torch 1.13's load_state_dict(no_dist=True) with FileSystemReader: every chunk torch.load'ed
   from its file slice and copied into place.
4. Save the tensors not under `optimizer.` as one safetensors file (dcp_peer.save_safetensors),
   fsync'ed.
Prints one JSON line {"wall_s", "peak_rss_bytes", "tensors", "bytes"}.
"""

import json
import os
import pickle
import resource
import sys
import time

START = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures", "dcp"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures", "megatron"))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import dcp113  # noqa: E402
import mcore_stubs  # noqa: E402
from dcp_peer import save_safetensors  # noqa: E402

dcp = dcp113.import_dcp()
import torch.distributed._shard.checkpoint.filesystem as fs113  # noqa: E402
import torch.distributed._shard.checkpoint.metadata as meta113  # noqa: E402
import torch.distributed._shard.sharded_tensor.metadata as st113  # noqa: E402

ALIASES = {
    ("torch.distributed.checkpoint.metadata", "TensorProperties"): st113.TensorProperties,
    ("torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING"): st113.MEM_FORMAT_ENCODING,
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"): fs113._StorageInfo,
}


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in ALIASES:
            return ALIASES[(module, name)]
        if module == "torch.distributed.checkpoint.metadata" and hasattr(meta113, name):
            return getattr(meta113, name)
        if module.startswith(("torch.distributed.checkpoint", "megatron.")):  # StorageMeta, plans
            return mcore_stubs.stub_class(module, name)
        return super().find_class(module, name)


def load_weights(src):
    """Steps 1-3: every tensor key not under `optimizer.`, at full size."""
    with open(os.path.join(src, ".metadata"), "rb") as f:
        md = Unpickler(f).load()
    dcp.FileSystemReader.read_metadata = lambda self: md
    _, state = dcp113.torch_read(src, md=md, alloc=torch.empty)
    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor) and not k.startswith("optimizer.")}


def main(argv):
    src, out = argv
    tensors = load_weights(src)
    save_safetensors(tensors, out)
    with open(out, "rb+") as f:
        os.fsync(f.fileno())
    result = {"wall_s": round(time.monotonic() - START, 3),
              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "tensors": len(tensors), "bytes": os.path.getsize(out)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
