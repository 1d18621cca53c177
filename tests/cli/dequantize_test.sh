#!/usr/bin/env bash
# zerofold convert --dequantize from the command line: every scheme of
# tests/cli/dequantize_cases.py (small hand-built checkpoints whose expected
# bf16 and fp32 tensors that script computes from the schemes' specs) from a
# folder and from one file, into a folder, shards and one file; the forms of
# the flag; --part, --verify, --dry-run, --force; config.json without
# quantization_config and the other files copied byte for byte; and the
# refusals (a scale of the wrong shape, a weight without its scale, a scale
# without its weight, an unknown quant_method, names that cannot decide, an
# existing OUT, flags that do not apply), each with no output left.
#
#   ZEROFOLD=build/zerofold bash tests/cli/dequantize_test.sh
source "$(dirname "$0")/lib.sh"

C="$PY $ZF_ROOT/tests/cli/dequantize_cases.py"
chint='zerofold: hint: run '"'"'zerofold convert --help'"'"''
cd "$T" || exit 1
$C make cases || { echo "FAIL: dequantize_cases.py make"; exit 1; }

# expect_tensors NAME OUT EXPECTED: OUT (file or folder) holds exactly EXPECTED's tensors, bytes equal.
expect_tensors() {
  if $C compare "$2" "$3" >"$T/.cmp" 2>&1; then ok; else bad "$1: $(cat "$T/.cmp")"; fi
}

# --- every scheme, folder in -> folder out, both targets ------------------------------------
for c in fp8_block mxfp4 mxfp4_big nvfp4_modelopt nvfp4_ct int_packed fp8_channel; do
  for t in bf16 fp32; do
    run_z convert --dequantize "$t" "cases/$c/in" "out_${c}_$t/"
    expect "$c $t: exit" 0 ""
    expect_tensors "$c $t" "out_${c}_$t" "cases/$c/$t.safetensors"
    expect_true "$c $t: tokenizer copied" "cmp -s cases/$c/in/tokenizer.json out_${c}_$t/tokenizer.json"
    # config.json: the input's text with the quantization_config member cut out, nothing else.
    expect_true "$c $t: config without quantization_config" \
      "$PY -c 'import json,sys; a=json.load(open(\"cases/$c/in/config.json\")); a.pop(\"quantization_config\"); b=json.load(open(\"out_${c}_$t/config.json\")); sys.exit(a!=b or list(a)!=list(b))'"
    expect_true "$c $t: no index for one file" "[ ! -e out_${c}_$t/model.safetensors.index.json ]"
  done
done
expect_true "config text kept byte for byte" \
  "[ \"\$(cat out_fp8_block_bf16/config.json)\" = '{
  \"architectures\": [
    \"DeepseekV3ForCausalLM\"
  ],
  \"hidden_size\": 7,
  \"zz_last\": 1
}' ]"
run_z convert --dequantize cases/int_packed/in out_msg/
expect_true "summary line" "grep -qx 'dequantized 3 weights (int-packed) of quant_method compressed-tensors; kept 1 tensors as they are' '$OUT'"

run_z convert --dequantize --json cases/nvfp4_ct/in json_out/
expect "--json" 0 ""
expect_true "--json: the dequantize object" "$PY -c 'import json,sys; d=json.load(open(\"$OUT\"))[\"dequantize\"]; sys.exit(d != {\"quant_method\": \"compressed-tensors\", \"schemes\": [\"nvfp4-ct\"], \"weights\": 1, \"kept\": 0})'"

# --- small chunks: --buffer-size 4KiB decodes a few rows (or columns) at a time, chunks
# (mxfp4_big: each expert read again per tile of output rows, 19,200 packed bytes > 4 x 4 KiB)
# starting inside scale blocks and zero-point words; the bytes do not change.
for c in fp8_block mxfp4 mxfp4_big nvfp4_modelopt int_packed fp8_channel; do
  run_z convert --dequantize --buffer-size 4KiB "cases/$c/in" "small_$c/"
  expect "$c small chunks: exit" 0 ""
  expect_tensors "$c small chunks" "small_$c" "cases/$c/bf16.safetensors"
