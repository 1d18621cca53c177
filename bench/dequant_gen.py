#!/usr/bin/python3
"""Writes a synthetic DeepSeek-style FP8 block-quantized Hugging Face folder for
bench/dequant_bench.py, without torch (float8 needs torch >= 2.1; Debian 12 has 1.13):

    nice /usr/bin/python3 bench/dequant_gen.py OUT_DIR [--layers 16]

The layout of DeepSeek-V3's release (config.json quantization_config {"quant_method": "fp8",
"fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}; each
quantized Linear weight [N, K] stored as F8_E4M3 with `weight_scale_inv` F32
[ceil(N/128), ceil(K/128)], the factor each 128 x 128 block is multiplied by to dequantize;
embeddings, norms and lm_head in BF16), for a Llama-shaped model: hidden 2048, 16 heads in 4
query groups, ffn 5600 (not a multiple of 128: partial trailing blocks), vocab 32000. Weights
are random E4M3 bytes (never the NaN encodings 0x7F/0xFF), scales random in [2^-10, 2^-6].
Two shards and model.safetensors.index.json; a layer's weight and its scale can sit in
different shards (shards are cut by size, not by layer).
"""

import argparse
import json
import os
import struct

import numpy

HIDDEN, HEADS, GROUPS, FFN, VOCAB, BLOCK = 2048, 16, 4, 5600, 32000, 128


def ceil_div(a, b):
    return -(-a // b)


def tensors(layers, rng):
    """(name, dtype, shape, bytes) in file order."""
    kv = HIDDEN // HEADS * GROUPS

    def bf16(shape):
        x = rng.standard_normal(int(numpy.prod(shape)), dtype=numpy.float32) * 0.02
        return (x.view(numpy.uint32) >> 16).astype(numpy.uint16).tobytes()

    def fp8(shape):
        b = rng.integers(0, 256, int(numpy.prod(shape)), dtype=numpy.uint8)
        b[(b & 0x7F) == 0x7F] = 0x38  # no NaN encodings: 1.0 instead
        return b.tobytes()

    def scale(shape):
        s = numpy.exp2(rng.uniform(-10, -6, ceil_div(shape[0], BLOCK) * ceil_div(shape[1], BLOCK))).astype(numpy.float32)
        return s.tobytes()

    yield "model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN], bf16([VOCAB, HIDDEN])
    for i in range(layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", "BF16", [HIDDEN], bf16([HIDDEN])
        for name, shape in (("self_attn.q_proj", [HIDDEN, HIDDEN]), ("self_attn.k_proj", [kv, HIDDEN]),
                            ("self_attn.v_proj", [kv, HIDDEN]), ("self_attn.o_proj", [HIDDEN, HIDDEN]),
                            ("mlp.gate_proj", [FFN, HIDDEN]), ("mlp.up_proj", [FFN, HIDDEN]),
                            ("mlp.down_proj", [HIDDEN, FFN])):
            yield p + name + ".weight", "F8_E4M3", shape, fp8(shape)
            yield (p + name + ".weight_scale_inv", "F32", [ceil_div(shape[0], BLOCK), ceil_div(shape[1], BLOCK)],
                   scale(shape))
        yield p + "post_attention_layernorm.weight", "BF16", [HIDDEN], bf16([HIDDEN])
    yield "model.norm.weight", "BF16", [HIDDEN], bf16([HIDDEN])
    yield "lm_head.weight", "BF16", [VOCAB, HIDDEN], bf16([VOCAB, HIDDEN])


def write_shard(path, items):
    header, pos = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, data in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [pos, pos + len(data)]}
        pos += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for item in items:
            f.write(item[3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=16)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = numpy.random.default_rng(29)
    items = list(tensors(a.layers, rng))
    total = sum(len(t[3]) for t in items)
    cut, acc = len(items), 0
    for i, t in enumerate(items):
        acc += len(t[3])
        if acc >= total // 2 and t[0].endswith(".weight") and i + 1 < len(items) and \
                items[i + 1][0].endswith("weight_scale_inv"):
            cut = i + 1  # the weight ends shard 1, its scale starts shard 2
            break
    shards = [items[:cut], items[cut:]]
    weight_map = {}
    for k, shard in enumerate(shards):
        name = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(os.path.join(a.out, name), shard)
        weight_map.update({t[0]: name for t in shard})
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "intermediate_size": FFN, "num_hidden_layers": a.layers, "num_attention_heads": HEADS,
              "num_key_value_heads": GROUPS, "vocab_size": VOCAB, "torch_dtype": "bfloat16",
              "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [BLOCK, BLOCK]}}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, f)


if __name__ == "__main__":
    main()
