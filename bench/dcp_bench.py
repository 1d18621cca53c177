#!/usr/bin/python3
"""Benchmark of `zerofold merge` on a synthetic 8-rank PyTorch Distributed Checkpoint.

1. bench/dcp_gen.py writes the checkpoint as torch 1.13's FileSystemWriter lays it out (about
   1.75 GB of fp32 model weights, FSDP-style dim-0 chunks over 8 ranks, Adam state beside
   them: about 5.3 GB of .distcp files).
2. One untimed `zerofold merge --verify --to safetensors` checks the output against the
   chunks; its output is kept as the floor's input.
3. Alternating runs, ROUNDS of each, in rotating order:
     zerofold  zerofold merge --to safetensors CKPT OUT (the model weights; includes its fsync)
     floor     cat of the output bytes to a new file, then sync
     peer      bench/dcp_peer.py --to safetensors: every tensor allocated at full size,
               optimizer included, torch 1.13's load_state_dict reading every chunk, one save
               (what dcp_to_torch_save and accelerate merge-weights do)
   Outputs are removed and `sync` run before each run. Wall time by the monotonic clock;
   peak RSS from the child's rusage (wait4).
4. The peer's output is compared with zerofold's, tensor by tensor (names, dtypes, shapes,
   and the xxh3-free sha256 of each tensor's bytes, read in 16 MiB pieces).
5. Medians and ratios are printed and appended to bench/RESULTS.md with the machine and date.
The generated files are removed at the end unless --keep; --ckpt reuses a generated folder.

usage: bench/dcp_bench.py [--build build] [--work DIR] [--ckpt DIR] [--rounds 3] [--keep]
"""

import argparse
import datetime
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
NEEDED_FREE = 13 * 10**9  # 5.3 GB of input, 3 outputs of 1.75 GB, margin

sys.path.insert(0, HERE)
from merge_bench import machine, run_measured, summary_table, sync  # noqa: E402


def safetensors_digests(path):
    """{name: (dtype, shape, sha256 of the bytes)} of a safetensors file, read in pieces."""
    out = {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        for name, t in header.items():
            if name == "__metadata__":
                continue
            begin, end = t["data_offsets"]
            f.seek(8 + n + begin)
            h = hashlib.sha256()
            left = end - begin
            while left:
                piece = f.read(min(left, 16 << 20))
                h.update(piece)
                left -= len(piece)
            out[name] = (t["dtype"], t["shape"], h.hexdigest())
    return out


def folder_digests(folder):
    """safetensors_digests of every *.safetensors file of a folder, merged."""
    digests = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".safetensors"):
            digests.update(safetensors_digests(os.path.join(folder, name)))
    return digests


def check_same_tensors(ours, theirs):
    """Exits naming the tensors where two digest maps differ; else prints how many agree."""
    if ours != theirs:
        diff = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        sys.exit(f"peer and zerofold outputs differ: {diff[:5]} ({len(diff)} names)")
    print(f"peer output equals zerofold's: {len(ours)} tensors")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "dcp_bench_data"))
    ap.add_argument("--ckpt", help="a folder bench/dcp_gen.py wrote (not removed)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")

    os.makedirs(args.work, exist_ok=True)
    free = shutil.disk_usage(args.work).free
    print(subprocess.run(["df", "-h", args.work], capture_output=True, text=True).stdout.strip())
    if free < NEEDED_FREE and not args.ckpt:
        sys.exit(f"need {NEEDED_FREE / 1e9:.0f} GB free in {args.work}, have {free / 1e9:.1f} GB")
    ckpt = args.ckpt or os.path.join(args.work, "ckpt")
    out = os.path.join(args.work, "out")
    try:
        if not args.ckpt:
            shutil.rmtree(ckpt, ignore_errors=True)
            start = time.monotonic()
            subprocess.run([PY, os.path.join(HERE, "dcp_gen.py"), ckpt], check=True)
            sync()
            print(f"generated in {time.monotonic() - start:.1f} s")
        files_bytes = sum(os.path.getsize(os.path.join(ckpt, f)) for f in os.listdir(ckpt))
        inspect = json.loads(subprocess.run([zerofold, "inspect", "--json", ckpt], check=True, capture_output=True,
                                            text=True).stdout)["files"][0]
        groups = {g["group"]: g for g in inspect["groups"]}

        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        ref = os.path.join(out, "ref.safetensors")
        verify = subprocess.run([zerofold, "merge", "--verify", "--json", ckpt, ref], check=True,
                                capture_output=True, text=True)
        summary = json.loads(verify.stdout)
        out_bytes = summary["outputs"][0]["bytes"]
        print(f"verified {summary['verified']['tensors']} tensors, {summary['verified']['bytes']} bytes; "
              f"output {out_bytes} bytes")

        zf_file = os.path.join(out, "zf.safetensors")
        floor_file = os.path.join(out, "floor.safetensors")
        peer_file = os.path.join(out, "peer.safetensors")
        commands = {
            "zerofold": [zerofold, "merge", "--quiet", "--no-progress", ckpt, zf_file],
            "floor": ["sh", "-c", f"cat '{ref}' > '{floor_file}' && sync"],
            "peer": [PY, os.path.join(HERE, "dcp_peer.py"), "--to", "safetensors", ckpt, peer_file],
        }
        outputs = {"zerofold": zf_file, "floor": floor_file, "peer": peer_file}
        results = {name: [] for name in commands}
        order = list(commands)
        for round_ in range(args.rounds):
            for name in order[round_ % 3:] + order[:round_ % 3]:
                if os.path.exists(outputs[name]):
                    os.remove(outputs[name])
                sync()
                wall, rss = run_measured(commands[name])
                results[name].append((wall, rss))
                print(f"round {round_ + 1} {name:9s} {wall:8.2f} s  peak RSS {rss / 2**20:8.1f} MiB", flush=True)
        ours, theirs = safetensors_digests(zf_file), safetensors_digests(peer_file)
        if ours != theirs:
            diff = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
            sys.exit(f"peer and zerofold outputs differ: {diff[:5]}")
        print(f"peer output equals zerofold's: {len(ours)} tensors")

        lines = [
            f"## merge: synthetic PyTorch Distributed Checkpoint, 8 ranks ({datetime.date.today().isoformat()})",
            "",
            f"Machine: {machine()}.",
            f"Checkpoint (bench/dcp_gen.py: torch 1.13's FileSystemWriter layout, dim-0 chunks over 8 ranks): "
            f"{groups['model']['nbytes'] / 1e9:.2f} GB of fp32 model weights ({groups['model']['tensors']} tensors), "
            f"{groups.get('optimizer', {}).get('nbytes', 0) / 1e9:.2f} GB of Adam state beside them, "
            f"{files_bytes / 1e9:.2f} GB of files. Output: the model weights as one safetensors file of "
            f"{out_bytes / 1e9:.2f} GB ({summary['outputs'][0]['tensors']} tensors). "
            f"Medians of {args.rounds} alternating runs; inputs in the page cache for all three.",
            "",
        ] + summary_table(results, (("zerofold", "zerofold merge --to safetensors (incl. fsync)"),
                                    ("floor", "floor: cat output + sync"),
                                    ("peer", "peer: full-size tensors + load_state_dict + save")),
                          "<= 1.5x", "<= 64 MiB")
        text = "\n".join(lines)
        print(text)
        if not args.no_results:
            with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
                f.write("\n" + text)
    finally:
        if not args.keep:
            if not args.ckpt:
                shutil.rmtree(ckpt, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
