#!/usr/bin/env bash
# merge --hf BASE (issue 28): a Megatron-Core fixture (NeMo layout, TP2, GQA, SwiGLU, stacked
# layers, padded vocab) and a TorchTitan-named DCP fixture exported to Hugging Face folders whose
# BASE was built by tests/cli/hfexport_base.py (the fixture's expected tensors mapped by plain
# torch code, independently of the tables): OUT's tensors equal BASE's bit for bit, BASE's
# config and tokenizer files are copied byte for byte, --max-shard-size / --part / --verify /
# --dry-run / --force keep working; and every refusal (names missing, extra, of another shape;
# unmapped trainer tensors; no table; bad table JSON; OUT a file) exits non-zero with no output.
#
# Run: ZEROFOLD=build/zerofold bash tests/cli/hfexport_test.sh
source "$(dirname "$0")/lib.sh"

G=$F/megatron/gpt_gqa_swiglu_nemo
TITAN=$F/dcp/titan_ws2
HB="$PY $ZF_ROOT/tests/cli/hfexport_base.py"

# expect_rc NAME WANT_RC GREP: the last run_z exited WANT_RC and its stderr holds GREP.
expect_rc() {
  if [ "$RC" = "$2" ] && { [ -z "$3" ] || grep -qF -- "$3" "$ERR"; }; then ok; else bad "$1" "exit $RC (want $2): $(cat "$ERR")"; fi
}
# expect_equal NAME OUT BASE: OUT's tensors are BASE's (names, shapes, dtypes, bits).
expect_equal() {
  if $HB compare "$2" "$3" >"$T/.cmp" 2>&1; then ok; else bad "$1" "$(tail -3 "$T/.cmp")"; fi
}

# --- exports that match BASE ---
$HB megatron "$G" "$T/base" --vocab 100
run_z merge "$G/ckpt" "$T/out" --hf "$T/base"
expect_rc "megatron llama export" 0 ""
expect_equal "megatron llama: qkv per group, gate/up, fused norms, vocab 128 -> 100" "$T/out" "$T/base"
for f in config.json generation_config.json tokenizer.json; do
  expect_true "BASE's $f copied byte for byte" "cmp -s '$T/base/$f' '$T/out/$f'"
done
expect_true "the stdout names the table" "grep -q 'builtin:tables/hf/megatron_llama.json' '$OUT'"

run_z merge "$G/ckpt" "$T/out" --hf "$T/base"
expect_rc "an existing export is refused without --force" 2 "exists"
run_z merge --force --verify "$G/ckpt" "$T/out" --hf "$T/base"
expect_rc "--force --verify" 0 ""
expect_true "--verify reports" "grep -q '^verified 39 tensors' '$OUT'"
expect_equal "--force --verify output" "$T/out" "$T/base"

run_z merge --dry-run "$G/ckpt" "$T/dry" --hf "$T/base"
expect_rc "--dry-run" 0 ""
expect_true "--dry-run writes nothing" "[ ! -e '$T/dry' ]"
expect_true "--dry-run lists the HF names and their pieces" \
  "grep -q '^  model.layers.3.self_attn.k_proj.weight  bfloat16 \[16, 32\]  2 chunks' '$OUT'"

run_z merge --json --dry-run "$G/ckpt" "$T/dry" --hf "$T/base"
expect_true "--json names the table" "grep -q '\"table\":\"builtin:tables/hf/megatron_llama.json\"' '$OUT'"

$HB megatron "$G" "$T/base32" --vocab 100 --dtype float32
run_z merge --max-shard-size 20KB "$G/ckpt" "$T/shards" --hf "$T/base32"
expect_rc "BASE's float32 dtype, sharded" 0 ""
expect_true "shards and an index" "[ -f '$T/shards/model.safetensors.index.json' ] && [ -f '$T/shards/model-00012-of-00012.safetensors' ]"
expect_equal "bf16 trainer tensors widened to BASE's float32" "$T/shards" "$T/base32"

run_z merge --dtype float32 "$G/ckpt" "$T/cast" --hf "$T/base"
expect_rc "--dtype float32 over a bf16 BASE" 0 ""
expect_true "--dtype overrides BASE's dtype" "$PY -c \"
import sys; sys.path.insert(0, '$ZF_ROOT/tests/cli'); import hfexport_base as h, torch
o = h.load_folder('$T/cast'); assert all(t.dtype == torch.float32 for t in o.values())\""

