#!/usr/bin/python3
"""Benchmark of `zerofold merge CKPT OUT --hf BASE`: a synthetic Megatron-Core torch_dist
checkpoint (TP2 x PP2, Llama-like: GQA, SwiGLU, untied output layer) exported as a Hugging Face
Llama folder.

1. bench/megatron_gen.py writes the checkpoint (about 1.55 GB of bf16/fp32 weights, 8 .distcp
   files; the layout of fixtures/megatron, see its docstring).
2. write_base() writes the BASE folder the training "started from": config.json (model_type
   llama, the generator's sizes), generation_config.json, tokenizer_config.json, and
   model.safetensors whose header lists the Hugging Face names, shapes and dtypes (its data is a
   hole: the file is sparse, only the header is read).
3. One untimed `zerofold merge --hf BASE --verify` checks the export against the chunks; its
   output is kept as the floor's input.
4. Alternating runs, ROUNDS of each, in rotating order:
     zerofold  zerofold merge --hf BASE CKPT OUT/ (includes its fsync)
     floor     cat of the output's safetensors bytes to new files, then sync
     peer      bench/hf_export_peer.py: every tensor at full size through torch 1.13's DCP
               load_state_dict, the mapping in torch, one safetensors save (slime's and verl's
               approach on a CPU node)
   Outputs removed and `sync` run before each run; the page cache dropped where permitted.
5. The peer's tensors are compared with zerofold's (sha256 of each tensor's bytes, by name).
6. Medians and ratios printed and appended to bench/RESULTS.md with the machine and date.

usage: bench/hf_export_bench.py [--build build] [--work DIR] [--ckpt DIR] [--rounds 3] [--warm] [--keep]
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
NEEDED_FREE = 8 * 10**9  # 1.55 GB of input, 4 outputs of 1.55 GB, margin

sys.path.insert(0, HERE)
from dcp_bench import check_same_tensors, folder_digests  # noqa: E402
from merge_bench import machine, publish, summary_table  # noqa: E402
from parts_bench import alternate, cache_text  # noqa: E402

# bench/megatron_gen.py's defaults
LAYERS, HIDDEN, FFN, HEADS, GROUPS, VOCAB = 12, 2048, 5632, 16, 4, 32000


def hf_tensors():
    """(name, dtype, shape) of the Llama export, in Hugging Face's order."""
    kv = HIDDEN // HEADS * GROUPS
    out = [("model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN])]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", "F32", [HIDDEN]),
                (p + "self_attn.q_proj.weight", "BF16", [HIDDEN, HIDDEN]),
                (p + "self_attn.k_proj.weight", "BF16", [kv, HIDDEN]),
                (p + "self_attn.v_proj.weight", "BF16", [kv, HIDDEN]),
                (p + "self_attn.o_proj.weight", "BF16", [HIDDEN, HIDDEN]),
                (p + "post_attention_layernorm.weight", "F32", [HIDDEN]),
                (p + "mlp.gate_proj.weight", "BF16", [FFN, HIDDEN]),
                (p + "mlp.up_proj.weight", "BF16", [FFN, HIDDEN]),
                (p + "mlp.down_proj.weight", "BF16", [HIDDEN, FFN])]
    out += [("model.norm.weight", "F32", [HIDDEN]), ("lm_head.weight", "BF16", [VOCAB, HIDDEN])]
    return out


