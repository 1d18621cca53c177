#!/usr/bin/python3
"""Plain-torch ports of Hugging Face transformers' causal-LM forward passes (issue 28).

Runs on Debian 12's torch 1.13 (/usr/bin/python3), without transformers: the export tests use
it to prove that a folder zerofold (or a reference converter) writes computes what the trainer's
model computed. Each family follows transformers' own modeling file, eager attention path,
no cache, no padding mask (a full causal batch), in float32 (a bfloat16 folder is upcast, so the
ported arithmetic is the float32 one):

| model_type | file (huggingface/transformers)                             | version read |
|------------|-------------------------------------------------------------|--------------|
| llama      | src/transformers/models/llama/modeling_llama.py             | 002272831fba584eb30dca9729c1be456836960a (an older form: head_dim = hidden/heads there; newer ones read config.head_dim, as qwen3's) |
| qwen2      | src/transformers/models/qwen2/modeling_qwen2.py             | 00d4b3d2142cb4ced2f51b90614b5d26bc045015 |
| qwen3      | src/transformers/models/qwen3/modeling_qwen3.py             | its attention/MLP/norm as in modeling_qwen3_moe.py below (Qwen3MoeAttention is generated from Qwen3Attention) |
| qwen3_moe  | src/transformers/models/qwen3_moe/modeling_qwen3_moe.py     | 16b6c53c8ec3a720bd45c1c377bf94e1d01249c5 |
| mixtral    | src/transformers/models/mixtral/modeling_mixtral.py         | the 4.x form (MixtralSparseMoeBlock: gate + ModuleList of w1/w2/w3 experts, softmax, top-k, renormalised); not re-read at a commit here |
| deepseek_v3| src/transformers/models/deepseek_v3/modeling_deepseek_v3.py | 00b676f8f0489b88652a31d70751cc540dd06305 |

transformers' own code was not run: Debian has no python3-transformers (nor tokenizers /
huggingface-hub), PyPI is unreachable here and the repository snapshot (1.3 GB) is over what
can be fetched, so this port was checked against Megatron's forward only (through the cases).

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
- DeepseekV3Attention (MLA): q = q_b_proj(q_a_layernorm(q_a_proj(x))) (or q_proj when q_lora_rank
  is None), view [heads, nope + rope], split; kv_a_proj_with_mqa -> [kv_lora_rank | rope], k_pass =
  kv_b_proj(kv_a_layernorm(.)) view [heads, nope + v] split into k_nope, v; the rope parts through
  apply_rotary_pos_emb_interleave (rope_interleave, the default) or apply_rotary_pos_emb, k_rot shared
  by all heads; scaling qk_head_dim^-0.5 (rope_scaling None only). q_a_layernorm and
  kv_a_layernorm are DeepseekV3RMSNorm(dim) with the default eps 1e-6, not rms_norm_eps.
  DeepseekV3TopkRouter: sigmoid(gate(x)) in float32, + e_score_correction_bias for the choice,
  n_group groups scored by their top-2 sum, topk_group groups kept, top-k of the kept, weights the
  un-biased scores renormalised (norm_topk_prob, + 1e-20) times routed_scaling_factor;
  DeepseekV3MoE adds shared_experts (MLP of moe_intermediate_size * n_shared_experts); layers
  below first_k_dense_replace are dense MLPs. The MTP layers (model.layers.<num_hidden_layers +
  j>, j < num_nextn_predict_layers) are not part of the model: transformers ignores them on load
  (DeepseekV3PreTrainedModel._keys_to_ignore_on_load_unexpected), so does this port.
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

FAMILIES = ("llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3")


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


def mtp_layer(c, name):
    """A DeepSeek-V3 multi-token-prediction layer's name (loaded by nobody, ignored here)."""
    if c["model_type"] != "deepseek_v3" or not name.startswith("model.layers."):
        return False
    i = int(name.split(".")[2])
    return c["num_hidden_layers"] <= i < c["num_hidden_layers"] + c.get("num_nextn_predict_layers", 0)


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
        if c["model_type"] == "deepseek_v3":
            names += _deepseek_v3_names(c, i, p)
            continue
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


