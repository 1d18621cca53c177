#!/usr/bin/python3
"""convert --dequantize against its floor and a peer (issue 29: "<= 1.5x the floor and
<= 64 MiB RSS").

    /usr/bin/python3 bench/dequantize_bench.py [--zerofold build/zerofold] [--mib 256]
                                               [--rounds 3] [--no-results]

1. A DeepSeek-V3 FP8 block checkpoint: one F8_E4M3 weight [MIB*2^20 / 16384, 16384] (values
   0x00-0x7D, no NaN) and its F32 weight_scale_inv [ceil(N/128), 128] in one safetensors file.
2. Alternating rounds, each timed by /usr/bin/time (wall seconds, max RSS):
     zerofold  zerofold convert --dequantize bf16 IN OUT.safetensors (fsyncs OUT)
     floor     cat OUT.safetensors > COPY && sync   (writing the output's bytes, nothing else)
     peer      the DeepSeek fp8_cast_bf16.py recipe on the CPU in numpy (what the Python
               dequantizers do: load the whole weight, expand the block scales, multiply in
               float32, round to bf16, save): a lookup of the E4M3 bytes, np.repeat of the
               scales, bf16 by the round-to-nearest-even bit trick, written with its header.
   The input is in the page cache for every run (read once before).
3. Prints medians and ratios; appends them to bench/RESULTS.md unless --no-results.
"""

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = 16384

PEER = r'''
import json, struct, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
    base = 8 + n
    w = h["w.weight"]; s = h["w.weight_scale_inv"]
    f.seek(base + w["data_offsets"][0]); q = np.frombuffer(f.read(w["data_offsets"][1] - w["data_offsets"][0]), np.uint8)
    f.seek(base + s["data_offsets"][0]); sc = np.frombuffer(f.read(s["data_offsets"][1] - s["data_offsets"][0]), "<f4")
rows, cols = w["shape"]
c = np.arange(256)
e, m = (c >> 3) & 15, c & 7
lut = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * 2.0 ** (e - 7)) * np.where(c & 128, -1, 1)
lut = lut.astype(np.float32)
x = lut[q].reshape(rows, cols)
x *= np.repeat(np.repeat(sc.reshape(s["shape"]), 128, 0), 128, 1)[:rows, :cols]
u = x.view(np.uint32)
b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
hdr = json.dumps({"__metadata__": {"format": "pt"}, "w.weight": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [0, b.nbytes]}}).encode()
hdr += b" " * (-len(hdr) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(hdr))); f.write(hdr); f.write(b.tobytes())
'''


def make_input(path, mib):
    import numpy as np
    rows = mib * (1 << 20) // K
    srows = (rows + 127) // 128
    hdr = {"w.weight": {"dtype": "F8_E4M3", "shape": [rows, K], "data_offsets": [0, rows * K]},
           "w.weight_scale_inv": {"dtype": "F32", "shape": [srows, K // 128],
                                  "data_offsets": [rows * K, rows * K + srows * (K // 128) * 4]}}
    text = json.dumps(hdr).encode()
    text += b" " * (-len(text) % 8)
    block = np.random.default_rng(29).integers(0, 0x7E, size=(64, K), dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _ in range(rows // 64):
            f.write(block)
        f.write((np.random.default_rng(1).random(srows * (K // 128)) * 1e-3).astype("<f4").tobytes())


def timed(cmd):
    """(wall seconds, max RSS in KiB) of cmd under /usr/bin/time."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {p.stderr}")
    wall, rss = p.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zerofold", default=os.path.join(ROOT, "build", "zerofold"))
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-results", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(a.zerofold))) as tmp:
        src, out, copy, peer_out = (os.path.join(tmp, n) for n in ("in.safetensors", "out.safetensors", "copy", "peer.safetensors"))
        make_input(src, a.mib)
        subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)
        runs = {"zerofold": [], "floor": [], "peer": []}
        for _ in range(a.rounds):
            for f in (out, copy, peer_out):
                if os.path.exists(f):
                    os.remove(f)
            runs["zerofold"].append(timed([a.zerofold, "convert", "--dequantize", "bf16", "--quiet", src, out]))
            runs["floor"].append(timed(["sh", "-c", f"cat {out} > {copy} && sync"]))
            runs["peer"].append(timed([sys.executable, "-c", "import os\n" + PEER + "\nos.sync()", src, peer_out]))
            if open(out, "rb").read()[-4096:] != open(peer_out, "rb").read()[-4096:]:
                sys.exit("zerofold and the peer wrote different tensor bytes")
        med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
        rss = {k: max(r for _, r in v) for k, v in runs.items()}
        out_bytes = os.path.getsize(out)
    lines = [f"## dequantize: DeepSeek FP8 block -> bf16 ({__import__('datetime').date.today()})", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}. Input: one F8_E4M3 "
             f"[{a.mib * (1 << 20) // K}, {K}] weight ({a.mib} MiB) and its 128x128 F32 weight_scale_inv, in the page "
             f"cache; output {out_bytes} bytes of bf16. Medians of {a.rounds} alternating rounds "
             "(bench/dequantize_bench.py).", "",
             "| run | wall (s) | x floor | max RSS (MiB) |", "|---|---|---|---|"]
    for k in ("zerofold", "floor", "peer"):
        lines.append(f"| {k} | {med[k]:.2f} | {med[k] / med['floor']:.2f}x | {rss[k] / 1024:.1f} |")
    lines.append("")
    lines.append("Every run (s): " + "; ".join(f"{k} " + ", ".join(f"{w:.2f}" for w, _ in v) for k, v in runs.items()))
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_results:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
