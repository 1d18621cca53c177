#!/usr/bin/python3
"""Benchmark of `zerofold merge` on a synthetic Megatron-Core torch_dist checkpoint (TP2 x PP2).

1. bench/megatron_gen.py writes the checkpoint in Megatron-Core 0.16's on-disk layout (about
   1.55 GB of bf16/fp32 weights: stacked layers chunked per (layer, tp), SwiGLU fc1 as two
   chunks per tp, _extra_state and rng_state bytes entries; 8 .distcp files).
2. One untimed `zerofold merge --verify --to safetensors` checks the output against the chunks;
   its output is kept as the floor's input.
3. Alternating runs, ROUNDS of each, in rotating order:
     zerofold  zerofold merge CKPT OUT.safetensors (the weights; includes its fsync)
     floor     cat of the output bytes to a new file, then sync
     peer      bench/megatron_peer.py: every tensor allocated at full size, torch 1.13's DCP
               load_state_dict reading every chunk (bytes entries too), one safetensors save
               (what a Megatron load for conversion does)
   Outputs are removed and `sync` run before each run, and the page cache dropped
   (`echo 3 > /proc/sys/vm/drop_caches`, where permitted; else the inputs stay cached, and the
   results say which). Wall time by the monotonic clock; peak RSS from the child's rusage.
4. The peer's output is compared with zerofold's, tensor by tensor (sha256 of each tensor's bytes).
5. Medians and ratios are printed and appended to bench/RESULTS.md with the machine and date.
The generated files are removed at the end unless --keep; --ckpt reuses a generated folder.

usage: bench/megatron_bench.py [--build build] [--work DIR] [--ckpt DIR] [--rounds 3] [--warm] [--keep]
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
NEEDED_FREE = 8 * 10**9  # 1.55 GB of input, 4 outputs of 1.55 GB, margin

sys.path.insert(0, HERE)
from dcp_bench import check_same_tensors, safetensors_digests  # noqa: E402
from merge_bench import machine, publish, summary_table  # noqa: E402
from parts_bench import alternate, cache_text  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "megatron_bench_data"))
    ap.add_argument("--ckpt", help="a folder bench/megatron_gen.py wrote (not removed)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="keep the page cache (no drop between runs)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")

    os.makedirs(args.work, exist_ok=True)
    free = shutil.disk_usage(args.work).free
    if free < NEEDED_FREE and not args.ckpt:
        sys.exit(f"need {NEEDED_FREE / 1e9:.0f} GB free in {args.work}, have {free / 1e9:.1f} GB")
    ckpt = args.ckpt or os.path.join(args.work, "ckpt")
    out = os.path.join(args.work, "out")
    try:
        if not args.ckpt:
            shutil.rmtree(ckpt, ignore_errors=True)
            start = time.monotonic()
            subprocess.run(["nice", PY, os.path.join(HERE, "megatron_gen.py"), ckpt], check=True)
            print(f"generated in {time.monotonic() - start:.1f} s")
        files_bytes = sum(os.path.getsize(os.path.join(ckpt, f)) for f in os.listdir(ckpt))
        inspect = json.loads(subprocess.run([zerofold, "inspect", "--json", ckpt], check=True, capture_output=True,
                                            text=True).stdout)["files"][0]

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
            "peer": [PY, os.path.join(HERE, "megatron_peer.py"), ckpt, peer_file],
        }
        outputs = {"zerofold": zf_file, "floor": floor_file, "peer": peer_file}
        results, loads, dropped = alternate(commands, outputs, args.rounds, args.warm)
        ours = safetensors_digests(zf_file)
        check_same_tensors(ours, safetensors_digests(peer_file))

        cache = cache_text(dropped, args.warm)
        lines = [
            f"## merge: synthetic Megatron-Core torch_dist checkpoint, TP2 x PP2 "
            f"({datetime.date.today().isoformat()})",
            "",
            f"Machine: {machine()}; shared with other jobs (load average {min(loads):.1f} to {max(loads):.1f} "
            f"during the runs), so absolute times are noisy.",
            f"Checkpoint (bench/megatron_gen.py: Megatron-Core 0.16's layout, 4 ranks, stacked layers chunked "
            f"per (layer, tp)): {inspect['tensor_bytes'] / 1e9:.2f} GB of weights in {len(inspect['tensors'])} keys "
            f"and {sum(t['chunks'] for t in inspect['tensors'])} chunks, {len(inspect['non_tensor'])} bytes entries, "
            f"{files_bytes / 1e9:.2f} GB of files. Output: the weights as one safetensors file of "
            f"{out_bytes / 1e9:.2f} GB ({summary['outputs'][0]['tensors']} tensors). "
            f"Medians of {args.rounds} alternating runs; {cache}.",
            "",
        ] + summary_table(results, (("zerofold", "zerofold merge (incl. fsync)"),
                                    ("floor", "floor: cat output + sync"),
                                    ("peer", "peer: full-size tensors + DCP load_state_dict + save")),
                          "<= 1.2x", "<= 64 MiB")
        publish(lines, args.no_results)
    finally:
        if not args.keep:
            if not args.ckpt:
                shutil.rmtree(ckpt, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
