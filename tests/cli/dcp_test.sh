#!/usr/bin/env bash
# zerofold merge and inspect on PyTorch Distributed Checkpoint folders (fixtures/dcp):
# the summary and dry-run lines, --json fields, --select, refusals of ZeRO-only flags, the
# exact error line of hostile folders, no output left behind on failure, --force, sharding.
# Values are checked against torch by tests/interop/test_dcp_merge.py; here each case is a
# command and what it must print or leave.
#
#   ZEROFOLD=build/zerofold bash tests/cli/dcp_test.sh
source "$(dirname "$0")/lib.sh"

D=$F/dcp
cd "$T" || exit 1
mkdir out

# --- summaries ----------------------------------------------------------------------------
run_z merge "$D/accelerate_ws4/ckpt" out/
expect "accelerate merge" 0 ""
[ "$(cat "$OUT")" = "$D/accelerate_ws4/ckpt (DCP, 4 files) -> out/: 5 tensors ('model.' stripped); left out: optimizer 12, 6 non-tensor; 1.1 KB in 1 file" ] \
  || fail "accelerate summary: $(cat "$OUT")"
[ -f out/pytorch_model.bin ] || fail "accelerate: no out/pytorch_model.bin"
ls -A out | grep -qv '^pytorch_model.bin$' && fail "accelerate: other files in out/: $(ls -A out)"

run_z merge "$D/titan_ws2/ckpt" t.safetensors
expect "titan to safetensors" 0 ""
[ "$(cat "$OUT")" = "$D/titan_ws2/ckpt (DCP, 2 files) -> t.safetensors: 6 tensors; left out: optimizer 18, train_state 1, 11 non-tensor; 804 B in 1 file" ] \
  || fail "titan summary: $(cat "$OUT")"

# torch's own recipe, {"model": ..., "optim": ...} saved by torch 2.6: the model, 'model.'
# stripped, optim left out; a group of another name holding only Adam state is left out too,
# for what it holds.
run_z merge "$D/v26_recipe_optim_ws2/ckpt" r.bin
expect "torch recipe merge" 0 ""
[ "$(cat "$OUT")" = "$D/v26_recipe_optim_ws2/ckpt (DCP, 2 files) -> r.bin: 6 tensors ('model.' stripped); left out: optim 18, 11 non-tensor; 872 B in 1 file" ] \
  || fail "torch recipe summary: $(cat "$OUT")"
mkdir renamed && cp -r "$D/v26_recipe_optim_ws2/ckpt" renamed/ckpt
$PY - renamed/ckpt/.metadata <<'PY' || fail "renaming optim to adamw"
import sys
p = sys.argv[1]
b = open(p, "rb").read()
assert b.count(b"optim") >= 18
open(p, "wb").write(b.replace(b"optim", b"adamw"))  # same length: pickle frames stay valid
PY
run_z merge --json "renamed/ckpt" renamed/r.bin
expect "optimizer state of another name" 0 ""
$PY - "$OUT" <<'PY' || fail "optimizer state left out by content: $(cat "$OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["left_out"] == {"adamw": 18}, d["left_out"]
assert d["left_out_why"] == {"adamw": "optimizer state"}, d["left_out_why"]
assert d["model_prefix_stripped"] is True, d
PY
run_z merge "renamed/ckpt" r3.bin
grep -q "left out: adamw 18 (optimizer state), 11 non-tensor" "$OUT" || fail "adamw summary: $(cat "$OUT")"
cmp -s r.bin renamed/r.bin || fail "renamed optimizer group: another model output"

# A training output folder: its pytorch_model_fsdp_0/ is merged.
run_z merge "$D/accelerate_output_ws2/ckpt" a.bin
expect "training output folder" 0 ""
grep -q "^$D/accelerate_output_ws2/ckpt (DCP, 2 files) -> a.bin: 4 tensors ('model.' stripped)" "$OUT" \
  || fail "training output folder: $(cat "$OUT")"

# --- dry run: each tensor's chunks, files and byte ranges ---------------------------------
run_z merge --dry-run "$D/dim1_ws3/ckpt" d.bin
expect "dry run" 0 ""
[ -e d.bin ] && fail "dry run wrote d.bin"
want='  attn.wq  float32 [6, 7]  3 chunks
    <- __0_0.distcp offsets [0, 0] sizes [6, 3] bytes [320, 392)
    <- __1_0.distcp offsets [0, 3] sizes [6, 3] bytes [320, 392)
    <- __2_0.distcp offsets [0, 6] sizes [6, 1] bytes [320, 344)'