def write_base(base):
    os.makedirs(base, exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "intermediate_size": FFN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "num_key_value_heads": GROUPS, "vocab_size": VOCAB, "tie_word_embeddings": False,
              "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 4096,
              "hidden_act": "silu", "torch_dtype": "bfloat16"}
    with open(os.path.join(base, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(base, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f)
    with open(os.path.join(base, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096}, f)
    header, pos = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape in hf_tensors():
        n = (2 if dtype == "BF16" else 4)
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [pos, pos + n]}
        pos += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(base, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + pos)  # a hole: only the header is ever read


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "hf_export_bench_data"))
    ap.add_argument("--ckpt", help="a folder bench/megatron_gen.py wrote (not removed)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="keep the page cache (no drop between runs)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")

    os.makedirs(args.work, exist_ok=True)
    free = shutil.disk_usage(args.work).free
    if free < NEEDED_FREE and not args.ckpt:
        sys.exit(f"need {NEEDED_FREE / 1e9:.0f} GB free in {args.work}, have {free / 1e9:.1f} GB")
    ckpt = args.ckpt or os.path.join(args.work, "ckpt")
    base = os.path.join(args.work, "base")
    out = os.path.join(args.work, "out")
    try:
        if not args.ckpt:
            shutil.rmtree(ckpt, ignore_errors=True)
            start = time.monotonic()
            subprocess.run(["nice", PY, os.path.join(HERE, "megatron_gen.py"), ckpt], check=True)
            print(f"generated in {time.monotonic() - start:.1f} s")
        shutil.rmtree(base, ignore_errors=True)
        write_base(base)

        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        ref = os.path.join(out, "ref")
        verify = subprocess.run([zerofold, "merge", "--verify", "--json", "--hf", base, ckpt, ref], check=True,
                                capture_output=True, text=True)
        summary = json.loads(verify.stdout)
        ref_files = sorted(glob.glob(os.path.join(ref, "*.safetensors")))
        out_bytes = sum(os.path.getsize(p) for p in ref_files)
        print(f"verified {summary['verified']['tensors']} tensors; output {out_bytes} bytes in {len(ref_files)} files")

        zf_dir = os.path.join(out, "zf")
        floor_dir = os.path.join(out, "floor")
        peer_dir = os.path.join(out, "peer")
        cats = " && ".join(f"cat '{p}' > '{floor_dir}/{os.path.basename(p)}'" for p in ref_files)
        commands = {
            "zerofold": [zerofold, "merge", "--quiet", "--no-progress", "--hf", base, ckpt, zf_dir],
            "floor": ["sh", "-c", f"mkdir '{floor_dir}' && {cats} && sync"],
            "peer": [PY, os.path.join(HERE, "hf_export_peer.py"), ckpt, base, peer_dir],
        }
        outputs = {"zerofold": zf_dir, "floor": floor_dir, "peer": peer_dir}
        results, loads, dropped = alternate(commands, outputs, args.rounds, args.warm)
        ours = folder_digests(zf_dir)
        check_same_tensors(ours, folder_digests(peer_dir))

        cache = cache_text(dropped, args.warm)
        lines = [
            f"## merge --hf: synthetic Megatron-Core torch_dist checkpoint (TP2 x PP2) to a Hugging Face Llama "
            f"folder ({datetime.date.today().isoformat()})",
            "",
            f"Machine: {machine()}; shared with other jobs (load average {min(loads):.1f} to {max(loads):.1f} "
            f"during the runs), so absolute times are noisy.",
            f"Checkpoint: bench/megatron_gen.py (12 stacked layers, hidden 2048, 16 heads in 4 query groups, "
            f"SwiGLU ffn 5632, vocab 32000). Output: {len(ours)} Hugging Face tensors (qkv split per query "
            f"group, fc1 split, layers unstacked) in {len(ref_files)} safetensors file(s), {out_bytes / 1e9:.2f} GB. "
            f"Medians of {args.rounds} alternating runs; {cache}.",
            "",
        ] + summary_table(results, (("zerofold", "zerofold merge --hf BASE (incl. fsync)"),
                                    ("floor", "floor: cat output + sync"),
                                    ("peer", "peer: full-size DCP load + mapping in torch + save")),
                          "<= 1.2x", "<= 64 MiB")
        publish(lines, args.no_results)
    finally:
        if not args.keep:
            if not args.ckpt:
                shutil.rmtree(ckpt, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
