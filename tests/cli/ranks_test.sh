#!/usr/bin/env bash
# zerofold merge of per-rank DTensor folders (verl, SkyRL: fixtures/ranks/, saved by FSDP2 and
# FSDP1 in torch 2.6): every fixture merged to torch and safetensors, folders and files, its optimizer
# state, --dtype, --part, --verify, --dry-run, compared element for element with the ground
# truth gathered live at save time (tests/ranks/compare_merged.py through tests/torch_oracle.py);
# huggingface/ copied; and the refusals (a missing rank file, two world sizes, replicated copies
# that differ, a truncated rank file, unsafe globals): one line, exit 1, no output.
# Ends with zf_finish's count (tests/cli/lib.sh).
. "$(dirname "$0")/lib.sh"
R=$F/ranks
CMP=$ZF_ROOT/tests/ranks/compare_merged.py
export ORACLE_DIR=$ZF_ROOT/tests
cd "$T" || exit 1

# same NAME OUT EXPECTED [--cast D]: OUT holds EXPECTED's tensors, element for element.
same() {
  local name=$1
  shift
  local got
  if got=$("$PY" "$CMP" "$@" 2>&1); then ok; else bad "$name: $got"; fi
}

# refused NAME WANT_STDERR OUT CMD...: exit 1 (WANT_RC when set), exactly that stderr,
# OUT not created.
refused() {
  local name=$1 want=$2 out=$3
  shift 3
  "$@" >out.txt 2>err.txt
  local rc=$?
  local err
  err=$(cat err.txt)
  if [ "$rc" = "${WANT_RC:-1}" ] && [ "$err" = "$want" ] && [ ! -e "$out" ]; then ok; else
    bad "$name: exit $rc, stderr: $err; want: $want; $(ls -d "$out" 2>/dev/null)"
  fi
}

for c in fsdp2_w2 fsdp2_w4 hsdp_2x2 tp_2x2 hsdp_tp_2x2x2 fsdp1_w2; do
  keep=""
  case $c in tp_*|hsdp_tp_*) keep=--keep-unsafe ;; esac
  "$Z" merge --quiet $keep "$R/$c" "$c.out/" 2>/dev/null || bad "$c: merge"
  same "$c: torch folder" "$c.out" "$R/$c/expected.pt"
  for f in config.json generation_config.json tokenizer_config.json; do
    if cmp -s "$c.out/$f" "$R/$c/huggingface/$f"; then ok; else bad "$c: huggingface/$f copied"; fi
  done
  "$Z" merge --quiet $keep "$R/$c" "$c.safetensors" 2>/dev/null || bad "$c: merge safetensors"
  same "$c: safetensors file" "$c.safetensors" "$R/$c/expected.pt"
  [ "$c" = fsdp1_w2 ] && continue  # FSDP1's optimizer state: refused below
  "$Z" merge --quiet $keep --select optimizer --to safetensors "$R/$c" "$c.optim/" 2>/dev/null ||
    bad "$c: merge optimizer"
  same "$c: optimizer state" "$c.optim" "$R/$c/expected_optim.pt"
done

# Dtypes as saved (bf16 stays bf16, fp32 stays fp32); --dtype casts the floating ones.
"$Z" merge --quiet --dtype bfloat16 "$R/fsdp2_w2" bf16.bin || bad "--dtype bfloat16"
same "--dtype bfloat16" bf16.bin "$R/fsdp2_w2/expected.pt" --cast bfloat16

# --part I/N, then finish: the same tensors as one run.
for i in 0 1; do
  "$Z" merge --quiet --part $i/2 --max-shard-size 300 "$R/hsdp_2x2" parts/ || bad "--part $i/2"
done
"$Z" merge --quiet --part finish --max-shard-size 300 "$R/hsdp_2x2" parts/ || bad "--part finish"
same "--part 0/2 1/2 finish" parts "$R/hsdp_2x2/expected.pt"
if [ -f parts/pytorch_model.bin.index.json ] && [ -f parts/config.json ]; then ok; else bad "--part: index and config"; fi

# --verify reads the output back; --dry-run writes nothing.
"$Z" merge --verify "$R/fsdp2_w4" v.safetensors >out.txt 2>err.txt || bad "--verify: $(cat err.txt)"
grep -q "^verified 13 tensors, " out.txt && ok || bad "--verify line: $(cat out.txt)"
"$Z" merge --dry-run "$R/fsdp2_w4" dry/ >out.txt 2>err.txt || bad "--dry-run: $(cat err.txt)"
if [ ! -e dry ] && grep -q "^$R/fsdp2_w4: per-rank DTensor files, world 4, fsdp2, mesh (4,) fsdp, 9 replicated copies checked equal, 4 files$" out.txt &&
  grep -q "^  a.proj.weight  float32 \[5, 4\]  (Shard(0))  3 chunks$" out.txt &&
  grep -q "^  a.scale  float32 \[1\]  plain  1 chunk$" out.txt; then ok; else bad "--dry-run plan: $(head -5 out.txt)"; fi