[ "$(sed -n 3,6p "$OUT")" = "$want" ] || fail "dry run attn.wq: $(sed -n 3,6p "$OUT")"
sed -n 1p "$OUT" | grep -qx "$D/dim1_ws3/ckpt: PyTorch Distributed Checkpoint (torch 1.13 layout), 3 files" \
  || fail "dry run header: $(sed -n 1p "$OUT")"
run_z merge --dry-run "$D/v2x_zstd_dim1_ws3/ckpt" d.bin
expect "dry run, zstd" 0 ""
grep -q '^    <- __0_0.distcp offsets \[0, 0\] sizes \[6, 3\] zstd frame \[[0-9]*, [0-9]*)$' "$OUT" \
  || fail "dry run zstd: $(sed -n 3,4p "$OUT")"

# --- --json ---------------------------------------------------------------------------------
run_z merge --json --select optimizer.state "$D/accelerate_ws4/ckpt" o.safetensors
expect "--json --select" 0 ""
$PY - "$OUT" <<'PY' || fail "--json --select document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "dcp" and d["dcp_schema"] == "1.13", d
assert d["left_out"] == {"model": 5}, d["left_out"]
assert d["non_tensor"] == 6 and d["model_prefix_stripped"] is False
names = [t["name"] for t in d["tensors"]]
assert names[:3] == ["embed.weight.exp_avg", "embed.weight.exp_avg_sq", "embed.weight.step"], names
assert len(names) == 12
step = d["tensors"][2]
assert step["shape"] == [] and step["dtype"] == "float32" and len(step["sources"]) == 1, step
assert d["outputs"][0]["tensors"] == 12
PY

# --- flags that belong to DeepSpeed, --select that matches nothing --------------------------
run_z merge --tag global_step2 "$D/dim0_ws2/ckpt" x.bin
expect "--tag" 2 "zerofold: $D/dim0_ws2/ckpt: invalid argument: --tag names a DeepSpeed tag folder; this is a DCP folder
"
run_z merge --exclude-frozen "$D/dim0_ws2/ckpt" x.bin
expect "--exclude-frozen" 2 "zerofold: $D/dim0_ws2/ckpt: invalid argument: --exclude-frozen needs DeepSpeed's records of frozen params; this is a DCP folder
"
run_z merge --select nothing.here "$D/dim0_ws2/ckpt" x.bin
expect "--select no match" 2 "zerofold: $D/dim0_ws2/ckpt: invalid argument: --select 'nothing.here' matches none of the tensor keys (e.g. fc1.weight)
"
run_z merge --select model "$F/deepspeed/zero1_ws2_fp16/ckpt" x.bin
expect "--select on ZeRO" 2 "zerofold: $F/deepspeed/zero1_ws2_fp16/ckpt: invalid argument: --select picks keys of a DCP checkpoint; this is no DCP folder
"
[ -e x.bin ] && fail "refusals wrote x.bin"

# --- hostile folders: one line, exit 1, nothing written -------------------------------------
B=$D/bad
mkdir fail
check() {  # check NAME WANT_STDERR_LINE
  run_z merge "$B/$1" fail/o.bin
  expect "bad/$1" 1 "$2
"
  expect_empty_dir "bad/$1 output" fail
}
check overlap "zerofold: $B/overlap/.metadata: w: corrupt: chunk 0 (__0_0.distcp) (offsets [0, 0] sizes [4, 4]) and chunk 1 (__1_0.distcp) (offsets [2, 0] sizes [4, 4]) overlap"
check gap "zerofold: $B/gap/.metadata: w: corrupt: the chunks cover 20 of the 24 elements of shape [6, 4]: a gap"
check outside_shape "zerofold: $B/outside_shape/.metadata: w: corrupt: chunk 1 (__1_0.distcp) (offsets [3, 0] sizes [4, 4]) lies outside the shape [6, 4] in dim 0"
check past_file_end "zerofold: $B/past_file_end/__1_0.distcp: w @ 747: corrupt: chunk 1 (__1_0.distcp) at [0, 847) passes the file's end (747 bytes)"
check offset_overflow "zerofold: $B/offset_overflow/__1_0.distcp: w: corrupt: chunk 1 (__1_0.distcp): offset 18446744073709551608 + length 16 overflows"
check unsafe_os_system "zerofold: $B/unsafe_os_system/.metadata: .metadata: unsafe: pickle references globals outside the DCP metadata schema: posix.system (not executed)"
check torch112_schema "zerofold: $B/torch112_schema/.metadata: .metadata: unsupported: torch 1.12's checkpoint schema (torch.distributed._shard.checkpoint.metadata.ShardedTensorStorageMetadata): re-save with torch >= 1.13"
check unsafe_chunk "zerofold: $B/unsafe_chunk/__1_0.distcp: w: unsafe: the chunk's archive references unsafe globals: posix.system (runs code: processes and the operating system) (not executed)"
check no_metadata "zerofold: $B/no_metadata: corrupt: holds .distcp files but no .metadata: not a complete Distributed Checkpoint"
check zstd_version2 "zerofold: $B/zstd_version2/__0_0.distcp: w: unsupported: transform stream.zstd/2 (only stream.zstd/1 is read)"

