#!/usr/bin/python3
"""Benchmark of `zerofold convert --dequantize bf16`: a synthetic DeepSeek FP8 block-quantized
Hugging Face folder (bench/dequant_gen.py: 16 layers, about 0.73 GB of F8_E4M3 weights with
128 x 128 block scales, 0.26 GB of bf16 embeddings) to bf16 masters.

1. bench/dequant_gen.py writes the folder (2 shards, one weight's scale in the other shard).
2. One untimed `zerofold convert --dequantize bf16 --verify` run; its output is the floor's input.
3. Alternating runs, ROUNDS of each, in rotating order:
     zerofold  zerofold convert --dequantize bf16 IN OUT/ (includes its fsync)
     floor     cat of the output's safetensors bytes to new files, then sync
     peer      bench/dequant_peer.py in the torch 2.6 chroot (--chroot, default /work/trixie;
               Debian 12's torch 1.13 has no float8): DeepSeek's fp8_cast_bf16.py flow with its
               weight_dequant in plain torch on the CPU (whole shards in memory)
   Outputs removed and `sync` run before each run; the page cache dropped where permitted.
   The chroot's peer is timed by its own clock and RSS (it prints them), the others by this
   script's; each includes its process start.
4. The peer's tensors are compared with zerofold's (sha256 of each tensor's bytes, by name).
5. Medians and ratios printed and appended to bench/RESULTS.md with the machine and date.

usage: bench/dequant_bench.py [--build build] [--work DIR] [--chroot /work/trixie] [--rounds 3] [--warm] [--keep]
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
NEEDED_FREE = 10 * 10**9

sys.path.insert(0, HERE)
from dcp_bench import check_same_tensors, folder_digests  # noqa: E402
from merge_bench import machine, publish, summary_table  # noqa: E402
from parts_bench import alternate, cache_text  # noqa: E402


class Chroot:
    """The repository and the work folder bind-mounted into the chroot, unmounted on exit."""

    def __init__(self, root, work):
        self.root, self.work = root, work
        self.src, self.data = "/zf-bench-src", "/zf-bench-data"
        self.mounted = []

    def __enter__(self):
        for inside, outside in ((self.src, ROOT), (self.data, self.work)):
            path = self.root + inside
            os.makedirs(path, exist_ok=True)
            subprocess.run(["mount", "--bind", outside, path], check=True)
            self.mounted.append(path)
        return self

    def __exit__(self, *exc):
        for path in reversed(self.mounted):
            subprocess.run(["umount", path], check=False)

    def inside(self, path):
        return self.data + "/" + os.path.relpath(path, self.work)

    def command(self, script, *paths):
        return ["chroot", self.root, "python3", f"{self.src}/bench/{script}"] + [self.inside(p) for p in paths]


def run_peer(argv):
    """Runs the chroot's peer; (wall seconds, peak RSS bytes) as it reports them."""
    proc = subprocess.run(argv, check=True, capture_output=True, text=True)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["wall_s"], report["peak_rss_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "dequant_bench_data"))
    ap.add_argument("--chroot", default="/work/trixie")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="keep the page cache (no drop between runs)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    free = shutil.disk_usage(work).free
    if free < NEEDED_FREE:
        sys.exit(f"need {NEEDED_FREE / 1e9:.0f} GB free in {work}, have {free / 1e9:.1f} GB")
    src = os.path.join(work, "in")
    out = os.path.join(work, "out")
    try:
        shutil.rmtree(src, ignore_errors=True)
        start = time.monotonic()
        subprocess.run(["nice", PY, os.path.join(HERE, "dequant_gen.py"), src, "--layers", str(args.layers)],
                       check=True)
        print(f"generated in {time.monotonic() - start:.1f} s")
        in_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(src, "*.safetensors")))

        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        ref = os.path.join(out, "ref")
        subprocess.run([zerofold, "convert", "--quiet", "--no-progress", "--verify", "--dequantize", "bf16", src, ref],
                       check=True)
        ref_files = sorted(glob.glob(os.path.join(ref, "*.safetensors")))
        out_bytes = sum(os.path.getsize(p) for p in ref_files)
        print(f"output {out_bytes} bytes in {len(ref_files)} files")

        zf_dir, floor_dir, peer_dir = (os.path.join(out, n) for n in ("zf", "floor", "peer"))
        cats = " && ".join(f"cat '{p}' > '{floor_dir}/{os.path.basename(p)}'" for p in ref_files)
        outputs = {"zerofold": zf_dir, "floor": floor_dir, "peer": peer_dir}
        with Chroot(args.chroot, work) as chroot:
            commands = {
                "zerofold": [zerofold, "convert", "--quiet", "--no-progress", "--dequantize", "bf16", src, zf_dir],
                "floor": ["sh", "-c", f"mkdir '{floor_dir}' && {cats} && sync"],
                "peer": chroot.command("dequant_peer.py", src, peer_dir),
            }
            results, loads, dropped = alternate(commands, outputs, args.rounds, args.warm, {"peer": run_peer})
        ours = folder_digests(zf_dir)
        check_same_tensors(ours, folder_digests(peer_dir))

        cache = cache_text(dropped, args.warm)
        lines = [
            f"## convert --dequantize bf16: synthetic DeepSeek FP8 block-quantized folder "
            f"({datetime.date.today().isoformat()})",
            "",
            f"Machine: {machine()}; shared with other jobs (load average {min(loads):.1f} to {max(loads):.1f} "
            f"during the runs), so absolute times are noisy.",
            f"Input (bench/dequant_gen.py, {args.layers} layers, F8_E4M3 weights with 128 x 128 block scales, ffn "
            f"5600 so blocks are partial): {in_bytes / 1e9:.2f} GB in 2 shards. Output: {len(ours)} tensors, "
            f"{out_bytes / 1e9:.2f} GB of bf16 in {len(ref_files)} file(s). Medians of {args.rounds} alternating "
            f"runs; {cache}. The peer ran in the torch 2.6 chroot.",
            "",
        ] + summary_table(results, (("zerofold", "zerofold convert --dequantize bf16 (incl. fsync)"),
                                    ("floor", "floor: cat output + sync"),
                                    ("peer", "peer: fp8_cast_bf16.py flow, plain torch on CPU")),
                          "<= 1.5x", "<= 64 MiB")
        publish(lines, args.no_results)
    finally:
        if not args.keep:
            shutil.rmtree(src, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
