#!/usr/bin/python3
"""What checking the zip records' CRC-32 costs (issue 27: "a fast folding CRC; the read-plan
byte counts must not grow").

    /usr/bin/python3 bench/crc_bench.py [--zerofold build/zerofold] [--mib 512] [--rounds 5]
                                        [--no-results]

1. torch (Debian's python3-torch) saves a state dict of 8 float32 tensors, MIB MiB in all,
   stored (torch never deflates): every record has its CRC-32.
2. A copy with every CRC-32 field (local headers and central directory) set to 0, which
   zerofold reads as "not recorded" and does not check: the same bytes to read otherwise.
3. Alternating runs, ROUNDS of each, both files in the page cache (read once before), so the
   time is zerofold's own work and not the disk's:
     diff      zerofold diff F F          (reads every record of both sides whole)
     convert   zerofold convert F OUT.safetensors   (reads every record whole, writes them)
   for F the file with CRCs and the one without. The output is removed before each run.
4. Prints medians and the ratio (with CRC / without) and appends them to bench/RESULTS.md.
"""

import argparse
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def save_state_dict(path, mib):
    import torch
    torch.manual_seed(0)
    n = mib * (1 << 20) // 4 // 8
    torch.save({f"layer{i}.weight": torch.randn(n) for i in range(8)}, path)


def zero_crcs(src, dst):
    """Copies src with every CRC-32 field 0 (local headers and central directory entries,
    found through the central directory: records are stored, so no data descriptor)."""
    data = bytearray(open(src, "rb").read())
    eocd = data.rfind(b"PK\x05\x06")
    entries, cd_size, cd_offset = struct.unpack_from("<HII", data, eocd + 10)
    if cd_offset == 0xFFFFFFFF:  # zip64: the locator names the zip64 end record
        loc = data.rfind(b"PK\x06\x07", 0, eocd)
        (z64,) = struct.unpack_from("<Q", data, loc + 8)
        entries, cd_size, cd_offset = struct.unpack_from("<QQQ", data, z64 + 32)
    at = cd_offset
    for _ in range(entries):
        assert data[at:at + 4] == b"PK\x01\x02"
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, at + 28)
        (local,) = struct.unpack_from("<I", data, at + 42)
        if local == 0xFFFFFFFF:  # the zip64 extra field holds it after the sizes
            extra = data[at + 46 + name_len:at + 46 + name_len + extra_len]
            sizes = sum(8 for f in (20, 24) if struct.unpack_from("<I", data, at + f)[0] == 0xFFFFFFFF)
            (local,) = struct.unpack_from("<Q", extra, 4 + sizes)
        struct.pack_into("<I", data, at + 16, 0)
        assert data[local:local + 4] == b"PK\x03\x04"
        struct.pack_into("<I", data, local + 14, 0)
        at += 46 + name_len + extra_len + comment_len
    open(dst, "wb").write(data)


def timed(argv):
    t = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr}")
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zerofold", default=os.path.join(ROOT, "build", "zerofold"))
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    z = os.path.abspath(args.zerofold)
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "build")) as tmp:
        crc = os.path.join(tmp, "crc.pt")
        none = os.path.join(tmp, "crc0.pt")
        save_state_dict(crc, args.mib)
        zero_crcs(crc, none)
        r = subprocess.run([z, "inspect", none], capture_output=True, text=True)
        assert "crc32:" in r.stdout, r.stdout  # zerofold sees the copy's CRCs as not recorded
        for f in (crc, none):
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        out = os.path.join(tmp, "out.safetensors")
        runs = {(job, form): [] for job in ("diff", "convert") for form in ("crc", "none")}
        for i in range(args.rounds):
            order = [("crc", crc), ("none", none)]
            if i % 2:
                order.reverse()
            for form, f in order:
                runs[("diff", form)].append(timed([z, "diff", f, f]))
                if os.path.exists(out):
                    os.remove(out)
                runs[("convert", form)].append(timed([z, "convert", "--no-progress", f, out]))
        size = os.path.getsize(crc)
    lines = [
        f"## crc: the cost of checking records' CRC-32 ({time.strftime('%Y-%m-%d')})",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}. "
        f"File: torch.save of 8 float32 tensors, {size} bytes, stored; the same file with every "
        "CRC-32 field 0 (not recorded: not checked). Both in the page cache; medians of "
        f"{args.rounds} alternating runs (bench/crc_bench.py).",
        "",
        "| job | with CRC-32 (s) | CRC-32 0 (s) | ratio | GB/s with CRC-32 |",
        "|---|---|---|---|---|",
    ]
    for job, read_bytes in (("diff F F", 2 * size), ("convert F OUT.safetensors", size)):
        key = job.split()[0]
        a = statistics.median(runs[(key, "crc")])
        b = statistics.median(runs[(key, "none")])
        lines.append(f"| {job} | {a:.3f} | {b:.3f} | {a / b:.2f}x | {read_bytes / a / 1e9:.2f} |")
    lines.append("")
    lines.append("Every run (s): " + "; ".join(
        f"{k[0]} {k[1]} " + ", ".join(f"{t:.3f}" for t in v) for k, v in runs.items()))
    lines.append("")
    text = "\n".join(lines)
    print(text)
    if not args.no_results:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