for p in 0/2 1/2 finish; do run_z merge --part $p --max-shard-size 20KB "$G/ckpt" "$T/parts" --hf "$T/base32"; done
expect_rc "--part 0/2, 1/2, finish" 0 ""
expect_equal "--part output" "$T/parts" "$T/base32"

# A BASE of pytorch_model.bin (its pickle read for names, dtypes and shapes).
mkdir -p "$T/base_bin"
cp "$T/base/config.json" "$T/base/tokenizer.json" "$T/base/generation_config.json" "$T/base_bin/"
run_z convert "$T/base/model.safetensors" "$T/base_bin/pytorch_model.bin"
run_z merge "$G/ckpt" "$T/out_bin" --hf "$T/base_bin"
expect_rc "a pytorch_model.bin BASE" 0 ""
expect_equal "export against a pytorch_model.bin BASE" "$T/out_bin" "$T/base"

# Tied: this checkpoint's output layer was trained apart from the embedding, so a BASE that
# ties them is refused (the table's `tied` op compares the two before writing) ...
$HB megatron "$G" "$T/tied" --vocab 100 --tie
run_z merge "$G/ckpt" "$T/tied_out" --hf "$T/tied"
expect_rc "a tied BASE for an untied head is refused" 1 \
  "$T/tied/config.json: corrupt: config.json ties module.output_layer.weight to module.embedding.word_embeddings.weight, but the checkpoint holds them apart"
expect_true "no output" "[ ! -e '$T/tied_out' ]"
run_z merge --dry-run "$G/ckpt" "$T/tied_out" --hf "$T/tied"
expect_rc "a dry run reads no byte: the tie is not compared" 0 ""
# ... and taken when the two are equal (a table tying the head to itself stands in for a
# checkpoint that saved both, as TorchTitan does).
$PY -c "
import json; t = json.load(open('$ZF_ROOT/tables/hf/megatron_llama.json'))
for r in t['rules']:
    if r.get('op') == 'tied': r['to'] = 'output_layer.weight'
json.dump(t, open('$T/self_tied.json', 'w'))"
run_z merge "$G/ckpt" "$T/tied_out" --hf "$T/tied" --hf-table "$T/self_tied.json"
expect_rc "a tied head equal to its owner" 0 ""
expect_equal "tied export" "$T/tied_out" "$T/tied"
expect_true "the dropped tensor is named" "grep -q 'dropped by rule: module.output_layer.weight' '$OUT'"

$HB megatron "$G" "$T/tied_head" --vocab 100 --tie --stored-lm-head
run_z merge "$G/ckpt" "$T/tied_head_out" --hf "$T/tied_head" --hf-table "$T/self_tied.json"
expect_rc "tied, and BASE stores lm_head.weight too" 0 ""
expect_equal "lm_head.weight written as a copy of the embedding (the table's tie)" "$T/tied_head_out" "$T/tied_head"

$HB titan "$TITAN" "$T/tbase"
run_z merge "$TITAN/ckpt" "$T/tout" --hf "$T/tbase"
expect_rc "TorchTitan llama export" 0 ""
expect_equal "TorchTitan: wq rows permuted to HF's RoPE layout" "$T/tout" "$T/tbase"

# The same model saved in the safetensors form of a DCP (torch 2.8's HuggingFaceStorageWriter).
$HB titan "$F/dcp/v2x_hf_titan_ws2" "$T/tbase2"
run_z merge "$F/dcp/v2x_hf_titan_ws2/ckpt" "$T/tout2" --hf "$T/tbase2"
expect_rc "TorchTitan names in the DCP safetensors form" 0 ""
expect_equal "DCP safetensors form export" "$T/tout2" "$T/tbase2"

# An FSDP Distributed Checkpoint (Accelerate) of a model of any model_type: names one to one.
$HB same "$F/dcp/accelerate_ws4" "$T/abase" --dtype bfloat16
run_z merge "$F/dcp/accelerate_ws4/ckpt" "$T/aout" --hf "$T/abase"
expect_rc "FSDP DCP: the one-to-one table" 0 ""
expect_true "the hf table is named" "grep -q 'hf table builtin:tables/hf/hf_identity.json (hf names)' '$OUT'"
expect_equal "FSDP DCP export in BASE's bfloat16" "$T/aout" "$T/abase"

