#!/usr/bin/env python3
"""Small quantized checkpoints for tests/cli/dequantize_test.sh, and their
expected dequantized tensors, computed here from the schemes' specs (a
second implementation: numpy float32 arithmetic, the reference's order of
operations, then round to nearest even).

  dequantize_cases.py make DIR      writes DIR/<case>/{in/ or in.safetensors, bf16.safetensors, fp32.safetensors}
  dequantize_cases.py compare A B   exit 0 when the safetensors files (or folders of them) A and B hold
                                    the same tensors, bytes equal
  dequantize_cases.py write OUT SPEC.json  writes a safetensors file from a JSON spec (refusal inputs)
"""
import json
import os
import struct
import sys

import numpy as np

RNG = np.random.default_rng(29)


# --- safetensors -----------------------------------------------------------
def write_st(path, tensors, metadata=None):
    """tensors: list of (name, dtype code, shape, raw bytes)."""
    header = {}
    offset = 0
    for name, code, shape, raw in tensors:
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def read_st(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        out[name] = (h["dtype"], h["shape"], data[8 + n + b:8 + n + e])
    return out


# --- element decoders (OCP MX v1.0; torch float8_e4m3fn) --------------------
def e4m3(codes):
    c = codes.astype(np.int64)
    s = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    m = c & 7
    v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7))
    out = (s * v).astype(np.float32)
    # NaN as torch's float8 -> float32 conversion writes it: sign | 0x7FF00000.
    nan_bits = np.where(c & 0x80, 0xFFF00000, 0x7FF00000).astype(np.uint32)
    return np.where((e == 15) & (m == 7), nan_bits.view(np.float32), out)


FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def unpack_fp4(packed):
    lo = FP4[packed & 0xF]
    hi = FP4[packed >> 4]
    out = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.float32)
    out[..., 0::2] = lo
    out[..., 1::2] = hi
    return out


def bf16_bytes(f32):
    u = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r = np.where(np.isnan(f32), np.uint16(0xFFFF), r)
    return r.astype("<u2").tobytes()


def bf16_of(f32):  # float32 values rounded to bf16, as float32 (for bf16 scales)
    u = np.frombuffer(bf16_bytes(f32), dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).reshape(f32.shape)


def expand(scale, rows, cols, br, bc):
    return np.repeat(np.repeat(scale, br, axis=0), bc, axis=1)[:rows, :cols]


