#!/usr/bin/python3
"""The peer approach to dequantizing a DeepSeek FP8 block-quantized Hugging Face folder on a CPU
node, for bench/dequant_bench.py: the flow of DeepSeek-V3's inference/fp8_cast_bf16.py (each
shard loaded whole with safetensors' load_file, each F8_E4M3 weight multiplied by its
`weight_scale_inv` block by block, the scale found in whichever shard holds it through the index
with a cache of loaded shards, the shard saved with save_file, a new index without the scales),
with its Triton weight_dequant kernel replaced by the same arithmetic in plain torch on the CPU
(fp32 product, rounded to bf16), as maxtext's CPU port of that script does. Runs on torch >= 2.1
(float8_e4m3fn) with the safetensors package: in the Debian 13 chroot of
../shared/fixtures/torch2/README.md (torch 2.6, python3-safetensors).

    python3 bench/dequant_peer.py IN_DIR OUT_DIR

Prints one JSON line {"wall_s", "peak_rss_bytes", "tensors", "bytes"}.
"""

import json
import os
import resource
import shutil
import sys
import time

START = time.monotonic()
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

BLOCK = 128


def weight_dequant(w, s):
    n, k = w.shape
    scale = s.repeat_interleave(BLOCK, 0)[:n].repeat_interleave(BLOCK, 1)[:, :k]
    return (w.to(torch.float32) * scale).to(torch.bfloat16)


def main(argv):
    src, out = argv
    with open(os.path.join(src, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    os.makedirs(out, exist_ok=True)
    loaded = {}
    tensors = 0
    new_map = {}
    for shard in sorted(set(weight_map.values())):
        state = load_file(os.path.join(src, shard))
        loaded[shard] = state
        result = {}
        for name, w in state.items():
            if name.endswith("_scale_inv"):
                continue
            if w.element_size() == 1:
                scale_name = name + "_scale_inv"
                home = weight_map[scale_name]
                if home not in loaded:
                    loaded[home] = load_file(os.path.join(src, home))
                result[name] = weight_dequant(w, loaded[home][scale_name])
            else:
                result[name] = w
            new_map[name] = shard
        save_file(result, os.path.join(out, shard), metadata={"format": "pt"})
        tensors += len(result)
        while len(loaded) > 2:  # the script keeps the two most recent shards
            loaded.pop(next(iter(loaded)))
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": new_map}, f, indent=2)
    config = json.load(open(os.path.join(src, "config.json")))
    config.pop("quantization_config", None)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in os.listdir(src):
        if not name.endswith(".safetensors") and name not in ("config.json", "model.safetensors.index.json"):
            shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
    total = 0
    for shard in set(new_map.values()):
        with open(os.path.join(out, shard), "rb+") as f:
            os.fsync(f.fileno())
        total += os.path.getsize(os.path.join(out, shard))
    print(json.dumps({"wall_s": round(time.monotonic() - START, 3),
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "tensors": tensors, "bytes": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