# The safetensors form with a damaged DCP_SHARDING_INFO in rank 1's first shard.
hf_variant() {  # hf_variant DIR PYTHON-EXPR-ON-info: a copy of v2x_hf_dim0_ws2 with info rewritten
  rm -rf "$1"
  cp -r "$D/v2x_hf_dim0_ws2/ckpt" "$1"
  "$PY" - "$1/shard-00001-model-00001-of-00001.safetensors" "$2" <<'PYEOF'
import json, struct, sys
path, expr = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
info = json.loads(header["__metadata__"]["DCP_SHARDING_INFO"])
header["__metadata__"]["DCP_SHARDING_INFO"] = eval(expr, {"info": info, "json": json})
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PYEOF
}
hf_variant hf_text '"not json"'
run_z merge hf_text fail/o.bin
expect "safetensors form: info not JSON" 1 "zerofold: hf_text/shard-00001-model-00001-of-00001.safetensors: header: corrupt: DCP_SHARDING_INFO is no JSON object
"
hf_variant hf_rank 'json.dumps({k: {"saved_offsets": [0, 0, 0]} for k in info})'
run_z merge hf_rank fail/o.bin
expect "safetensors form: offsets of another rank" 1 "zerofold: hf_rank/shard-00001-model-00001-of-00001.safetensors: big.weight: corrupt: DCP_SHARDING_INFO gives no saved_offsets of 2 ints
"
hf_variant hf_gap 'json.dumps({k: {"saved_offsets": [v["saved_offsets"][0] + 1] + v["saved_offsets"][1:]} if k == "big.weight" else v for k, v in info.items()})'
run_z merge hf_gap fail/o.bin
expect "safetensors form: a chunk moved" 1 "zerofold: hf_gap: big.weight: corrupt: chunk 0 (shard-00001-model-00001-of-00001.safetensors) (offsets [1, 0] sizes [128, 96]) and chunk 1 (shard-00002-model-00001-of-00001.safetensors) (offsets [128, 0] sizes [128, 96]) overlap
"
expect_empty_dir "safetensors form failures" fail

# More rank files than the soft limit on open files: merge raises it to the hard limit.
"$PY" - many <<'PYEOF'
import json, os, struct, sys
out = sys.argv[1]
os.makedirs(out)
for r in range(300):
    info = json.dumps({"w": {"saved_offsets": [r, 0]}})
    header = {"__metadata__": {"DCP_SHARDING_INFO": info, "DCP_VERSION": "1.0", "format": "pt"},
              "w": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    data = struct.pack("<2f", 2 * r, 2 * r + 1)
    name = f"shard-{r + 1:05d}-model-00001-of-00001.safetensors"
    open(os.path.join(out, name), "wb").write(struct.pack("<Q", len(text)) + text + data)
PYEOF
zf_checks=$((zf_checks + 1))
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 400 ]; then
  (ulimit -Sn 100 && "$Z" merge --quiet many many.safetensors) 2>"$ERR" || fail "300 rank files, soft limit 100: $(cat "$ERR")"
  "$PY" - many.safetensors <<'PYEOF' || fail "300 rank files: values"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
w = json.loads(data[8:8 + n])["w"]
assert w["shape"] == [300, 2], w
b, e = w["data_offsets"]
assert list(struct.unpack("<600f", data[8 + n + b:8 + n + e])) == list(range(600))
PYEOF
fi

