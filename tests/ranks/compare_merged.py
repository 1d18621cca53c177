"""Compares a zerofold merge output of a rank folder with the fixture's ground truth.

usage: compare_merged.py OUT EXPECTED.pt [--cast DTYPE]
OUT: a torch file, a safetensors file, or a folder of either (shards and index).
Every tensor of EXPECTED must be in OUT with its dtype (or DTYPE for floating ones),
shape and bytes (element for element, as torch loads both); OUT holds no other name.
Prints "ok N tensors" or the differences, exit 1. Loads only through tests/torch_oracle.py.
"""
import glob
import os
import sys

sys.path.insert(0, os.environ.get("ORACLE_DIR", os.path.join(os.path.dirname(__file__), "..")))
import torch  # noqa: E402
import torch_oracle  # noqa: E402


def load_any(path):
    if os.path.isdir(path):
        out = {}
        files = sorted(glob.glob(os.path.join(path, "*.safetensors"))) + sorted(glob.glob(os.path.join(path, "*.bin")))
        for f in files:
            out.update(load_any(f))
        return out
    if path.endswith(".safetensors"):
        return dict(torch_oracle.load_safetensors(path))
    return dict(torch_oracle.named_tensors(torch_oracle.load(path)))


def main(argv):
    out, expected = argv[0], argv[1]
    cast = None
    if len(argv) > 3 and argv[2] == "--cast":
        cast = getattr(torch, argv[3])
    got = load_any(out)
    want = dict(torch_oracle.named_tensors(torch_oracle.load(expected)))
    problems = []
    for name in sorted(set(want) | set(got)):
        if name not in got:
            problems.append(f"missing {name}")
            continue
        if name not in want:
            problems.append(f"extra {name}")
            continue
        w, g = want[name], got[name]
        if cast is not None and w.is_floating_point():
            w = w.to(cast)
        if w.dtype != g.dtype or tuple(w.shape) != tuple(g.shape):
            problems.append(f"{name}: {g.dtype} {tuple(g.shape)}, want {w.dtype} {tuple(w.shape)}")
        elif torch_oracle.tensor_bytes(w) != torch_oracle.tensor_bytes(g):
            problems.append(f"{name}: values differ")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok {len(want)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