# verl's per-rank DTensor files (FSDP2, 2 ranks: uneven and empty shards, bf16 and fp32 params,
# int64 and fp32 buffers): names one to one, BASE's copy files (not huggingface/'s) in OUT.
$HB same "$F/ranks/fsdp2_w2" "$T/rbase"
run_z merge "$F/ranks/fsdp2_w2" "$T/rout" --hf "$T/rbase"
expect_rc "per-rank DTensor files: the one-to-one table" 0 ""
expect_true "the hf table is named for rank files" "grep -q 'hf table builtin:tables/hf/hf_identity.json (hf names)' '$OUT'"
expect_equal "per-rank DTensor export" "$T/rout" "$T/rbase"
expect_true "BASE's config.json copied, not huggingface/'s" "cmp -s '$T/rbase/config.json' '$T/rout/config.json'"
$HB same "$F/ranks/fsdp2_w2" "$T/rbase_short" --drop a.norm.weight
run_z merge "$F/ranks/fsdp2_w2" "$T/rout2" --hf "$T/rbase_short"
expect_rc "per-rank DTensor files against a BASE that lacks a name" 1 ""
expect_true "nothing written for the refused rank export" "test ! -e '$T/rout2'"

# --- refusals: exit non-zero, nothing written ---
$HB megatron "$G" "$T/b_missing" --vocab 100 --drop model.norm.weight --extra model.extra.weight \
  --reshape model.layers.0.mlp.up_proj.weight
run_z merge "$G/ckpt" "$T/r1" --hf "$T/b_missing"
expect "names missing, extra and of another shape" 1 \
"zerofold: $T/b_missing: corrupt: the export does not match BASE's weights; 1 missing from the export: model.extra.weight; 1 not in BASE: model.norm.weight; 1 of another shape: model.layers.0.mlp.up_proj.weight [64, 32] (BASE [65, 32]) (mapped by builtin:tables/hf/megatron_llama.json)
"
expect_true "no output" "[ ! -e '$T/r1' ]"
run_z inspect "$G/ckpt" --hf "$T/b_missing"
expect_rc "inspect --hf: why merge --hf refuses" 1 ""
expect_true "inspect --hf names the refusal" "grep -q '^merge --hf $T/b_missing: refuses (.*1 missing from the export: model.extra.weight' '$OUT'"
run_z inspect "$G/ckpt" --hf "$T/base"
expect_rc "inspect --hf" 0 ""
expect_true "inspect --hf: the table and what it writes" \
  "grep -q '^merge --hf $T/base: table builtin:tables/hf/megatron_llama.json (llama, megatron names): 39 tensors, 87.7 KB in 1 file$' '$OUT'"

$HB megatron "$G" "$T/b_vocab" --vocab 200
run_z merge "$G/ckpt" "$T/r2" --hf "$T/b_vocab"
expect_rc "vocab_size past the trainer's rows" 1 "fewer rows than config.json vocab_size 200"

$HB megatron "$G" "$T/b_type" --model-type gpt_neox
run_z merge "$G/ckpt" "$T/r3" --hf "$T/b_type"
expect "no table for the model_type" 1 \
"zerofold: $T/b_type/config.json: unsupported: no family table for model_type 'gpt_neox' from a megatron checkpoint (add one with --hf-table FILE; tables/hf/README.md)
"

