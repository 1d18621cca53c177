#!/usr/bin/python3
"""The peer approach to exporting a Megatron-Core torch_dist checkpoint as a Hugging Face Llama
folder, for bench/hf_export_bench.py: what slime's convert_torch_dist_to_hf.py and verl's
model_merger do on a CPU node, on Debian's torch 1.13: every tensor loaded at full size
(bench/megatron_peer.py: torch's DCP load_state_dict reading every chunk), then the Megatron ->
Hugging Face mapping in torch (layers unstacked, linear_qkv split per query group into q/k/v,
linear_fc1 into gate/up, renames), then one safetensors save, fsync'ed.

    /usr/bin/python3 bench/hf_export_peer.py TORCH_DIST_DIR BASE_DIR OUT_DIR

BASE_DIR/config.json gives num_attention_heads, num_key_value_heads, hidden_size (head_dim =
hidden_size / num_attention_heads). The mapping is Megatron-Core's layout (the qkv rows of query
group g are its heads/groups query heads, then one key head, then one value head; fc1 is all
gate rows then all up rows), as slime's megatron_to_hf llama converter and Megatron-Bridge's
QKVMapping / GatedMLPMapping read it. config.json and the other small files of BASE are copied.
Prints one JSON line {"wall_s", "peak_rss_bytes", "tensors", "bytes"}.
"""

import json
import os
import resource
import shutil
import sys
import time

START = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import megatron_peer  # noqa: E402
from dcp_peer import save_safetensors  # noqa: E402


def to_hf(state, config):
    heads, groups = config["num_attention_heads"], config["num_key_value_heads"]
    hidden = config["hidden_size"]
    hd = hidden // heads
    per_group = heads // groups
    out = {"model.embed_tokens.weight": state["embedding.word_embeddings.weight"]}
    layers = state["decoder.layers.self_attention.linear_qkv.weight"].shape[0]
    for i in range(layers):
        p = f"model.layers.{i}."
        qkv = state["decoder.layers.self_attention.linear_qkv.weight"][i]
        qkv = qkv.reshape(groups, (per_group + 2) * hd, qkv.shape[-1])
        out[p + "self_attn.q_proj.weight"] = qkv[:, :per_group * hd].reshape(-1, qkv.shape[-1])
        out[p + "self_attn.k_proj.weight"] = qkv[:, per_group * hd:(per_group + 1) * hd].reshape(-1, qkv.shape[-1])
        out[p + "self_attn.v_proj.weight"] = qkv[:, (per_group + 1) * hd:].reshape(-1, qkv.shape[-1])
        out[p + "self_attn.o_proj.weight"] = state["decoder.layers.self_attention.linear_proj.weight"][i]
        fc1 = state["decoder.layers.mlp.linear_fc1.weight"][i]
        out[p + "mlp.gate_proj.weight"], out[p + "mlp.up_proj.weight"] = fc1.chunk(2, dim=0)
        out[p + "mlp.down_proj.weight"] = state["decoder.layers.mlp.linear_fc2.weight"][i]
        out[p + "input_layernorm.weight"] = state["decoder.layers.self_attention.linear_qkv.layer_norm_weight"][i]
        out[p + "post_attention_layernorm.weight"] = state["decoder.layers.mlp.linear_fc1.layer_norm_weight"][i]
    out["model.norm.weight"] = state["decoder.final_layernorm.weight"]
    out["lm_head.weight"] = state["output_layer.weight"]
    return {k: v.contiguous() for k, v in out.items()}


def main(argv):
    src, base, out = argv
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)
    state = megatron_peer.load_weights(src)
    tensors = to_hf(state, config)
    del state
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.safetensors")
    save_safetensors(tensors, path)
    for name in os.listdir(base):
        if not name.endswith((".safetensors", ".index.json")):
            shutil.copyfile(os.path.join(base, name), os.path.join(out, name))
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    print(json.dumps({"wall_s": round(time.monotonic() - START, 3),
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "tensors": len(tensors), "bytes": os.path.getsize(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
