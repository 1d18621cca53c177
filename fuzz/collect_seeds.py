#!/usr/bin/env python3
"""Builds each fuzz target's seed corpus from the fixtures, without copying
them into the tree: for fuzz/NAME_fuzz.cc, OUT/NAME/ gets the files its
header comment names.

  // fuzz-seeds: GLOB...          each file, as it is
  // fuzz-seeds-pickle: GLOB...   the data.pkl record of each torch zip file
  // fuzz-seeds-pickles: GLOB...  per folder, the data.pkl records of its torch
                                  files one after another: model states
                                  first, then the others in rank order
  // fuzz-seeds-deflated: GLOB... the raw deflate stream (RFC 1951) of each
                                  deflated (method 8) entry of each zip file

Globs are relative to the source root. Seeds are named by the SHA-1 of their
bytes, as libFuzzer names what it adds, so rerunning adds nothing twice.
Usage: collect_seeds.py OUT [NAME...]   (default: every target)
"""
import glob
import hashlib
import os
import re
import struct
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data_pkl(path):
    """The bytes of a torch zip file's data.pkl record, or None."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.filename.endswith("/data.pkl") or info.filename == "data.pkl":
                return z.read(info)
    return None


def deflated_streams(path):
    """The compressed bytes of each method-8 entry of a zip file."""
    if not zipfile.is_zipfile(path):
        return
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_DEFLATED:
                continue
            f.seek(info.header_offset)
            local = f.read(30)  # APPNOTE 4.3.7: fixed part of the local header
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            yield f.read(info.compress_size)


def rank_order(name):
    rank = re.search(r"rank_(\d+)", name)
    return ("model_states" not in name, int(rank.group(1)) if rank else -1, name)


def seeds(kind, pattern):
    paths = sorted(glob.glob(os.path.join(ROOT, pattern)))
    if not paths:
        sys.exit(f"collect_seeds.py: {pattern} matches nothing")
    for path in paths:
        if kind == "fuzz-seeds":
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    yield f.read()
        elif kind == "fuzz-seeds-pickle":
            pkl = data_pkl(path)
            if pkl is not None:
                yield pkl
        elif kind == "fuzz-seeds-deflated":
            yield from deflated_streams(path)
        elif kind == "fuzz-seeds-pickles":
            files = sorted((p for p in glob.glob(os.path.join(path, "*.pt"))), key=lambda p: rank_order(os.path.basename(p)))
            pkls = [data_pkl(p) for p in files]
            if pkls and all(p is not None for p in pkls):
                yield b"".join(pkls)


def collect(name, out):
    source = os.path.join(ROOT, "fuzz", name + "_fuzz.cc")
    corpus = os.path.join(out, name)
    os.makedirs(corpus, exist_ok=True)
    count = 0
    with open(source) as f:
        for line in f:
            m = re.match(r"// (fuzz-seeds(?:-pickles?|-deflated)?): (.*)", line)
            if not m:
                continue
            for pattern in m.group(2).split():
                for data in seeds(m.group(1), pattern):
                    path = os.path.join(corpus, hashlib.sha1(data).hexdigest())
                    if not os.path.exists(path):
                        with open(path, "wb") as f_out:
                            f_out.write(data)
                        count += 1
    if not os.listdir(corpus):
        sys.exit(f"collect_seeds.py: {name} has no seeds")
    return count


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or sorted(os.path.basename(p)[: -len("_fuzz.cc")]
                                   for p in glob.glob(os.path.join(ROOT, "fuzz", "*_fuzz.cc")))
    for name in names:
        print(f"{name}: {collect(name, out)} seeds added")


if __name__ == "__main__":
    main()
