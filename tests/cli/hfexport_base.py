#!/usr/bin/env python3
"""BASE folders and checks for tests/cli/hfexport_test.sh (merge --hf), on Debian's torch 1.13.

  hfexport_base.py megatron FIXTURE BASE [--vocab N] [--tie [--stored-lm-head]] [--dtype D] [--drop NAME]
                   [--extra NAME] [--reshape NAME]
  hfexport_base.py titan FIXTURE BASE
  hfexport_base.py same FIXTURE BASE    # names as saved (an FSDP DCP of a Hugging Face model)
  hfexport_base.py deepspeed FIXTURE BASE [--drop lm_head.weight]   # ground_truth.pt as saved, tied
  hfexport_base.py compare OUT BASE     # OUT's tensors equal BASE's, names, shapes and dtypes

BASE's weights are the fixture's expected tensors (fixtures/megatron/*/expected.pt,
fixtures/dcp/titan_ws2/expected.pt) mapped to Hugging Face names by the plain torch code below,
written independently of zerofold's tables from the same facts: Megatron-Bridge's QKVMapping
(rows per query group: q heads/groups x head_dim, then k, then v), GatedMLPMapping (linear_fc1 =
[gate; up]), the TE fused layernorms, vocab padding cut to vocab_size; TorchTitan's
Llama3StateDictAdapter.to_hf (wq/wk: view(heads, head_dim/2, 2, in).transpose(1, 2)).
So `merge --hf BASE` of the fixture must give BASE's tensors exactly (BASE's dtype: casts as
torch's .to()). Variants make BASE disagree for the refusals.
"""
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64"}
BY_CODE = {v: k for k, v in DTYPES.items()}


def save_safetensors(tensors, path):
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    out = {}
    for name, v in json.loads(data[8:8 + n]).items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        t = torch.frombuffer(raw, dtype=BY_CODE[v["dtype"]]) if raw else torch.empty(0, dtype=BY_CODE[v["dtype"]])
        out[name] = t.reshape(v["shape"])
    return out


