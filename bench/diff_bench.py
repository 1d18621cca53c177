#!/usr/bin/python3
"""Benchmark of `zerofold diff` on a pair of checkpoints in two formats.

1. torch writes A, a torch file of float32 tensors (SIZE_MB in all, the largest a quarter of
   it), and B, the same tensors with 3 elements changed, which `zerofold convert` writes as
   safetensors: what users compare after a conversion.
2. One untimed `zerofold diff --json` is checked against what torch computes (the changed
   tensors, counts, first indices, largest absolute differences).
3. Alternating runs, ROUNDS of each, in rotating order, inputs in the page cache:
     zerofold  zerofold diff A B (exit 1: they differ)
     floor     cat A B > /dev/null: reading both files' bytes once
     peer      bench/diff_peer.py: torch.load of A, B read with the oracle's safetensors
               reader, then per tensor torch.equal and, where unequal, the count, first index
               and largest |a - b|: what users do today, the whole model in memory
   Wall time by the monotonic clock; peak RSS from the child's rusage (wait4).
4. Medians and ratios are printed and appended to bench/RESULTS.md with the machine and date.

usage: bench/diff_bench.py [--build build] [--work DIR] [--size-mb 1024] [--rounds 5] [--no-results]
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
sys.path.insert(0, HERE)
from merge_bench import machine  # noqa: E402

CHANGES = [("t0", (5, 7), 0.5), ("t1", (100, 3), -2.0), ("t3", (0, 0), 1e-3)]


def run_measured(argv, want_codes=(0,)):
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in want_codes:
        sys.exit(f"{argv} exited {code}")
    return wall, usage.ru_maxrss * 1024


def make_inputs(work, size_mb, zerofold):
    gen = f"""
import torch
n = {size_mb} * 2**20 // 4
sizes = [n // 4, n // 4, n // 4, n - 3 * (n // 4)]
g = torch.Generator().manual_seed(7)
sd = {{f"t{{i}}": torch.randn(s // 512, 512, generator=g) for i, s in enumerate(sizes)}}
torch.save(sd, "{work}/a.pt")
for name, index, delta in {CHANGES!r}:
    sd[name][index] += delta
torch.save(sd, "{work}/b.pt")
"""
    subprocess.run([PY, "-c", gen], check=True)
    subprocess.run([zerofold, "convert", f"{work}/b.pt", f"{work}/b.safetensors"], check=True,
                   stdout=subprocess.DEVNULL)
    os.remove(f"{work}/b.pt")


def check(zerofold, work):
    p = subprocess.run([zerofold, "diff", "--json", f"{work}/a.pt", f"{work}/b.safetensors"],
                       capture_output=True, text=True)
    if p.returncode != 1:
        sys.exit(f"diff exited {p.returncode}: {p.stderr}")
    r = json.loads(p.stdout)
    got = {t["name"]: t for t in r["tensors"] if not t["same"]}
    if sorted(got) != sorted(c[0] for c in CHANGES):
        sys.exit(f"diff names {sorted(got)} as changed")
    peer = subprocess.run([PY, os.path.join(HERE, "diff_peer.py"), f"{work}/a.pt", f"{work}/b.safetensors"],
                          capture_output=True, text=True, check=False)
    want = json.loads(peer.stdout)
    for name, t in got.items():
        w = want[name]
        if (t["differing"], t["first_index"], t["max_abs_diff"]) != (w["differing"], w["first_index"], w["max_abs_diff"]):
            sys.exit(f"{name}: zerofold {t}, torch {w}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")
    work = args.work or tempfile.mkdtemp(prefix="zf_diff_bench_", dir="/work" if os.path.isdir("/work") else None)
    os.makedirs(work, exist_ok=True)
    try:
        make_inputs(work, args.size_mb, zerofold)
        check(zerofold, work)
        a, b = f"{work}/a.pt", f"{work}/b.safetensors"
        runs = {
            "zerofold": ([zerofold, "diff", "--quiet", a, b], (1,)),
            "floor": (["sh", "-c", f"cat '{a}' '{b}' > /dev/null"], (0,)),
            "peer": ([PY, os.path.join(HERE, "diff_peer.py"), a, b], (0,)),
        }
        for argv, codes in runs.values():  # warm the page cache
            run_measured(argv, codes)
        results = {k: [] for k in runs}
        order = list(runs)
        for r in range(args.rounds):
            for name in order[r % 3:] + order[:r % 3]:
                argv, codes = runs[name]
                results[name].append(run_measured(argv, codes))
        med = {k: (statistics.median(w for w, _ in v), max(m for _, m in v)) for k, v in results.items()}
        size = os.path.getsize(a) + os.path.getsize(b)
        lines = [f"## diff: a torch file against its safetensors conversion, 3 elements changed "
                 f"({datetime.date.today().isoformat()})", "",
                 f"Machine: {machine()}.",
                 f"A: torch file of 4 float32 tensors, {os.path.getsize(a) / 1e6:.0f} MB; B: the same with 3 elements "
                 f"changed, as safetensors ({os.path.getsize(b) / 1e6:.0f} MB). {size / 1e6:.0f} MB read per run. "
                 f"Medians of {args.rounds} alternating runs, page cache warm; the untimed check found torch's "
                 "counts, first indices and max abs differences.", "",
                 "| run | median wall time (s) | peak RSS (MiB) | median / floor's |", "|---|---|---|---|"]
        for name, label in (("zerofold", "zerofold diff A B"), ("floor", "floor: cat A B > /dev/null"),
                            ("peer", "peer: torch.load both, compare per tensor")):
            w, m = med[name]
            lines.append(f"| {label} | {w:.2f} | {m / 2**20:.1f} | {w / med['floor'][0]:.2f}x |")
        lines.append("")
        lines.append("Every run (s): " + "; ".join(
            f"{k} " + ", ".join(f"{w:.2f}" for w, _ in v) for k, v in results.items()))
        text = "\n".join(lines) + "\n"
        print(text)
        if not args.no_results:
            with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
                f.write("\n" + text)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
