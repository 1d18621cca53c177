#!/usr/bin/python3
"""Benchmark of `zerofold merge CKPT OUT --hf BASE` (issue 28) on bench/megatron_gen.py's synthetic
Megatron-Core torch_dist checkpoint (TP2 x PP2, Llama-like: GQA 16 heads / 4 groups, SwiGLU,
12 stacked layers, about 1.3 GB of weights).

1. megatron_gen.py writes the checkpoint; BASE is a Llama config.json, a tokenizer file and a
   model.safetensors whose header lists the Hugging Face names and shapes (bf16) and whose data
   is a hole (a sparse file: merge --hf reads BASE's header only).
2. One untimed export; its model.safetensors is the floor's input.
3. Alternating runs, ROUNDS of each, in rotating order (page cache dropped before each where
   permitted; outputs removed and `sync` first):
     zerofold  zerofold merge CKPT OUT --hf BASE (unstack, qkv split per query group, gate/up,
               norms, every tensor cast to BASE's bf16; includes its fsync)
     floor     cat of the export's model.safetensors to a new file, then sync
     peer      bench/megatron_peer.py: every tensor at full size, torch's DCP load_state_dict, one
               safetensors save: the load a converter makes before its mapping step (slime's
               convert_torch_dist_to_hf.py holds the whole model in RAM the same way); the
               mapping itself is not timed, so the peer's numbers are a lower bound.
4. Medians and ratios printed and appended to bench/RESULTS.md.

usage: bench/hfexport_bench.py [--build build] [--work DIR] [--rounds 3] [--warm] [--keep] [--no-results]
"""

import argparse
import datetime
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
sys.path.insert(0, HERE)
from merge_bench import machine, publish, run_measured, summary_table  # noqa: E402
from parts_bench import cache_text, drop_caches, loadavg  # noqa: E402

# megatron_gen.py's defaults.
HIDDEN, FFN, LAYERS, VOCAB, HEADS, GROUPS = 2048, 5632, 12, 32000, 16, 4


def write_base(base):
    os.makedirs(base, exist_ok=True)
    kv = HIDDEN // HEADS * GROUPS
    with open(os.path.join(base, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": HIDDEN,
                   "intermediate_size": FFN, "num_attention_heads": HEADS, "num_key_value_heads": GROUPS,
                   "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "tie_word_embeddings": False}, f)
    with open(os.path.join(base, "tokenizer.json"), "w") as f:
        f.write("{}\n")
    shapes = {"model.embed_tokens.weight": [VOCAB, HIDDEN], "model.norm.weight": [HIDDEN], "lm_head.weight": [VOCAB, HIDDEN]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.update({p + "self_attn.q_proj.weight": [HIDDEN, HIDDEN], p + "self_attn.k_proj.weight": [kv, HIDDEN],
                       p + "self_attn.v_proj.weight": [kv, HIDDEN], p + "self_attn.o_proj.weight": [HIDDEN, HIDDEN],
                       p + "mlp.gate_proj.weight": [FFN, HIDDEN], p + "mlp.up_proj.weight": [FFN, HIDDEN],
                       p + "mlp.down_proj.weight": [HIDDEN, FFN], p + "input_layernorm.weight": [HIDDEN],
                       p + "post_attention_layernorm.weight": [HIDDEN]})
    header, at = {}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(base, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + at)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "hfexport_bench_data"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")
    ckpt, base, out = (os.path.join(args.work, n) for n in ("ckpt", "base", "out"))
    try:
        shutil.rmtree(args.work, ignore_errors=True)
        os.makedirs(out)
        subprocess.run(["nice", PY, os.path.join(HERE, "megatron_gen.py"), ckpt], check=True)
        write_base(base)
        ref = os.path.join(args.work, "ref")
        subprocess.run([zerofold, "merge", "--quiet", "--verify", ckpt, ref, "--hf", base], check=True)
        ref_file = os.path.join(ref, "model.safetensors")
        out_bytes = os.path.getsize(ref_file)
        zf_dir, floor_file, peer_file = (os.path.join(out, n) for n in ("zf", "floor.safetensors", "peer.safetensors"))
        commands = {
            "zerofold": [zerofold, "merge", "--quiet", "--no-progress", ckpt, zf_dir, "--hf", base],
            "floor": ["sh", "-c", f"cat '{ref_file}' > '{floor_file}' && sync"],
            "peer": [PY, os.path.join(HERE, "megatron_peer.py"), ckpt, peer_file],
        }
        results = {name: [] for name in commands}
        loads, dropped = [], []
        order = list(commands)
        for round_ in range(args.rounds):
            for name in order[round_ % 3:] + order[:round_ % 3]:
                shutil.rmtree(zf_dir, ignore_errors=True)
                for f in (floor_file, peer_file):
                    if os.path.exists(f):
                        os.remove(f)
                subprocess.run(["sync"], check=True)
                dropped.append(drop_caches(args.warm))
                loads.append(loadavg())
                wall, rss = run_measured(commands[name])
                results[name].append((wall, rss))
                print(f"round {round_ + 1} {name:9s} {wall:8.2f} s  peak RSS {rss / 2**20:8.1f} MiB", flush=True)
        cache = cache_text(dropped, args.warm)
        lines = [
            f"## merge --hf: synthetic Megatron-Core checkpoint to a Hugging Face Llama folder "
            f"({datetime.date.today().isoformat()})",
            "",
            f"Machine: {machine()}; shared with other jobs (load average {min(loads):.1f} to {max(loads):.1f}).",
            f"bench/hfexport_bench.py: bench/megatron_gen.py's TP2 x PP2 checkpoint exported with --hf to "
            f"{LAYERS * 9 + 3} HF tensors in BASE's bf16, one model.safetensors of {out_bytes / 1e9:.2f} GB. "
            f"The peer is the load half of a converter (full-size tensors, DCP load, save; no mapping). "
            f"Medians of {args.rounds} alternating runs; {cache}.",
            "",
        ] + summary_table(results, (("zerofold", "zerofold merge --hf (incl. fsync)"),
                                    ("floor", "floor: cat output + sync"),
                                    ("peer", "peer: full-size tensors + DCP load_state_dict + save")),
                          "<= 1.2x", "<= 64 MiB")
        publish(lines, args.no_results)
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