# A user table without the final norm's rule: the trainer tensor is unmapped.
$PY -c "
import json; t = json.load(open('$ZF_ROOT/tables/hf/megatron_llama.json'))
t['rules'] = [r for r in t['rules'] if r['from'] != 'decoder.final_layernorm.weight']
json.dump(t, open('$T/user.json', 'w'))"
run_z merge "$G/ckpt" "$T/r4" --hf "$T/base" --hf-table "$T/user.json"
expect "unmapped trainer tensors are named" 1 \
"zerofold: $T/base: unsupported: 1 trainer tensors no rule of $T/user.json maps: module.decoder.final_layernorm.weight (--drop-unmapped leaves them out)
"
$HB megatron "$G" "$T/b_nonorm" --vocab 100 --drop model.norm.weight
run_z merge --drop-unmapped "$G/ckpt" "$T/r5" --hf "$T/b_nonorm" --hf-table "$T/user.json"
expect_rc "--drop-unmapped" 0 ""
expect_true "--drop-unmapped lists what it left out" "grep -q 'left out unmapped (1): module.decoder.final_layernorm.weight' '$OUT'"
expect_equal "--drop-unmapped export" "$T/r5" "$T/b_nonorm"

printf '{"family": "x", "source": "megatron", "model_types": ["llama"],\n "rules": [{"from": "a", "op": "splat"}]}\n' >"$T/bad_op.json"
run_z merge "$G/ckpt" "$T/r6" --hf "$T/base" --hf-table "$T/bad_op.json"
expect "a table with an unknown op" 1 "zerofold: $T/bad_op.json: @ 95: corrupt: family table: unknown op 'splat'
"
printf '{"family": ' >"$T/bad_json.json"
run_z merge "$G/ckpt" "$T/r6" --hf "$T/base" --hf-table "$T/bad_json.json"
expect_rc "a table that is no JSON" 1 "$T/bad_json.json: @ 11: corrupt"
printf '{"family": "x", "source": "megatron", "model_types": ["llama"], "rules": [{"from": "a", "op": "split_qkv", "to": "b"}]}' >"$T/arity.json"
run_z merge "$G/ckpt" "$T/r6" --hf "$T/base" --hf-table "$T/arity.json"
expect_rc "an op with the wrong number of names" 1 "op split_qkv of 'a' takes 3 'to' names, not 1"
expect_true "no output from refused tables" "[ ! -e '$T/r6' ]"

run_z merge "$G/ckpt" "$T/x.safetensors" --hf "$T/base"
expect_rc "--hf into a file" 2 "OUT must be a folder"
run_z merge --to torch "$G/ckpt" "$T/r7" --hf "$T/base"
expect_rc "--hf with --to torch" 2 "--hf writes safetensors shards"
run_z merge "$G/ckpt" "$T/r7" --hf "$T/nowhere"
expect_rc "a BASE that is no folder" 3 "--hf BASE is no folder"
run_z merge "$G/ckpt" "$T/r7" --hf-table "$T/user.json"
expect_rc "--hf-table without --hf" 2 "--hf-table and --drop-unmapped go with --hf BASE"

# A DeepSpeed ZeRO-3 checkpoint of a GPT-2-like model (module names are the model's; lm_head.weight
# shares transformer.wte.weight's storage, which zero_to_fp32.py drops): names one to one. A BASE
# that stores the tied head gets it (the same values), one that leaves it out (as tied Hugging
# Face checkpoints do) does not; each equals the live engine's state dict, in BASE's dtype.
DS="$F/deepspeed/zero3_ws3_fp16"
$HB deepspeed "$DS" "$T/dsbase"
run_z merge "$DS/ckpt" "$T/dsout" --hf "$T/dsbase"
expect_rc "--hf of a DeepSpeed checkpoint" 0 ""
expect_equal "DeepSpeed export with the stored tied head" "$T/dsout" "$T/dsbase"
$HB deepspeed "$DS" "$T/dsbase_tied" --drop lm_head.weight --dtype bfloat16
run_z merge "$DS/ckpt" "$T/dsout_tied" --hf "$T/dsbase_tied"
expect_rc "--hf of a DeepSpeed checkpoint, BASE without the tied head" 0 ""
expect_equal "DeepSpeed export without the head, in BASE's bfloat16" "$T/dsout_tied" "$T/dsbase_tied"
$HB deepspeed "$DS" "$T/dsbase_short" --drop transformer.ln_f.bias
run_z merge "$DS/ckpt" "$T/dsout_short" --hf "$T/dsbase_short"
expect_rc "--hf of a DeepSpeed checkpoint against a BASE that lacks a name" 1 "1 not in BASE: transformer.ln_f.bias"
expect_true "nothing written for the refused DeepSpeed export" "test ! -e '$T/dsout_short'"

zf_finish
