#!/usr/bin/env python3
"""Writes the hand-made seeds of the fuzz targets whose formats have no
fixtures: fuzz/seeds/{json_reader,safetensors_reader,zstd_source}/.
Deterministic: rerunning changes no bytes. Needs the zstd command (Debian
package zstd). Usage: /usr/bin/python3 fuzz/seeds/make_seeds.py
"""
import json
import os
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


JSON = {
    "index.json": '{"metadata": {"total_size": 14848}, "weight_map": {"a.weight": "m-00001-of-00002.bin", "b": "m-00002-of-00002.bin"}}',
    "numbers.json": '[0, -0, 1, -1, 18446744073709551615, 18446744073709551616, -9223372036854775808, 1.5e308, 2e-324, 1E+2, 0.1, -12.5e-3]',
    "strings.json": '["", "a\\"b\\\\c\\/d", "\\b\\f\\n\\r\\t", "\\u0000\\u001f", "\\u00e9\\u20ac", "\\ud83d\\ude00", "\u00e9\u20ac\U0001f600"]',
    "nested.json": ' { "a" : [ [ [ { } ] ] , { "b" : null , "c" : true , "d" : false } ] } \r\n\t',
    "scalar.json": '"text"',
    "empty.json": '{}',
}

F32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)


def _dtype_entries():
    begin = 0
    for name, size in [("F64", 8), ("F32", 4), ("I32", 4), ("I16", 2), ("I8", 1), ("U8", 1), ("U16", 2),
                       ("U32", 4), ("U64", 8), ("F8_E5M2", 1), ("C64", 8)]:
        yield name, {"dtype": name, "shape": [1], "data_offsets": [begin, begin + size]}
        begin += size


def safetensors(header, data, pad=True):
    text = json.dumps(header, separators=(",", ":"))
    if pad:
        text += " " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + data


SAFETENSORS = {
    "f32.safetensors": safetensors({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, F32),
    "metadata.safetensors": safetensors(
        {"__metadata__": {"format": "pt", "note": "x"},
         "b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
         "a": {"dtype": "I64", "shape": [], "data_offsets": [4, 12]},
         "e": {"dtype": "F16", "shape": [0, 3], "data_offsets": [12, 12]},
         "m": {"dtype": "BOOL", "shape": [3], "data_offsets": [12, 15]},
         "q": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [15, 16]}},
        bytes(range(16))),
    "dtypes.safetensors": safetensors(dict(_dtype_entries()), bytes(43)),
    "array_entry.safetensors": safetensors({"t": ["F32", [4], [0, 16]]}, F32, pad=False),
    "null_metadata.safetensors": safetensors({"__metadata__": None, "t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x07"),
}


def zstd(data, *flags):
    return subprocess.run(["zstd", "-q", "-c", *flags], input=data, stdout=subprocess.PIPE, check=True).stdout


def skippable(payload):
    return struct.pack("<II", 0x184D2A50, len(payload)) + payload


def main():
    for name, text in JSON.items():
        write("json_reader", name, text)
    for name, data in SAFETENSORS.items():
        write("safetensors_reader", name, data)
    with open(os.path.join(ROOT, "fixtures/torch/state_dict.pt"), "rb") as f:
        pt = f.read()
    write("zstd_source", "state_dict.pt.zst", zstd(pt, "-3"))
    write("zstd_source", "two_frames.zst", zstd(b"abc" * 100, "--no-check") + zstd(b"", "-1"))
    write("zstd_source", "skippable.zst", skippable(b"meta") + zstd(b"x" * 1000, "-19") + skippable(b""))


if __name__ == "__main__":
    main()