def load_folder(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return load_safetensors(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for s in shards:
        out.update(load_safetensors(os.path.join(folder, s)))
    return out


def megatron_to_hf(sd, cfg):
    sd = {k[len("module."):] if k.startswith("module.") else k: v for k, v in sd.items()}
    heads, groups = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg["hidden_size"] // heads
    out = {"model.embed_tokens.weight": sd["embedding.word_embeddings.weight"][:cfg["vocab_size"]],
           "model.norm.weight": sd["decoder.final_layernorm.weight"]}
    if not cfg["tie_word_embeddings"]:
        out["lm_head.weight"] = sd["output_layer.weight"][:cfg["vocab_size"]]
    elif cfg.get("stored_lm_head"):  # tied, but BASE stores the head too
        out["lm_head.weight"] = out["model.embed_tokens.weight"].clone()
    for i in range(sd["decoder.layers.self_attention.linear_qkv.weight"].shape[0]):
        p, h = "decoder.layers.", f"model.layers.{i}."
        qkv = sd[p + "self_attention.linear_qkv.weight"][i]
        qkv = qkv.reshape(groups, (heads // groups + 2) * hd, -1)
        q, k, v = qkv.split([heads // groups * hd, hd, hd], dim=1)
        out[h + "self_attn.q_proj.weight"] = q.reshape(-1, qkv.shape[-1])
        out[h + "self_attn.k_proj.weight"] = k.reshape(-1, qkv.shape[-1])
        out[h + "self_attn.v_proj.weight"] = v.reshape(-1, qkv.shape[-1])
        out[h + "self_attn.o_proj.weight"] = sd[p + "self_attention.linear_proj.weight"][i]
        out[h + "input_layernorm.weight"] = sd[p + "self_attention.linear_qkv.layer_norm_weight"][i]
        out[h + "post_attention_layernorm.weight"] = sd[p + "mlp.linear_fc1.layer_norm_weight"][i]
        gate, up = sd[p + "mlp.linear_fc1.weight"][i].chunk(2, dim=0)
        out[h + "mlp.gate_proj.weight"] = gate
        out[h + "mlp.up_proj.weight"] = up
        out[h + "mlp.down_proj.weight"] = sd[p + "mlp.linear_fc2.weight"][i]
    return out


def titan_to_hf(sd, cfg):
    heads = cfg["num_attention_heads"]
    wq = sd["layers.0.attention.wq.weight"]
    dim, inp = wq.shape
    return {"model.embed_tokens.weight": sd["tok_embeddings.weight"],
            "model.layers.0.self_attn.q_proj.weight": wq.view(heads, dim // heads // 2, 2, inp).transpose(1, 2).reshape(dim, inp),
            "model.layers.0.self_attn.o_proj.weight": sd["layers.0.attention.wo.weight"],
            "model.layers.0.input_layernorm.weight": sd["layers.0.attention_norm.weight"],
            "model.norm.weight": sd["norm.weight"],
            "lm_head.weight": sd["output.weight"]}


def write_base(base, cfg, tensors, args):
    os.makedirs(base, exist_ok=True)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(opt(args, "--dtype"))
    if dtype is not None:
        tensors = {k: v.to(dtype) if v.is_floating_point() else v for k, v in tensors.items()}
    if opt(args, "--drop"):
        del tensors[opt(args, "--drop")]
    if opt(args, "--extra"):
        tensors[opt(args, "--extra")] = torch.zeros(3)
    if opt(args, "--reshape"):
        name = opt(args, "--reshape")
        tensors[name] = torch.zeros(tensors[name].shape[0] + 1, *tensors[name].shape[1:], dtype=tensors[name].dtype)
    with open(os.path.join(base, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(base, "generation_config.json"), "w") as f:
        f.write('{"bos_token_id": 1, "eos_token_id": 2}\n')
    with open(os.path.join(base, "tokenizer.json"), "w") as f:
        f.write('{"version": "1.0", "model": {"type": "BPE", "vocab": {}}}\n')
    save_safetensors(tensors, os.path.join(base, "model.safetensors"))


def opt(args, name):
    return args[args.index(name) + 1] if name in args else None


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "compare":
        out, base = load_folder(args[0]), load_folder(args[1])
        assert sorted(out) == sorted(base), (sorted(set(out) ^ set(base)))
        for k in base:
            assert out[k].dtype == base[k].dtype and out[k].shape == base[k].shape, (k, out[k].dtype, base[k].dtype)
            assert torch.equal(out[k].reshape(-1).view(torch.uint8), base[k].reshape(-1).view(torch.uint8)), k  # bits: NaN too
        print(f"{len(base)} tensors equal")
        return
    fixture, base = args[0], args[1]
    # DeepSpeed fixtures keep what the live engine held as ground_truth.pt
    # (the module's state dict, the tied lm_head.weight included).
    truth = "ground_truth.pt" if mode == "deepspeed" else "expected.pt"
    sd = torch.load(os.path.join(fixture, truth), weights_only=True)
    if mode == "megatron":
        cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
               "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
               "num_hidden_layers": 4, "vocab_size": int(opt(args, "--vocab") or 128),
               "tie_word_embeddings": "--tie" in args, "rms_norm_eps": 1e-5}
        if "--stored-lm-head" in args:
            cfg["stored_lm_head"] = True
        tensors = megatron_to_hf(sd, cfg)
    elif mode == "same":
        cfg = {"model_type": "custom_model", "architectures": ["CustomForCausalLM"]}
        tensors = dict(sd)
    elif mode == "deepspeed":
        cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "tie_word_embeddings": True}
        tensors = dict(sd)
    else:
        cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 6,
               "num_attention_heads": 1, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 10,
               "tie_word_embeddings": False}
        tensors = titan_to_hf(sd, cfg)
    if opt(args, "--model-type"):
        cfg["model_type"] = opt(args, "--model-type")
        cfg["architectures"] = ["NoSuchForCausalLM"]
    write_base(base, cfg, tensors, args)


if __name__ == "__main__":
    main()
