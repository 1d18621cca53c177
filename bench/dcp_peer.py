#!/usr/bin/python3
"""The peer approach to merging a PyTorch Distributed Checkpoint, for the DCP merge benchmark:
what torch's dcp_to_torch_save (torch >= 2.3, torch/distributed/checkpoint/format_utils.py)
and `accelerate merge-weights` do, on Debian's torch 1.13.

    /usr/bin/python3 bench/dcp_peer.py DCP_DIR OUT [--to safetensors] [--everything]

1. Read .metadata (torch's own unpickler and classes).
2. Allocate every tensor of the checkpoint at its full size, optimizer state included, as
   _EmptyStateDictLoadPlanner does (torch.empty(size, dtype) per key of state_dict_metadata).
3. torch 1.13's own load_state_dict(no_dist=True) with FileSystemReader: every chunk is
   torch.load'ed from its file slice and copied into place.
4. Save once: by default the model weights with one top-level "model." stripped (what
   `accelerate merge-weights` writes; the output zerofold merge writes by default), as
   torch.save of an OrderedDict, or with --to safetensors as a safetensors file written from
   the tensors in memory (header, then each tensor's bytes; safetensors' own writer is not
   packaged in Debian). --everything saves every tensor, optimizer included, as
   dcp_to_torch_save does.
Prints one JSON line: {"wall_s", "peak_rss_bytes", "tensors", "bytes"} (wall time of the whole
run from process start, peak RSS from getrusage), and the same for people on stderr.

DCP_DIR may also be an Accelerate training output folder holding pytorch_model_fsdp_0/.
"""

import argparse
import collections
import json
import os
import resource
import struct
import sys
import time

START = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures", "dcp"))
import torch  # noqa: E402
import dcp113  # noqa: E402

NON_MODEL = ("optimizer", "lr_scheduler", "dataloader", "train_state")
ST_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
            torch.bool: "BOOL"}


def model_weights(md, state):
    keys = [k for k, v in md.state_dict_metadata.items() if type(v).__name__ != "BytesStorageMetadata"]
    model = [k for k in keys if k.split(".")[0] not in NON_MODEL]
    strip = bool(model) and all(k.startswith("model.") for k in model)
    return collections.OrderedDict((k[len("model."):] if strip else k, state[k]) for k in model)


def save_safetensors(tensors, path):
    header, pos = {"__metadata__": {"format": "pt"}}, 0
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [pos, pos + n]}
        pos += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            if t.numel():
                f.write(t.contiguous().reshape(-1).view(torch.uint8).numpy())


def main(argv):
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[4].strip())
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--to", choices=["torch", "safetensors"], default="torch")
    ap.add_argument("--everything", action="store_true")
    a = ap.parse_args(argv)
    src, out = a.src, a.out
    folder = src if os.path.isfile(os.path.join(src, ".metadata")) else os.path.join(src, "pytorch_model_fsdp_0")
    md, state = dcp113.torch_read(folder, alloc=torch.empty)  # steps 1-3
    if a.everything:
        tensors = collections.OrderedDict((k, v) for k, v in state.items() if isinstance(v, torch.Tensor))
    else:
        tensors = model_weights(md, state)
    if a.to == "safetensors":
        save_safetensors(tensors, out)
    else:
        torch.save(tensors, out)
    with open(out, "rb+") as f:
        os.fsync(f.fileno())
    result = {"wall_s": round(time.monotonic() - START, 3),
              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "tensors": len(tensors), "bytes": os.path.getsize(out)}
    print(json.dumps(result))
    print(f"dcp_peer: {result['tensors']} tensors, {result['bytes'] / 1e9:.3f} GB in {result['wall_s']:.1f} s, "
          f"peak RSS {result['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