def _deepseek_v3_names(c, i, p):
    """DeepseekV3DecoderLayer's names below input/post_attention_layernorm."""
    a = p + "self_attn."
    names = [a + "kv_a_proj_with_mqa.weight", a + "kv_a_layernorm.weight", a + "kv_b_proj.weight", a + "o_proj.weight"]
    if c.get("q_lora_rank") is None:
        names.append(a + "q_proj.weight")
    else:
        names += [a + "q_a_proj.weight", a + "q_a_layernorm.weight", a + "q_b_proj.weight"]
    if c.get("attention_bias", False):
        names += [a + "kv_a_proj_with_mqa.bias", a + "o_proj.bias"] + \
            ([a + "q_a_proj.bias"] if c.get("q_lora_rank") is not None else [])
    m = p + "mlp."
    mlp = [m + f"{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]
    if i < c["first_k_dense_replace"]:
        return names + mlp
    names += [m + "gate.weight", m + "gate.e_score_correction_bias"]
    for e in range(c["n_routed_experts"]):
        names += [f"{m}experts.{e}.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]
    return names + [f"{m}shared_experts.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]


def _rms_norm(x, w, eps):
    x = x.float()
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _llama3_inv_freq(inv_freq, rs):
    """transformers' modeling_rope_utils._compute_llama3_parameters: wavelengths longer than
    original_max_position_embeddings / low_freq_factor are divided by factor, those shorter
    than original / high_freq_factor kept, those between interpolated smoothly."""
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    between = (wavelen <= old / low) & (wavelen >= old / high)
    return torch.where(between, (1 - smooth) * scaled / factor + smooth * scaled, scaled)


def _rope(c, seq):
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) != "llama3":
        raise NotImplementedError(f"rope_scaling {rs!r}: only the default and llama3 RoPE are ported")
    if c["model_type"] == "deepseek_v3":
        d = c["qk_rope_head_dim"]
    else:
        d = int(_head_dim(c) * c.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    if rs:
        inv_freq = _llama3_inv_freq(inv_freq, rs)
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
    out = _attend(q, k, v, hd ** -0.5).transpose(1, 2).reshape(b, s, nh * hd)
    return _linear(out, w, p + "o_proj")


def _attend(q, k, v, scaling):
    """eager_attention_forward after repeat_kv: causal softmax(q k^T * scaling) v."""
    scores = torch.matmul(q, k.transpose(2, 3)) * scaling
    s = scores.shape[-1]
    mask = torch.full((s, s), torch.finfo(scores.dtype).min).triu(1)
    return torch.matmul(F.softmax(scores + mask, dim=-1, dtype=torch.float32), v)


def _mla_attention(c, w, p, x, cos, sin):
    b, s, _ = x.shape
    nh, nope, rope, vd = c["num_attention_heads"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    if c.get("q_lora_rank") is None:
        q = _linear(x, w, p + "q_proj")
    else:
        q = _linear(_rms_norm(_linear(x, w, p + "q_a_proj"), w[p + "q_a_layernorm.weight"], 1e-6), w, p + "q_b_proj")
    q = q.view(b, s, nh, nope + rope).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [nope, rope], dim=-1)
    k_pass, k_rot = torch.split(_linear(x, w, p + "kv_a_proj_with_mqa"), [c["kv_lora_rank"], rope], dim=-1)
    k_pass = _linear(_rms_norm(k_pass, w[p + "kv_a_layernorm.weight"], 1e-6), w, p + "kv_b_proj")
    k_pass, v = torch.split(k_pass.view(b, s, nh, nope + vd).transpose(1, 2), [nope, vd], dim=-1)
    k_rot = k_rot.view(b, 1, s, rope)
    if c.get("rope_interleave", True):  # apply_rotary_pos_emb_interleave
        q_rot = q_rot.reshape(b, nh, s, rope // 2, 2).transpose(4, 3).reshape(b, nh, s, rope)
        k_rot = k_rot.reshape(b, 1, s, rope // 2, 2).transpose(4, 3).reshape(b, 1, s, rope)
    q_rot = q_rot * cos + _rotate_half(q_rot) * sin
    k_rot = (k_rot * cos + _rotate_half(k_rot) * sin).expand(b, nh, s, rope)
    q, k = torch.cat((q_pass, q_rot), dim=-1), torch.cat((k_pass, k_rot), dim=-1)
    out = _attend(q, k, v, (nope + rope) ** -0.5).transpose(1, 2).reshape(b, s, nh * vd)
    return _linear(out, w, p + "o_proj")


def _deepseek_v3_moe(c, w, p, x):
    b, s, h = x.shape
    x = x.reshape(-1, h)
    n, groups = c["n_routed_experts"], c["n_group"]
    scores = F.linear(x.float(), w[p + "gate.weight"].float()).sigmoid()
    choice = scores + w[p + "gate.e_score_correction_bias"][None]
    group_scores = choice.view(-1, groups, n // groups).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=c["topk_group"], dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
    keep = group_mask.unsqueeze(-1).expand(-1, groups, n // groups).reshape(-1, n)
    chosen = torch.topk(choice.masked_fill(~keep.bool(), 0.0), k=c["num_experts_per_tok"], dim=-1, sorted=False)[1]
    top = scores.gather(1, chosen)
    if c.get("norm_topk_prob", False):
        top = top / (top.sum(dim=-1, keepdim=True) + 1e-20)
    top = top * c["routed_scaling_factor"]
    out = torch.zeros_like(x)
    for e in range(n):
        rows, slot = torch.where(chosen == e)
        if rows.numel():
            out.index_add_(0, rows, _mlp(w, f"{p}experts.{e}.", x[rows]) * top[rows, slot, None])
    return (out + _mlp(w, p + "shared_experts.", x)).reshape(b, s, h)


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
    missing = sorted(set(want) - set(weights))
    extra = sorted(k for k in set(weights) - set(want) if not mtp_layer(c, k))
    if missing or extra:
        raise KeyError(f"weights do not match a {c['model_type']} model: missing {missing[:8]}, extra {extra[:8]}")
    w = {k: v.float() for k, v in weights.items() if k in want}
    eps = c["rms_norm_eps"]
    x = F.embedding(tokens, w["model.embed_tokens.weight"])
    cos, sin = _rope(c, tokens.shape[1])
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        attention = _mla_attention if c["model_type"] == "deepseek_v3" else _attention
        x = x + attention(c, w, p + "self_attn.", _rms_norm(x, w[p + "input_layernorm.weight"], eps), cos, sin)
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if c["model_type"] == "deepseek_v3":
            dense = i < c["first_k_dense_replace"]
            x = x + (_mlp(w, p + "mlp.", h) if dense else _deepseek_v3_moe(c, w, p + "mlp.", h))
        elif c["model_type"] == "mixtral":
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