def f32b(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


# --- compressed-tensors pack_to_int32: dense bits, element i at bit i*b ------
def pack_rows(q, bits):
    """q: int [rows, cols] signed; returns int32 [rows, ceil(cols*bits/32)]."""
    rows, cols = q.shape
    u = (q.astype(np.int64) + (1 << (bits - 1))).astype(np.uint64)
    words = (cols * bits + 31) // 32
    out = np.zeros((rows, words + 1), dtype=np.uint64)
    for c in range(cols):
        bit = c * bits
        w, sh = bit // 32, bit % 32
        v = u[:, c] << np.uint64(sh)
        out[:, w] |= v & np.uint64(0xFFFFFFFF)
        out[:, w + 1] |= v >> np.uint64(32)
    return out[:, :words].astype(np.uint32).view(np.int32)


def case_dir(root, name):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    return d


def write_expected(d, tensors_f32, kept):
    """tensors_f32: list of (name, float32 array); kept: list of (name, code, shape, raw)."""
    for target in ("bf16", "fp32"):
        ts = []
        for name, a in tensors_f32:
            raw = bf16_bytes(a) if target == "bf16" else f32b(a)
            ts.append((name, "BF16" if target == "bf16" else "F32", a.shape, raw))
        write_st(os.path.join(d, target + ".safetensors"), ts + kept, {"format": "pt"})


def folder(d, shards, config_extra, qconfig):
    """shards: list of tensor lists; writes in/ with index (>1 shard), config.json, a tokenizer file."""
    ind = os.path.join(d, "in")
    os.makedirs(ind, exist_ok=True)
    n = len(shards)
    weight_map = {}
    for k, ts in enumerate(shards):
        name = "model.safetensors" if n == 1 else "model-%05d-of-%05d.safetensors" % (k + 1, n)
        write_st(os.path.join(ind, name), ts, {"format": "pt"})
        for t in ts:
            weight_map[t[0]] = name
    if n > 1:
        with open(os.path.join(ind, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
    config = dict(config_extra)
    config["quantization_config"] = qconfig
    config["zz_last"] = 1
    with open(os.path.join(ind, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=False)
    with open(os.path.join(ind, "tokenizer.json"), "w") as f:
        f.write('{"version": "1.0"}\n')


def save_case(d, shards, config_extra, qconfig, expected, kept, single=True):
    """The folder in/, the same tensors as one file in.safetensors, and the expected outputs."""
    folder(d, shards, config_extra, qconfig)
    if single:
        write_st(os.path.join(d, "in.safetensors"), [t for ts in shards for t in ts], {"format": "pt"})
    write_expected(d, expected, kept)


def mxfp4_case(root, case, e_, n, g):
    """gpt-oss MXFP4 experts: E8M0 255 (NaN) and 0 among the scales."""
    d = case_dir(root, case)
    blocks = RNG.integers(0, 256, size=(e_, n, g, 16), dtype=np.uint8)
    scales = RNG.integers(118, 136, size=(e_, n, g), dtype=np.uint8)
    scales[0, 0, 0] = 255  # E8M0 NaN (OCP MX v1.0), where transformers' ldexp gives 2^128 = inf
    scales[1, 2, 1] = 0
    vals = unpack_fp4(blocks)  # [E, N, G, 32]
    with np.errstate(invalid="ignore", over="ignore"):
        pow2 = np.ldexp(np.float32(1), scales.astype(np.int32) - 127).astype(np.float32)
        pow2[scales == 255] = np.nan
        dec = (vals * pow2[..., None]).astype(np.float32)
    dec = dec.reshape(e_, n, g * 32).transpose(0, 2, 1).copy()
    bias = np.arange(6, dtype=np.float32)
    kept = [("model.layers.0.mlp.experts.gate_up_proj_bias", "F32", (2, 3), f32b(bias))]
    ts = [("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", blocks.shape, blocks.tobytes()),
          ("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", scales.shape, scales.tobytes())] + kept
    save_case(d, [ts], {"architectures": ["GptOssForCausalLM"]}, {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}, [("model.layers.0.mlp.experts.gate_up_proj", dec)], kept)


def make(root):
    # fp8-block: DeepSeek-V3, 128x128 blocks, partial trailing blocks, NaN and -0.
    d = case_dir(root, "fp8_block")
    n, k = 200, 300
    w = RNG.integers(0, 256, size=(n, k), dtype=np.uint8)
    w[w == 0x7F] = 0x7E
    w[w == 0xFF] = 0xFE
    w[0, 0], w[0, 1], w[1, 0] = 0x80, 0x7F, 0x00  # -0.0, NaN, +0
    s = (RNG.random((2, 3)) * 0.01 + 1e-4).astype(np.float32)
    full = e4m3(w) * expand(s, n, k, 128, 128)
    norm = RNG.standard_normal(17).astype(np.float32)
    norm_raw = bf16_bytes(norm)
    ids = np.arange(5, dtype="<i8").tobytes()
    kept = [("model.norm.weight", "BF16", (17,), norm_raw), ("model.ids", "I64", (5,), ids)]
    shards = [[("model.layers.0.mlp.weight", "F8_E4M3", (n, k), w.tobytes()), kept[0]],
              [("model.layers.0.mlp.weight_scale_inv", "F32", (2, 3), f32b(s)), kept[1]]]
    save_case(d, shards, {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7},
              {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, [("model.layers.0.mlp.weight", full)], kept)

    # mxfp4: gpt-oss experts, [E, N, G, 16] blocks -> [E, G*32, N]; mxfp4_big: experts of
    # 300 x 128 values (19,200 packed bytes: more than four 4 KiB buffers).
    for case, (e_, n, g) in (("mxfp4", (2, 3, 2)), ("mxfp4_big", (2, 300, 4))):
        mxfp4_case(root, case, e_, n, g)

    # nvfp4 (ModelOpt): e2m1 x (float(scale) x scale_2).
    d = case_dir(root, "nvfp4_modelopt")
    n, k = 5, 48
    packed = RNG.integers(0, 256, size=(n, k // 2), dtype=np.uint8)
    sc = RNG.integers(0x20, 0x70, size=(n, 3), dtype=np.uint8)
    s2 = np.array(0.0123, dtype=np.float32)
    per = (e4m3(sc) * s2).astype(np.float32)
    dec = (unpack_fp4(packed) * expand(per, n, k, 1, 16)).astype(np.float32)
    kept = [("lm_head.weight", "BF16", (2, 2), bf16_bytes(np.ones((2, 2), np.float32)))]
    ts = [("model.layers.0.self_attn.q_proj.weight", "U8", packed.shape, packed.tobytes()),
          ("model.layers.0.self_attn.q_proj.weight_scale", "F8_E4M3", sc.shape, sc.tobytes()),
          ("model.layers.0.self_attn.q_proj.weight_scale_2", "F32", (), f32b(s2)),
          ("model.layers.0.self_attn.q_proj.input_scale", "F32", (), f32b(np.float32(0.5)))] + kept
    save_case(d, [ts], {"architectures": ["LlamaForCausalLM"]}, {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, [("model.layers.0.self_attn.q_proj.weight", dec)], kept)

    # nvfp4-ct: e2m1 x (float(scale) / global); a partial trailing group of 8.
    d = case_dir(root, "nvfp4_ct")
    n, k = 4, 40
    packed = RNG.integers(0, 256, size=(n, k // 2), dtype=np.uint8)
    sc = RNG.integers(0x20, 0x70, size=(n, 3), dtype=np.uint8)
    gs = np.array([81.25], dtype=np.float32)
    per = (e4m3(sc) / gs[0]).astype(np.float32)
    dec = (unpack_fp4(packed) * expand(per, n, k, 1, 16)).astype(np.float32)
    ts = [("model.layers.0.mlp.down_proj.weight_packed", "U8", packed.shape, packed.tobytes()),
          ("model.layers.0.mlp.down_proj.weight_scale", "F8_E4M3", sc.shape, sc.tobytes()),
          ("model.layers.0.mlp.down_proj.weight_global_scale", "F32", (1,), f32b(gs)),
          ("model.layers.0.mlp.down_proj.input_global_scale", "F32", (1,), f32b(gs))]
    qc = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "format": "nvfp4-pack-quantized",
                                        "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}}}}
    save_case(d, [ts], {"architectures": ["LlamaForCausalLM"]}, qc, [("model.layers.0.mlp.down_proj.weight", dec)], [])

    # int-packed: INT4 group 32 symmetric (BF16 scales), INT8 channel, INT3 asymmetric channel
    # with packed zero points (values straddling words), under three config groups.
    d = case_dir(root, "int_packed")
    expected = []
    ts = []
    def add(module, q, bits, scale, zp=None, zp_packed=None, g_idx=None):
        ts.append((module + ".weight_packed", "I32", None, pack_rows(q, bits)))
        ts.append((module + ".weight_shape", "I64", (2,), np.array(q.shape, dtype="<i8").tobytes()))
        ts.append((module + ".weight_scale", "BF16", scale.shape, bf16_bytes(scale)))
        sf = bf16_of(scale)
        br, bc = 1, q.shape[1] // scale.shape[1]
        zz = np.zeros_like(sf) if zp is None else zp.astype(np.float32)
        if g_idx is not None:  # activation order: column c has group g_idx[c]
            ts.append((module + ".weight_g_idx", "I32", (q.shape[1],), g_idx.astype("<i4").tobytes()))
            dq = ((q.astype(np.float32) - zz[:, g_idx]) * sf[:, g_idx]).astype(np.float32)
            expected.append((module + ".weight", dq))
            return
        dq = ((q.astype(np.float32) - expand(zz, *q.shape, br, bc)) * expand(sf, *q.shape, br, bc)).astype(np.float32)
        if zp is not None:
            ts.append((module + ".weight_zero_point", "I32", None, zp_packed))
        expected.append((module + ".weight", dq))
    q4 = RNG.integers(-8, 8, size=(6, 64))
    add("model.layers.0.mlp.experts.0.up_proj", q4, 4, (RNG.random((6, 2)) * 0.1).astype(np.float32),
        g_idx=RNG.permutation(np.repeat(np.arange(2), 32)))
    q8 = RNG.integers(-128, 128, size=(5, 7))
    add("model.layers.0.mlp.experts.0.down_proj", q8, 8, (RNG.random((5, 1)) * 0.1).astype(np.float32))
    q3 = RNG.integers(-4, 4, size=(11, 13))
    z3 = RNG.integers(-4, 4, size=(11, 1))
    add("model.layers.0.self_attn.o_proj", q3, 3, (RNG.random((11, 1)) * 0.1).astype(np.float32), z3,
        np.ascontiguousarray(pack_rows(z3.T, 3).T))
    ts = [(nm, code, (shape if shape is not None else raw.shape), raw.tobytes() if hasattr(raw, "tobytes") else raw)
          for nm, code, shape, raw in ts]
    emb = RNG.standard_normal((3, 4)).astype(np.float32)
    kept = [("model.embed_tokens.weight", "F32", (3, 4), f32b(emb))]
    qc = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head", "re:.*embed.*"],
          "config_groups": {
              "int4": {"targets": ["re:.*up_proj$"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": True, "actorder": "group"}},
              "int8": {"targets": ["re:.*down_proj$"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}},
              "int3": {"targets": ["Linear"], "weights": {"num_bits": 3, "type": "int", "strategy": "channel", "symmetric": False}}}}
    save_case(d, [ts[:6], ts[6:] + kept], {"architectures": ["KimiK2"]}, qc, expected, kept, single=False)

    # fp8 (compressed-tensors float-quantized), per channel, BF16 scales; per tensor F32 (names only too).
    d = case_dir(root, "fp8_channel")
    w1 = RNG.integers(0, 0x7E, size=(7, 9), dtype=np.uint8)
    s1 = (RNG.random((7, 1)) * 0.01).astype(np.float32)
    w2 = RNG.integers(0x80, 0xFE, size=(3, 5), dtype=np.uint8)
    s2 = np.array([0.0625], dtype=np.float32)
    ts = [("a.weight", "F8_E4M3", w1.shape, w1.tobytes()), ("a.weight_scale", "BF16", (7, 1), bf16_bytes(s1)),
          ("b.weight", "F8_E4M3", w2.shape, w2.tobytes()), ("b.weight_scale", "F32", (1,), f32b(s2)),
          ("b.input_scale", "F32", (1,), f32b(s2))]
    qc = {"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"g": {"targets": ["re:^a$"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}},
                            "h": {"targets": ["re:^b$"], "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}}}}
    save_case(d, [ts], {}, qc, [("a.weight", (e4m3(w1) * expand(bf16_of(s1), 7, 9, 1, 9)).astype(np.float32)),
                       ("b.weight", (e4m3(w2) * s2[0]).astype(np.float32))], [])


def read_any(path):
    """A safetensors file, or every *.safetensors file of a folder as one."""
    if not os.path.isdir(path):
        return read_st(path)
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".safetensors"):
            out.update(read_st(os.path.join(path, name)))
    return out


def compare(a, b):
    x, y = read_any(a), read_any(b)
    if sorted(x) != sorted(y):
        print("names differ: %s vs %s" % (sorted(x), sorted(y)))
        return 1
    for name in sorted(x):
        if x[name][:2] != y[name][:2] and [x[name][0], list(x[name][1])] != [y[name][0], list(y[name][1])]:
            print("%s: %s %s vs %s %s" % (name, x[name][0], x[name][1], y[name][0], y[name][1]))
            return 1
        if x[name][2] != y[name][2]:
            xa, ya = np.frombuffer(x[name][2], np.uint8), np.frombuffer(y[name][2], np.uint8)
            bad = np.nonzero(xa != ya)[0]
            print("%s: %d bytes differ, first at byte %d" % (name, len(bad), bad[0]))
            return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "write":
        spec = json.load(open(sys.argv[3]))
        write_st(sys.argv[2], [(t["name"], t["dtype"], t["shape"], bytes(t.get("fill", 0) for _ in range(t["bytes"])))
                               for t in spec])
