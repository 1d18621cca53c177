#!/usr/bin/python3
"""The peer of bench/diff_bench.py: what users do today to compare a torch file with its
safetensors conversion. torch 1.13 has no safetensors reader, so B is read with the oracle's
(tests/torch_oracle.py load_safetensors, the whole file in memory as safetensors.torch.load_file
holds it). Prints, per tensor that differs, the count, first index and largest |a - b|.

usage: bench/diff_peer.py A.pt B.safetensors
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import torch_oracle  # noqa: E402


def main():
    a = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
    b = torch_oracle.load_safetensors(sys.argv[2])
    out = {}
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y):
            continue
        differs = x != y
        out[name] = {"differing": int(differs.sum()), "first_index": [int(i) for i in differs.nonzero()[0]],
                     "max_abs_diff": (x.double() - y.double()).abs().max().item()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
