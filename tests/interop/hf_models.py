#!/usr/bin/python3
"""Plain-torch ports of Hugging Face transformers' causal-LM forward passes (issue 28).

Runs on Debian 12's torch 1.13 (/usr/bin/python3), without transformers: the export tests use
it to prove that a folder zerofold (or a reference converter) writes computes what the trainer's
model computed. Each family follows transformers' own modeling file, eager attention path,
no cache, no padding mask (a full causal batch), in float32 (a bfloat16 folder is upcast, so the
ported arithmetic is the float32 one):

| model_type | file (huggingface/transformers)                                  | commit read |
|------------|------------------------------------------------------------------|-------------|
| llama      | src/transformers/models/llama/modeling_llama.py                  | see LLAMA   |
| qwen2      | src/transformers/models/qwen2/modeling_qwen2.py                  | 00d4b3d2142cb4ced2f51b90614b5d26bc045015 |
| qwen3      | src/transformers/models/qwen3/modeling_qwen3.py                  | see QWEN3   |
| qwen3_moe  | src/transformers/models/qwen3_moe/modeling_qwen3_moe.py          | 16b6c53c8ec3a720bd45c1c377bf94e1d01249c5 |
| mixtral    | src/transformers/models/mixtral/modeling_mixtral.py              | see MIXTRAL |

What each piece ports (names as in those files):
- *RMSNorm.forward: x.float() * rsqrt(mean(x^2) + eps), times weight.
- *RotaryEmbedding (rope_type "default", rope_scaling None): inv_freq = 1 / theta^(arange(0, d, 2)/d),
  emb = cat(freqs, freqs), cos/sin; apply_rotary_pos_emb with rotate_half (non-interleaved).
- *Attention.forward + eager_attention_forward + repeat_kv: q/k/v projections (bias: qwen2
  always on q/k/v, llama/qwen3/qwen3_moe/mixtral per `attention_bias`), view [.., heads, head_dim]
  (head_dim = config.head_dim or hidden/heads), qwen3/qwen3_moe: q_norm/k_norm on head_dim
  before RoPE, scores * head_dim^-0.5 + causal mask, softmax in float32, o_proj.
- *MLP: down_proj(silu(gate_proj(x)) * up_proj(x)).
- Qwen3MoeSparseMoeBlock: softmax(gate(x)) in float32, topk, renormalise if norm_topk_prob, each
  expert's MLP times its weight, summed (index_add_); dense MLP for layers in mlp_only_layers or
  (i+1) % decoder_sparse_step != 0. MixtralSparseMoeBlock: the same with w1 (gate), w3 (up),
  w2 (down) and always renormalised.
- *DecoderLayer: pre-norm residual blocks; *Model: embed_tokens, layers, norm; *ForCausalLM:
  lm_head (embed_tokens.weight when tie_word_embeddings).

API: load(folder) -> (config dict, OrderedDict name -> tensor); logits(config, weights, tokens) ->
float32 [batch, seq, vocab_size]. The weights must be exactly the names the family's model
declares for that config (missing or extra names raise KeyError naming them).
"""

import collections
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_oracle import load_safetensors  # noqa: E402

LLAMA = "src/transformers/models/llama/modeling_llama.py"
QWEN3 = "src/transformers/models/qwen3/modeling_qwen3.py"
MIXTRAL = "src/transformers/models/mixtral/modeling_mixtral.py"
FAMILIES = ("llama", "qwen2", "qwen3", "qwen3_moe", "mixtral")


