#!/usr/bin/env bash
# A Hugging Face index that does not match its shards (src/model/hf_folder.h):
# every command that reads the folder refuses it with the same one line,
# naming the index, the tensor and the shard, and writes nothing.
#
# Table: each damage of the index (or of a shard) is applied to a torch
# folder (fixtures/hf/bloated) and to a safetensors folder made from it,
# then every command runs on the copy: inspect, inspect --json, shrink to a
# folder and --in-place (torch: shrink refuses safetensors as a usage error
# before reading it), convert to torch and to safetensors (a folder, a
# file and standard output), and diff with the folder on either side (diff's bad input is exit
# 2, as cmp has it; the others exit 1). merge reads no index: a Trainer's
# checkpoint-N/ with a damaged index beside its DeepSpeed state merges, and
# the index is neither read nor copied.
#
# Run: ZEROFOLD=build/zerofold bash tests/cli/index_test.sh
source "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

TS=pytorch_model-00001-of-00003.bin  # torch shards
TS2=pytorch_model-00002-of-00003.bin
TS3=pytorch_model-00003-of-00003.bin
SS=model-00001-of-00004.safetensors  # safetensors shards
SS2=model-00002-of-00004.safetensors
SS4=model-00004-of-00004.safetensors
cp -r "$F/hf/bloated" torch_ok
"$Z" convert --quiet --to safetensors --max-shard-size 5KB torch_ok st_ok || fail "setup: safetensors folder"
"$Z" convert --quiet torch_ok all.safetensors || fail "setup: one file of every tensor"
[ -f "st_ok/$SS4" ] && [ -f all.safetensors ] || fail "setup: $(ls st_ok)"

# edit INDEX OP NAME [SHARD]: rewrites INDEX as json.dump does, after OP:
# add (NAME -> SHARD), move (NAME -> SHARD), drop (NAME).
edit() {
  "$PY" - "$@" <<'EOF'
import json, sys
path, op, name = sys.argv[1:4]
doc = json.load(open(path))
wm = doc["weight_map"]
if op == "drop":
    del wm[name]
else:
    assert op in ("add", "move") and (name in wm) == (op == "move"), (op, name)
    wm[name] = sys.argv[4]
json.dump(doc, open(path, "w"), indent=2)
EOF
}

# A case: a damaged copy of SRC in folder NAME, and the line every command prints.
declare -a CASES=()
declare -A WANT=() KIND=()
add_case() {  # NAME KIND(torch|st) WANT_LINE
  CASES+=("$1")
  KIND[$1]=$2
  WANT[$1]=$3
}

TI=pytorch_model.bin.index.json
SI=model.safetensors.index.json

# 1. The index names a tensor no shard holds.
cp -r torch_ok t_ghost && edit "t_ghost/$TI" add ghost.weight "$TS2"
add_case t_ghost torch "zerofold: t_ghost/$TI: corrupt: weight_map names \"ghost.weight\", which shard $TS2 does not hold"
cp -r st_ok s_ghost && edit "s_ghost/$SI" add ghost.weight "$SS2"
add_case s_ghost st "zerofold: s_ghost/$SI: corrupt: weight_map names \"ghost.weight\", which shard $SS2 does not hold"
# 2. The index names a tensor in a shard that does not hold it (another one does).
cp -r torch_ok t_moved && edit "t_moved/$TI" move model.norm.weight "$TS"
add_case t_moved torch "zerofold: t_moved/$TI: corrupt: weight_map names \"model.norm.weight\", which shard $TS does not hold"
cp -r st_ok s_moved && edit "s_moved/$SI" move model.norm.weight "$SS"
add_case s_moved st "zerofold: s_moved/$SI: corrupt: weight_map names \"model.norm.weight\", which shard $SS does not hold"
# 3. A shard holds a tensor the index does not list.
cp -r torch_ok t_unlisted && edit "t_unlisted/$TI" drop model.position_ids
add_case t_unlisted torch "zerofold: t_unlisted/$TI: corrupt: shard $TS3 holds \"model.position_ids\", which weight_map does not list"
cp -r st_ok s_unlisted && edit "s_unlisted/$SI" drop model.position_ids
add_case s_unlisted st "zerofold: s_unlisted/$SI: corrupt: shard $SS4 holds \"model.position_ids\", which weight_map does not list"
# 4. Two shards hold one tensor (the index names the first).
cp -r torch_ok t_twice
"$Z" convert --quiet --to torch --force --only 'model.layers.1.*,lm_head.weight' all.safetensors "t_twice/$TS2" ||
  fail "setup: a torch shard holding lm_head.weight too"
add_case t_twice torch "zerofold: t_twice/$TI: corrupt: shards $TS and $TS2 both hold \"lm_head.weight\"; weight_map names $TS"
cp -r st_ok s_twice
"$Z" convert --quiet --force --only 'model.layers.0.attn.*,model.layers.0.mlp.up.*,lm_head.weight' all.safetensors \
  "s_twice/$SS2" || fail "setup: a safetensors shard holding lm_head.weight too"