# --- existing outputs, --force, shards ---------------------------------------------------
run_z merge "$D/dim0_ws2/ckpt" out/
expect "existing output" 2 "zerofold: out/pytorch_model.bin: invalid argument: exists; use --force to replace it
"
run_z merge --force --verify --max-shard-size 40KB --to safetensors "$D/dim0_ws2/ckpt" sh/
expect "shards, verify" 0 ""
[ "$(ls sh | tr '\n' ' ')" = "model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json " ] \
  || fail "shards: $(ls sh)"
grep -q "^verified 6 tensors, " "$OUT" || fail "verify line: $(cat "$OUT")"

# --- progress ------------------------------------------------------------------------------
run_z merge --force --progress "$D/dim0_ws2/ckpt" p.bin
expect_progress=$(grep -c $'\r.*merge [^[]* -> p.bin \[' "$ERR")
zf_checks=$((zf_checks + 1))
[ "$RC" = 0 ] && [ "$expect_progress" -ge 1 ] && [ "$(tail -c 4 "$ERR" | od -An -c | tr -d ' ')" = '\r033[K' ] \
  || fail "progress on stderr, cleared at the end: $(od -c "$ERR" | tail -3)"

# --- inspect ---------------------------------------------------------------------------------
run_z inspect "$D/accelerate_ws4/ckpt"
expect "inspect" 0 ""
tail -n 1 "$OUT" | grep -qx '  17 tensor keys, 6 non-tensor keys: model 5 tensors 1.1 KB; optimizer 12 tensors 1.4 KB' \
  || fail "inspect totals: $(tail -n 1 "$OUT")"
grep -qx '  optimizer.param_groups.0.lr  (not a tensor)' "$OUT" || fail "inspect non-tensor line"
run_z inspect --json "$D/v2x_hf_titan_ws2/ckpt"
expect "inspect --json safetensors form" 0 ""
$PY - "$OUT" <<'PY' || fail "inspect --json document"
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert f["format"] == "dcp" and f["layout"] == "safetensors", f
wq = [t for t in f["tensors"] if t["key"] == "layers.0.attention.wq.weight"][0]
assert wq["shape"] == [6, 6] and wq["chunks"] == 2 and wq["nbytes"] == 144, wq
assert f["groups"] == [{"group": "model", "tensors": 6, "nbytes": 804}], f["groups"]
PY
run_z inspect "$B/unsafe_eval"
[ "$RC" = 1 ] || fail "inspect of an unsafe .metadata: exit $RC"

# --- damaged folders: truncated or flipped .metadata and .distcp files --------------------
# Each run exits 1 (or 0 for a flipped byte torch would also read), never crashes, and
# leaves no file behind when it fails.
damaged() {  # damaged CASE: writes $T/dmg/<file>.<cut|flip>.<N>/ folders
  "$PY" - "$D/$1/ckpt" "$T/dmg" <<'PYEOF'
import os, shutil, sys
src, out = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(src))
for name in names:
    data = open(os.path.join(src, name), "rb").read()
    n = len(data)
    count = 60 if name == ".metadata" else 30
    points = sorted({i * n // count for i in range(count)} | {n - 1})
    for kind in ("cut", "flip"):
        for at in points:
            d = os.path.join(out, f"{name}.{kind}.{at}")
            shutil.copytree(src, d)
            b = bytearray(data)
            if kind == "cut":
                b = b[:at]
            else:
                b[at] ^= 0xFF
            open(os.path.join(d, name), "wb").write(bytes(b))
PYEOF
}
tried=0
for case in dim1_ws3 v2x_zstd_dim1_ws3 v2x_hf_titan_ws2; do
  rm -rf "$T/dmg"
  damaged "$case"
  for bad in "$T/dmg"/*; do
    kind=${bad##*/}
    kind=${kind#*.distcp.}; kind=${kind#*.safetensors.}; kind=${kind#.metadata.}
    rm -rf fail/*
    run_z merge "$bad" fail/o.bin
    if check_bad_input_exit "damaged $case/${bad##*/}" "$kind"; then
      [ "$RC" = 0 ] || expect_empty_dir "damaged $case/${bad##*/} output" fail
      [ "$RC" = 0 ] || [ "$(wc -l < "$ERR")" = 1 ] || fail "damaged $case/${bad##*/}: $(cat "$ERR")"
    fi
    tried=$((tried + 1))
  done
done
[ "$tried" -ge 400 ] || fail "only $tried damaged folders tried"
rm -rf "$T/dmg"

zf_finish