done

# --- one file in (names decide), one file out; a folder into one file ------------------------
for c in fp8_block mxfp4 nvfp4_modelopt nvfp4_ct fp8_channel; do
  run_z convert --dequantize=fp32 "cases/$c/in.safetensors" "file_$c.safetensors"
  expect "$c file: exit" 0 ""
  expect_tensors "$c file -> file" "file_$c.safetensors" "cases/$c/fp32.safetensors"
done
run_z convert --dequantize cases/int_packed/in int_one.safetensors
expect "folder -> file" 0 ""
expect_tensors "folder -> one file" int_one.safetensors cases/int_packed/bf16.safetensors
# Bare --dequantize is bf16; the value may follow IN OUT; IN is never taken for the value.
run_z convert cases/mxfp4/in.safetensors late.safetensors --dequantize fp32
expect "value after IN OUT" 0 ""
expect_tensors "value after IN OUT" late.safetensors cases/mxfp4/fp32.safetensors
run_z convert --dequantize cases/mxfp4/in.safetensors bare.safetensors
expect "bare --dequantize" 0 ""
expect_tensors "bare --dequantize is bf16" bare.safetensors cases/mxfp4/bf16.safetensors

# --- torch output: a file (torch 1.13 loads it; same tensors as the safetensors expected) and shards
torch_same() {  # NAME TORCH_FILE_OR_FOLDER EXPECTED.safetensors
  if $PY -c "
import os, sys, torch
sys.path.insert(0, '$ZF_ROOT/tests/cli')
import dequantize_cases as d
p = sys.argv[1]
files = [os.path.join(p, f) for f in sorted(os.listdir(p)) if f.endswith('.bin')] if os.path.isdir(p) else [p]
got = {}
for f in files:
    got.update(torch.load(f, weights_only=True))
want = d.read_st(sys.argv[2])
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
codes = {'BF16': torch.bfloat16, 'F32': torch.float32, 'I64': torch.int64}
for k, (code, shape, raw) in want.items():
    t = got[k]
    assert t.dtype == codes[code] and list(t.shape) == list(shape), k
    assert t.contiguous().view(torch.uint8).numpy().tobytes() == raw, k
" "$2" "$3" >"$T/.cmp" 2>&1; then ok; else bad "$1: $(tail -1 "$T/.cmp")"; fi
}
run_z convert --dequantize fp32 --to torch cases/fp8_block/in pytorch_model.bin
expect "--to torch file" 0 ""
torch_same "--to torch file" pytorch_model.bin cases/fp8_block/fp32.safetensors
run_z convert --dequantize --to torch --max-shard-size 100KB --verify cases/fp8_block/in torch_shards/
expect "--to torch shards" 0 ""
expect_true "--to torch --verify counts" "grep -qx 'verified 3 tensors, 120074 bytes' '$OUT'"
expect_true "torch shards and index" "[ -f torch_shards/pytorch_model-00001-of-00002.bin ] && [ -f torch_shards/pytorch_model.bin.index.json ] && [ -f torch_shards/config.json ]"
torch_same "--to torch shards" torch_shards cases/fp8_block/bf16.safetensors

# --- shards, --part, --verify, --dry-run, --force ------------------------------------------
run_z convert --dequantize --max-shard-size 100KB cases/fp8_block/in shards/
expect "shards" 0 ""
expect_true "two shards and an index" "[ -f shards/model-00001-of-00002.safetensors ] && [ -f shards/model-00002-of-00002.safetensors ] && [ -f shards/model.safetensors.index.json ]"
expect_tensors "shards" shards cases/fp8_block/bf16.safetensors
for p in 0/2 1/2 finish; do
  run_z convert --dequantize --max-shard-size 100KB --part "$p" cases/fp8_block/in parts/
  expect "--part $p" 0 ""