def load(folder):
    """config.json and the weights of a Hugging Face folder (model.safetensors, or the shards
    model.safetensors.index.json names)."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    index = os.path.join(folder, "model.safetensors.index.json")
    weights = collections.OrderedDict()
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for name in files:
        for k, v in load_safetensors(os.path.join(folder, name)).items():
            if k in weights:
                raise KeyError(f"{folder}: {k} is in two shards")
            weights[k] = v
    return config, weights


def _head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def _attention_bias(c):
    return True if c["model_type"] == "qwen2" else bool(c.get("attention_bias", False))


def _qk_norm(c):
    return c["model_type"] in ("qwen3", "qwen3_moe")


def _is_sparse(c, i):
    if c["model_type"] == "qwen3_moe":
        return i not in c.get("mlp_only_layers", []) and c["num_experts"] > 0 and \
            (i + 1) % c.get("decoder_sparse_step", 1) == 0
    return c["model_type"] == "mixtral"


def expected_names(c):
    """Every parameter name the family's *ForCausalLM declares for config c (persistent)."""
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    if not c.get("tie_word_embeddings", False):
        names.append("lm_head.weight")
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            names.append(f"{p}self_attn.{proj}.weight")
            if _attention_bias(c) and (proj != "o_proj" or c["model_type"] != "qwen2"):
                names.append(f"{p}self_attn.{proj}.bias")
        if _qk_norm(c):
            names += [p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight"]
        if c["model_type"] == "mixtral":
            names.append(p + "block_sparse_moe.gate.weight")
            for e in range(c["num_local_experts"]):
                names += [f"{p}block_sparse_moe.experts.{e}.{w}.weight" for w in ("w1", "w2", "w3")]
        elif _is_sparse(c, i):
            names.append(p + "mlp.gate.weight")
            for e in range(c["num_experts"]):
                names += [f"{p}mlp.experts.{e}.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]
        else:
            names += [f"{p}mlp.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]
    if c["model_type"] == "llama" and c.get("mlp_bias", False):
        raise NotImplementedError("llama mlp_bias")
    return names


def _rms_norm(x, w, eps):
    x = x.float()
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rope(c, seq):
    if c.get("rope_scaling"):
        raise NotImplementedError(f"rope_scaling {c['rope_scaling']!r}: only the default RoPE is ported")
    d = int(_head_dim(c) * c.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.arange(seq).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _linear(x, w, name):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def _attention(c, w, p, x, cos, sin):
    b, s, _ = x.shape
    hd, nh, nkv = _head_dim(c), c["num_attention_heads"], c["num_key_value_heads"]
    q = _linear(x, w, p + "q_proj").view(b, s, nh, hd)
    k = _linear(x, w, p + "k_proj").view(b, s, nkv, hd)
    v = _linear(x, w, p + "v_proj").view(b, s, nkv, hd)
    if _qk_norm(c):
        q = _rms_norm(q, w[p + "q_norm.weight"], c["rms_norm_eps"])
        k = _rms_norm(k, w[p + "k_norm.weight"], c["rms_norm_eps"])
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    q = q * cos + _rotate_half(q) * sin
    k = k * cos + _rotate_half(k) * sin
    rep = nh // nkv  # repeat_kv
    k = k[:, :, None].expand(b, nkv, rep, s, hd).reshape(b, nh, s, hd)
    v = v[:, :, None].expand(b, nkv, rep, s, hd).reshape(b, nh, s, hd)
    scores = torch.matmul(q, k.transpose(2, 3)) * hd ** -0.5
    mask = torch.full((s, s), torch.finfo(scores.dtype).min).triu(1)
    probs = F.softmax(scores + mask, dim=-1, dtype=torch.float32)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, nh * hd)
    return _linear(out, w, p + "o_proj")


def _mlp(w, p, x, gate="gate_proj", up="up_proj", down="down_proj"):
    return F.linear(F.silu(F.linear(x, w[f"{p}{gate}.weight"])) * F.linear(x, w[f"{p}{up}.weight"]),
                    w[f"{p}{down}.weight"])


def _sparse_moe(c, w, p, x):
    b, s, h = x.shape
    x = x.reshape(-1, h)
    mixtral = c["model_type"] == "mixtral"
    n = c["num_local_experts"] if mixtral else c["num_experts"]
    router = F.linear(x, w[p + "gate.weight"])
    probs = F.softmax(router, dim=1, dtype=torch.float)
    top, chosen = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
    if mixtral or c.get("norm_topk_prob", False):
        top = top / top.sum(dim=-1, keepdim=True)
    out = torch.zeros_like(x)
    for e in range(n):
        rows, slot = torch.where(chosen == e)
        if rows.numel() == 0:
            continue
        ep = f"{p}experts.{e}."
        y = _mlp(w, ep, x[rows], "w1", "w3", "w2") if mixtral else _mlp(w, ep, x[rows])
        out.index_add_(0, rows, y * top[rows, slot, None])
    return out.reshape(b, s, h)


def logits(config, weights, tokens):
    """The *ForCausalLM logits (float32 [batch, seq, vocab_size]) of `weights` under `config`."""
    c = config
    if c["model_type"] not in FAMILIES:
        raise NotImplementedError(f"model_type {c['model_type']!r} is not ported (have {', '.join(FAMILIES)})")
    want = expected_names(c)
    missing, extra = sorted(set(want) - set(weights)), sorted(set(weights) - set(want))
    if missing or extra:
        raise KeyError(f"weights do not match a {c['model_type']} model: missing {missing[:8]}, extra {extra[:8]}")
    w = {k: v.float() for k, v in weights.items()}
    eps = c["rms_norm_eps"]
    x = F.embedding(tokens, w["model.embed_tokens.weight"])
    cos, sin = _rope(c, tokens.shape[1])
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = x + _attention(c, w, p + "self_attn.", _rms_norm(x, w[p + "input_layernorm.weight"], eps), cos, sin)
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if c["model_type"] == "mixtral":
            x = x + _sparse_moe(c, w, p + "block_sparse_moe.", h)
        elif _is_sparse(c, i):
            x = x + _sparse_moe(c, w, p + "mlp.", h)
        else:
            x = x + _mlp(w, p + "mlp.", h)
    x = _rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings", False) else w["lm_head.weight"]
    out = F.linear(x, head)
    assert out.shape[-1] == c["vocab_size"] and not math.isnan(float(out.abs().max()))
    return out


if __name__ == "__main__":  # hf_models.py FOLDER TOKENS.pt: print the logits' shape and max
    cfg, wts = load(sys.argv[1])
    print(logits(cfg, wts, torch.load(sys.argv[2])).abs().max())