"$Z" merge --dry-run --json "$R/tp_2x2" --keep-unsafe dry.safetensors >out.json 2>/dev/null
if [ ! -e dry.safetensors ] && "$PY" -c '
import json, sys
r = json.load(open("out.json"))
assert r["kind"] == "ranks", r["kind"]
assert r["ranks"]["world_size"] == 4 and r["ranks"]["meshes"] == ["(2, 2) dp, tp", "(2,) dp"], r["ranks"]
assert r["ranks"]["dtensors"] == 6 and r["ranks"]["plain"] == 1, r["ranks"]'; then ok; else bad "--dry-run --json: $(cat out.json)"; fi

# --only keeps the names it matches.
"$Z" merge --quiet --only 'b.*' "$R/fsdp2_w2" only.safetensors || bad "--only"
"$PY" -c '
import sys; sys.path.insert(0, sys.argv[1]); import torch_oracle
names = sorted(torch_oracle.load_safetensors(sys.argv[2]))
assert names == ["b.norm.bias", "b.norm.weight", "b.proj.bias", "b.proj.weight", "b.scale"], names' \
  "$ORACLE_DIR" only.safetensors && ok || bad "--only: names"

# inspect: world, meshes, placements and pieces per tensor, merge's outlook; no tensor bytes.
"$Z" inspect "$R/fsdp2_w4" >out.txt 2>err.txt || bad "inspect: $(cat err.txt)"
for line in "$R/fsdp2_w4 (per-rank DTensor files, world 4, fsdp2)" "  mesh     (4,) fsdp" \
  "  files    4 model, 4 optim, huggingface/" "  a.proj.weight  float32 [5, 4]  (Shard(0))  3 pieces" \
  "  gate  float32 [1, 3]  (Shard(0))  1 piece" "  b.proj.weight  bfloat16 [3, 5]  (Shard(0))  3 pieces" \
  "  merge    13 tensors (10 DTensors, 3 plain); copies held by several ranks are hashed by merge"; do
  grep -qxF "$line" out.txt && ok || bad "inspect line: $line" "$(cat out.txt)"
done
"$Z" inspect "$R/tp_2x2" >out.txt 2>err.txt || bad "inspect tp: $(cat err.txt)"
grep -qxF "  up.weight  float32 [8, 6]  (_StridedShard(0, 2), Shard(0))  4 pieces" out.txt && ok || bad "inspect tp: up.weight"
grep -qxF "  merge    refused: $R/tp_2x2/model_world_size_4_rank_0.pt: unsafe: pickle references unsafe globals: torch.distributed.tensor.placement_types._StridedShard (not on an allowlist) (torch.load(weights_only=True) refuses them too; --keep-unsafe merges the tensors (the globals are never run))" out.txt &&
  ok || bad "inspect tp: outlook" "$(tail -1 out.txt)"
"$Z" inspect --json "$R/hsdp_2x2" >out.json || bad "inspect --json"
"$PY" -c '
import json
f = json.load(open("out.json"))["files"][0]
assert f["format"] == "ranks" and f["world_size"] == 4 and f["meshes"] == ["(2, 2) dp_replicate, dp_shard"], f
assert f["merge"] == {"ok": True}, f["merge"]
w = [t for t in f["tensors"] if t["name"] == "a.proj.weight"][0]
assert w == {"name": "a.proj.weight", "dtype": "float32", "shape": [5, 4], "placements": "(Replicate(), Shard(0))", "pieces": 2}, w' &&
  ok || bad "inspect --json" "$(head -c 600 out.json)"

# Globals judged as torch 2.6's weights_only judges them, file by file (fixtures/ranks/
# weights_only.json, recorded in the chroot by record_weights_only.py).
"$PY" - "$R" "$Z" <<'PYEOF' && ok || bad "weights_only parity"
import json, os, subprocess, sys
root, z = sys.argv[1], sys.argv[2]
recorded = json.load(open(os.path.join(root, "weights_only.json")))["files"]
assert len(recorded) == 72, len(recorded)
for rel, want in sorted(recorded.items()):
    out = subprocess.run([z, "inspect", "--json", os.path.join(root, rel)], capture_output=True, text=True)
    unsafe = json.loads(out.stdout)["files"][0].get("unsafe_globals", [])
    if want["loads"]:
        assert not unsafe, (rel, unsafe)
    else:
        assert want["refused_global"] in unsafe, (rel, want, unsafe)
PYEOF