done
expect_same_folder "--part 0/2, 1/2, finish = one run" shards parts
run_z convert --dequantize --verify cases/nvfp4_ct/in verified/
expect "--verify" 0 ""
expect_true "--verify counts" "grep -qx 'verified 1 tensors, 320 bytes' '$OUT'"
run_z convert --dequantize --dry-run cases/fp8_block/in dry/
expect "--dry-run" 0 ""
expect_true "--dry-run writes nothing" "[ ! -e dry ]"
expect_true "--dry-run says so" "grep -q 'dry run' '$OUT'"
run_z convert --dequantize cases/fp8_block/in shards/
expect "OUT exists" 2 "zerofold: shards/config.json: invalid argument: exists; use --force to replace it
"
run_z convert --dequantize cases/fp8_block/in.safetensors file_fp8_block.safetensors
expect "OUT file exists" 2 "zerofold: file_fp8_block.safetensors: invalid argument: exists; use --force to replace it
"
run_z convert --dequantize --force cases/fp8_block/in shards/
expect "--force" 0 ""
expect_tensors "--force replaced the shards" shards cases/fp8_block/bf16.safetensors
expect_true "--force removed the earlier save" "[ ! -e shards/model-00001-of-00002.safetensors ] && [ ! -e shards/model.safetensors.index.json ]"

# --- refusals: nothing written ------------------------------------------------------------
$PY -c "
import sys; sys.path.insert(0, '$ZF_ROOT/tests/cli')
import dequantize_cases as d
d.write_st('shape.safetensors', [('m.weight', 'F8_E4M3', (200, 300), bytes(60000)), ('m.weight_scale_inv', 'F32', (2, 2), bytes(16))])
d.write_st('missing.safetensors', [('m.weight', 'F8_E4M3', (2, 3), bytes(6))])
d.write_st('orphan.safetensors', [('m.weight', 'BF16', (2, 3), bytes(12)), ('m.weight_scale_inv', 'F32', (1, 1), bytes(4))])
d.write_st('nvshape.safetensors', [('m.weight', 'U8', (4, 20), bytes(80)), ('m.weight_scale', 'F8_E4M3', (4, 2), bytes(8)), ('m.weight_scale_2', 'F32', (), bytes(4))])
"
# --- inspect names the scheme, the groups and what --dequantize writes ---------------------
run_z inspect cases/nvfp4_modelopt/in.safetensors
expect "inspect" 0 ""
expect_true "inspect: the plan" "grep -qx 'quantized: scheme by tensor names (nvfp4); convert --dequantize writes 1 weights in bf16 or fp32, keeps 1 tensors' '$OUT'"
expect_true "inspect: the group" "grep -qx '  model.layers.0.self_attn.q_proj.weight \[5, 48\] nvfp4 <- model.layers.0.self_attn.q_proj.weight + model.layers.0.self_attn.q_proj.weight_scale + model.layers.0.self_attn.q_proj.weight_scale_2 + model.layers.0.self_attn.q_proj.input_scale' '$OUT'"
run_z inspect --json cases/int_packed/in
expect "inspect --json" 0 ""
expect_true "inspect --json: the plan" "$PY -c 'import json,sys; d=json.load(open(\"$OUT\")); q=[f for f in d[\"files\"] if f.get(\"format\")==\"quantized\"][0][\"quantized\"]; sys.exit(not (q[\"quant_method\"]==\"compressed-tensors\" and q[\"schemes\"]==[\"int-packed\"] and len(q[\"groups\"])==3 and q[\"kept\"]==1 and q[\"refusal\"] is None))'"
run_z inspect orphan.safetensors
expect "inspect of a refused plan" 0 ""
expect_true "inspect: the refusal" "grep -qx 'quantized: convert --dequantize would refuse: orphan.safetensors: m.weight_scale_inv: corrupt: is a quantization tensor (weight_scale_inv) whose weight is missing or not quantized' '$OUT'"

