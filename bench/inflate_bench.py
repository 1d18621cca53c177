#!/usr/bin/python3
"""Inflate throughput: zerofold's zip::Inflater against zlib (what Python's zipfile, and so
the usual repacking tools, use), alternating runs, medians.

    /usr/bin/python3 bench/inflate_bench.py [RUNS]     (after meson compile -C build)

Inputs, made here with zlib level 6 (raw deflate, as zip method 8 holds it):
  - randn: 64 MiB of torch.randn float32 (what a deflated checkpoint's weights look like:
    almost incompressible, mostly literals);
  - ids: 64 MiB of int64 arange % 251 (match-heavy).
Both sides compute the CRC-32 of the output (as reading a zip entry does) and must agree.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build", "bench", "inflate_bench")
N = 16 * 1024 * 1024


def inputs():
    g = torch.Generator().manual_seed(1)
    yield "randn", torch.randn(N, generator=g).numpy().tobytes()
    yield "ids", (torch.arange(N // 2, dtype=torch.int64) % 251).numpy().tobytes()


def zlib_run(stream, size):
    start = time.perf_counter()
    d = zlib.decompressobj(-15)
    crc, total = 0, 0
    view = memoryview(stream)
    for i in range(0, len(stream), 1 << 16):
        buf = d.decompress(view[i:i + (1 << 16)])
        crc = zlib.crc32(buf, crc)
        total += len(buf)
    buf = d.flush()
    crc = zlib.crc32(buf, crc)
    total += len(buf)
    return time.perf_counter() - start, total, crc


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in inputs():
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            stream = c.compress(data) + c.flush()
            path = os.path.join(tmp, name + ".deflate")
            with open(path, "wb") as f:
                f.write(stream)
            ours, peer = [], []
            for _ in range(runs):
                out = subprocess.run([BENCH, path, str(len(data))], capture_output=True, text=True, check=True)
                secs, total, crc = out.stdout.split()
                assert int(total) == len(data) and int(crc, 16) == zlib.crc32(data), (name, out.stdout)
                ours.append(float(secs))
                secs, total, crc2 = zlib_run(stream, len(data))
                assert total == len(data) and crc2 == zlib.crc32(data)
                peer.append(secs)
            mb = len(data) / 1e6
            a, b = statistics.median(ours), statistics.median(peer)
            print(f"{name}: {mb:.1f} MB from {len(stream) / 1e6:.1f} MB; zerofold median {a:.3f} s "
                  f"({mb / a:.0f} MB/s, best {mb / min(ours):.0f}); zlib median {b:.3f} s ({mb / b:.0f} MB/s); "
                  f"zerofold/zlib time {a / b:.2f}x")


main()