add_case s_twice st "zerofold: s_twice/$SI: corrupt: shards $SS and $SS2 both hold \"lm_head.weight\"; weight_map names $SS"
# 5. The index lists a name twice (two members of one key; Python's json keeps the last).
cp -r torch_ok t_dup
sed -i "s|^    \"lm_head.weight\": \"$TS\",|&\n    \"lm_head.weight\": \"$TS2\",|" "t_dup/$TI"
at=$(grep -b -o "\"lm_head.weight\": \"$TS2\"" "t_dup/$TI" | cut -d: -f1)
add_case t_dup torch "zerofold: t_dup/$TI: @ $at: corrupt: weight_map lists \"lm_head.weight\" twice, in shard $TS and in shard $TS2"
cp -r st_ok s_dup
sed -i "s|^    \"lm_head.weight\": \"$SS\",|&\n    \"lm_head.weight\": \"$SS2\",|" "s_dup/$SI"
at=$(grep -b -o "\"lm_head.weight\": \"$SS2\"" "s_dup/$SI" | cut -d: -f1)
add_case s_dup st "zerofold: s_dup/$SI: @ $at: corrupt: weight_map lists \"lm_head.weight\" twice, in shard $SS and in shard $SS2"

# The undamaged folders pass (the checks below are not vacuous).
for ok_folder in torch_ok st_ok; do
  run_z inspect "$ok_folder"
  expect "inspect $ok_folder" 0 ""
done
run_z diff torch_ok st_ok
expect "diff torch_ok st_ok" 0 ""

# refused NAME RC LINE: the last run exited RC with exactly LINE on stderr.
refused() { expect "$1" "$2" "$3
"; }

for c in "${CASES[@]}"; do
  want=${WANT[$c]}
  cp -r "$c" "$c.orig"
  ok_side=torch_ok
  [ "${KIND[$c]}" = st ] && ok_side=st_ok

  run_z inspect "$c"
  refused "$c: inspect" 1 "$want"
  [ ! -s "$OUT" ] && ok || fail "$c: inspect printed $(cat "$OUT")"
  run_z inspect --json "$c"
  refused "$c: inspect --json" 1 "$want"
  "$PY" - "$OUT" "$c" "${want#*: corrupt: }" <<'EOF' && ok || fail "$c: inspect --json document: $(cat "$OUT")"
import json, sys
doc = json.load(open(sys.argv[1]))
[entry] = doc["files"]
assert entry["path"] == sys.argv[2], entry
error = entry["error"]
assert error["code"] == "corrupt" and error["message"] == sys.argv[3], error
assert error["path"].startswith(sys.argv[2] + "/") and error["path"].endswith(".index.json"), error
EOF

  if [ "${KIND[$c]}" = torch ]; then
    run_z shrink "$c" "$c.shrunk/"
    refused "$c: shrink to a folder" 1 "$want"
    run_z shrink --dry-run "$c" "$c.shrunk/"
    refused "$c: shrink --dry-run" 1 "$want"
    run_z shrink --in-place "$c"
    refused "$c: shrink --in-place" 1 "$want"
    run_z shrink --part 0/2 "$c" "$c.shrunk/"
    refused "$c: shrink --part 0/2" 1 "$want"
  fi
  run_z convert --to torch "$c" "$c.torch/"
  refused "$c: convert --to torch" 1 "$want"
  run_z convert --to safetensors "$c" "$c.st/"
  refused "$c: convert --to safetensors (folder)" 1 "$want"
  run_z convert "$c" "$c.safetensors"
  refused "$c: convert to one safetensors file" 1 "$want"
  run_z convert --to safetensors "$c" -
  refused "$c: convert to standard output" 1 "$want"
  [ ! -s "$OUT" ] && ok || fail "$c: convert to standard output wrote $(wc -c <"$OUT") bytes"
  run_z diff "$c" "$ok_side"
  refused "$c: diff (first side)" 2 "$want"
  run_z diff "$ok_side" "$c"
  refused "$c: diff (second side)" 2 "$want"

  # Nothing written: no output, the damaged folder as it was.
  for out in "$c.shrunk" "$c.torch" "$c.st" "$c.safetensors"; do
    [ ! -e "$out" ] && ok || fail "$c: a refused run wrote $out"
  done
  diff -r "$c" "$c.orig" >/dev/null && ok || fail "$c: a refused run changed the folder"
done

# merge: a Trainer's checkpoint-N/ holds the DeepSpeed state, the model
# files and (save_pretrained's) weights with their index. merge reads the
# DeepSpeed state and copies the model files only: a damaged index there is
# not read, and not copied.
cp -r "$F/deepspeed/zero2_ws3_bf16/ckpt" checkpoint-2
cp torch_ok/config.json t_ghost/$TI t_ghost/pytorch_model-0000*.bin checkpoint-2/
run_z merge --quiet checkpoint-2 merged
expect "merge of a checkpoint-N/ with a damaged index beside" 0 ""
[ "$(ls merged | tr '\n' ' ')" = "config.json pytorch_model.bin " ] && ok || fail "merge wrote $(ls merged)"

zf_finish