mkdir -p refused
run_z convert --dequantize shape.safetensors refused/a.safetensors
expect "names cannot decide the block" 2 "zerofold: shape.safetensors: m.weight_scale_inv: invalid argument: the tensor names cannot decide the block size (its shape is not that of 128 x 128 blocks): pass the Hugging Face folder (its config.json's quantization_config says it)
"
cp -r cases/fp8_block/in badshape
$PY -c "
import sys; sys.path.insert(0, '$ZF_ROOT/tests/cli')
import dequantize_cases as d
d.write_st('badshape/model-00002-of-00002.safetensors', [('model.layers.0.mlp.weight_scale_inv', 'F32', (2, 2), bytes(16)), ('model.ids', 'I64', (5,), bytes(40))])
"
run_z convert --dequantize badshape refused/
expect "scale shape mismatch" 1 "zerofold: badshape/model-00002-of-00002.safetensors: model.layers.0.mlp.weight_scale_inv: corrupt: has shape [2, 2], not [2, 3] for weight model.layers.0.mlp.weight of 200 x 300 elements in blocks of 128 x 128
"
run_z convert --dequantize nvshape.safetensors refused/b.safetensors
expect "nvfp4 scale shape" 1 "zerofold: nvshape.safetensors: m.weight_scale: corrupt: has shape [4, 2], not [4, 3] for weight m.weight of 4 x 40 elements in blocks of 1 x 16
"
run_z convert --dequantize missing.safetensors refused/c.safetensors
expect "missing scale" 1 "zerofold: missing.safetensors: m.weight: corrupt: is F8_E4M3 without m.weight_scale_inv, m.scale or m.weight_scale
"
run_z convert --dequantize orphan.safetensors refused/d.safetensors
expect "scale without weight" 1 "zerofold: orphan.safetensors: m.weight_scale_inv: corrupt: is a quantization tensor (weight_scale_inv) whose weight is missing or not quantized
"
cp -r cases/fp8_block/in gptq
sed -i 's/"quant_method": "fp8"/"quant_method": "gptq"/' gptq/config.json
run_z convert --dequantize gptq refused/
expect "unknown quant_method" 1 "zerofold: gptq/config.json: unsupported: quant_method 'gptq' is not one --dequantize decodes (fp8, mxfp4, modelopt, compressed-tensors)
"
run_z convert --dequantize cases/int_packed/in/model-00001-of-00002.safetensors refused/e.safetensors
expect "int-packed needs the folder" 2 "zerofold: cases/int_packed/in/model-00001-of-00002.safetensors: model.layers.0.mlp.experts.0.up_proj.weight_packed: invalid argument: the tensor names cannot decide the bits and groups of a pack-quantized weight: pass the Hugging Face folder (its config.json's quantization_config says it)
"
run_z convert --dequantize fp16 cases/fp8_block/in refused/
expect "--dequantize fp16" 2 "zerofold: convert: --dequantize takes bf16 (bfloat16) or fp32 (float32), not 'fp16'
$chint
"
run_z convert --dequantize --dtype bf16 cases/fp8_block/in refused/
expect "--dtype" 2 "zerofold: convert: --dequantize chooses the dtype of the weights it decodes; --dtype does not apply
$chint
"
run_z convert --dequantize --only 'x*' cases/fp8_block/in refused/
expect "--only" 2 "zerofold: convert: --dequantize writes every tensor; --select and --only do not apply
$chint
"
run_z convert --dequantize cases/fp8_block/in.safetensors -
expect "stdout" 2 "zerofold: -: invalid argument: is a stream ('-' or .zst), which this command does not write; name a file or a folder (and compress it afterwards)
"
expect_empty_dir "refusals wrote nothing" refused

zf_finish