# Refusals.
refused "_StridedShard without --keep-unsafe" \
  "zerofold: $R/tp_2x2/model_world_size_4_rank_0.pt: unsafe: pickle references unsafe globals: torch.distributed.tensor.placement_types._StridedShard (not on an allowlist) (torch.load(weights_only=True) refuses them too; --keep-unsafe merges the tensors (the globals are never run))" \
  tp.out "$Z" merge "$R/tp_2x2" tp.out/

refused "FSDP1's optimizer state (flat-param slices)" \
  "zerofold: $R/fsdp1_w2/optim_world_size_2_rank_0.pt: unsupported: the optimizer state is plain tensors, no DTensors: FSDP1's per-rank slices of flattened params (optimizer.state_dict() under SHARDED_STATE_DICT), which only FSDP's flat-param layout maps back" \
  f1.out "$Z" merge --select optimizer "$R/fsdp1_w2" f1.out/

mkdir -p global_step_1 && cp -r "$R/fsdp2_w2" global_step_1/actor && cp -r "$R/fsdp2_w2" global_step_1/critic
WANT_RC=3 refused "verl's global_step_N/ (actor/ and critic/ inside): not found, exit 3" \
  "zerofold: global_step_1: not found: no model_world_size_*_rank_*.pt here, but actor/, critic/ hold them (verl's global_step_N/): merge one of those" \
  g.out "$Z" merge global_step_1 g.out/

cp -r "$R/fsdp2_w4" missing && rm missing/model_world_size_4_rank_2.pt
refused "a missing rank file" \
  "zerofold: missing: corrupt: no model_world_size_4_rank_2.pt: every rank's file holds its shard" \
  m.out "$Z" merge missing m.out/

cp -r "$R/fsdp2_w2" mixed && cp "$R/fsdp2_w4/model_world_size_4_rank_3.pt" mixed/
refused "two world sizes" \
  "zerofold: mixed: corrupt: rank files of world sizes 2 and 4 (model_world_size_4_rank_3.pt): one checkpoint's files share one world size" \
  x.out "$Z" merge mixed x.out/

cp -r "$R/fsdp2_w2" badconfig && printf '{"FSDP_version": 2, "world_size": 4}' >badconfig/fsdp_config.json
refused "fsdp_config.json of another world" \
  "zerofold: badconfig/fsdp_config.json: corrupt: world_size 4, the rank files' is 2" \
  y.out "$Z" merge badconfig y.out/

# flip FILE TENSOR: rewrites FILE's zip with the first byte of TENSOR's storage flipped
# (Python's zipfile writes the new CRC-32, so only the replica check can notice).
flip() {
  local key
  key=$("$Z" inspect --json "$1" |
    "$PY" -c 'import json, sys; print([t["storage"] for t in json.load(sys.stdin)["files"][0]["tensors"] if t["name"] == sys.argv[1]][0])' "$2")
  "$PY" - "$1" "$key" <<'PYEOF'
import sys, zipfile
path, key = sys.argv[1], sys.argv[2]
src = zipfile.ZipFile(path)
items = [(i, src.read(i.filename)) for i in src.infolist()]
src.close()
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
    for info, data in items:
        if info.filename.endswith("/data/" + key):
            data = bytes([data[0] ^ 1]) + data[1:]
        out.writestr(info, data)
PYEOF
}

# A replicated buffer whose copy on rank 1 differs.
cp -r "$R/fsdp2_w2" differ && flip differ/model_world_size_2_rank_1.pt steps
refused "a replicated buffer that differs" \
  "zerofold: differ: steps: corrupt: replicated value differs between rank 0 and rank 1 (box at [0] of [1]; xxh3 bb6f4149b62a32b6e619cdeae4a4a0f4 vs 7fd5a2c19908396d68c4b2d0774ab92f): refusing to pick one" \
  d.out "$Z" merge differ d.out/

# HSDP: rank 2 (replica group 1) holds a shard that differs from rank 0's copy of it.
cp -r "$R/hsdp_2x2" replica && flip replica/model_world_size_4_rank_2.pt a.proj.weight.args.3.1._local_tensor
"$Z" merge replica r.out/ >out.txt 2>err.txt
if [ $? = 1 ] && [ ! -e r.out ] &&
  grep -q "^zerofold: replica: a.proj.weight: corrupt: replicated value differs between rank 0 and rank 2 (box at \[0, 0\] of \[3, 4\]; xxh3 " err.txt; then
  ok; else bad "a Replicate copy that differs: $(cat err.txt)"; fi

cp -r "$R/fsdp2_w2" truncated && head -c 5000 "$R/fsdp2_w2/model_world_size_2_rank_1.pt" >truncated/model_world_size_2_rank_1.pt
refused "a truncated rank file" \
  "zerofold: truncated/model_world_size_2_rank_1.pt: @ 0: corrupt: no end of central directory record in the last 5000 bytes: not a zip archive, or truncated" \
  t.out "$Z" merge truncated t.out/

zf_finish
