#!/usr/bin/env bash
# --part I/N and --part finish of merge, shrink and convert (folders): parts
# run in any order, then finish, give a folder byte-identical to one run
# (ZeRO, DCP, a sharded torch folder, a sharded safetensors folder, torch and
# safetensors output, a file IN into safetensors shards; many files from a
# small --max-shard-size); the dry run's parts cover one run's plan; a part's
# report and --json; --verify checks skipped files' values; finish before
# every part has run exits 1 naming the missing file and creates no OUT; a
# wrong-size file's refusal; an earlier save's other files as one run treats
# them; a part killed (SIGKILL) and rerun leaves exactly the expected files;
# usage errors.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
FIX=$F
TMP=$T
cd "$TMP" || exit 1

# Each case: one run, then 3 parts in the order 2, 0, 1 and finish.
cases=(
  "zero3 torch|$FIX/deepspeed/zero3_ws4_fp32/ckpt|--max-shard-size 1KB"
  "zero2 safetensors|$FIX/deepspeed/zero2_ws3_bf16/ckpt|--max-shard-size 2KB --to safetensors"
  "dcp torch|$FIX/dcp/accelerate_ws4/ckpt|--max-shard-size 200B"
  "dcp safetensors|$FIX/dcp/uneven_ws4/ckpt|--max-shard-size 200B --to safetensors"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name ckpt flags <<<"$c"
  rm -rf one p
  # shellcheck disable=SC2086
  "$Z" merge --quiet $flags "$ckpt" one || { bad "$name: single run"; continue; }
  nfiles=$(ls one | wc -l)
  expect_true "$name: several files ($nfiles)" "[ $nfiles -ge 4 ]"
  for i in 2 0 1; do
    # shellcheck disable=SC2086
    "$Z" merge --quiet --part $i/3 $flags "$ckpt" p || bad "$name: part $i/3"
  done
  expect_true "$name: no index before finish" "! ls p | grep -q index"
  # shellcheck disable=SC2086
  "$Z" merge --quiet --part finish $flags "$ckpt" p || bad "$name: finish"
  expect_same_folder "$name: 3 parts + finish = one run" one p
  # The dry run's parts cover every file once, and each part's bytes add up.
  # shellcheck disable=SC2086
  "$Z" merge --dry-run --json --part 1/3 $flags "$ckpt" q >dry.json
  expect_true "$name: dry-run parts" "/usr/bin/python3 - dry.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
files = sorted(f for p in r['parts'] for f in p['files'])
assert files == sorted(o['path'] for o in r['outputs']), files
size = {o['path']: o['bytes'] for o in r['outputs']}
assert [p['part'] for p in r['parts']] == [0, 1, 2]
for p in r['parts']:
    assert p['bytes'] == sum(size[f] for f in p['files'])
PY"
  expect_true "$name: dry run writes nothing" "[ ! -e q ]"
  # N=1: one part and finish.
  rm -rf p1
  # shellcheck disable=SC2086
  "$Z" merge --quiet --part 0/1 $flags "$ckpt" p1 && "$Z" merge --quiet --part finish $flags "$ckpt" p1
  expect_same_folder "$name: 1 part + finish = one run" one p1
done

# shrink and convert of folders: the output files divided the same way
# (torch shards, and safetensors shards sharded afresh).
rm -rf st
"$Z" merge --quiet --to safetensors --max-shard-size 1KB "$FIX/deepspeed/zero3_ws4_fp32/ckpt" st
"$Z" merge --quiet "$FIX/deepspeed/zero3_ws4_fp32/ckpt" one.bin  # a file IN, into safetensors shards
for c in "shrink|$FIX/hf/bloated" "convert --to torch|$TMP/st" \
  "convert --to safetensors --max-shard-size 4KB|$FIX/hf/bloated" \
  "shrink --to safetensors --max-shard-size 3KB|$FIX/hf/bloated" \
  "convert --to safetensors --max-shard-size 2KB|$TMP/st" \
  "convert --to safetensors --max-shard-size 8KB|$TMP/one.bin" \
  "convert --to torch --max-shard-size 8KB|$TMP/one.bin"; do
  IFS='|' read -r cmd in <<<"$c"
  rm -rf one p
  # shellcheck disable=SC2086
  $Z $cmd --quiet "$in" one/ || bad "$cmd: single run"
  case $cmd in *max-shard-size*)
    nfiles=$(ls one | grep -c -- '-of-')
    expect_true "$cmd: several files ($nfiles)" "[ $nfiles -ge 4 ]" ;;
  esac
  # The dry run's parts cover every file of one run's plan once, and each
  # part's bytes add up.
  # shellcheck disable=SC2086
  $Z $cmd --dry-run --json --part 2/3 "$in" q/ >dry.json && $Z $cmd --dry-run --json "$in" q/ >all.json
  expect_true "$cmd: dry-run parts" "/usr/bin/python3 - dry.json all.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
outs = json.load(open(sys.argv[2]))['files']
size = {o.get('path', o.get('output')): o.get('bytes', o.get('output_bytes')) for o in outs}
files = sorted(f for p in r['parts'] for f in p['files'])
assert files == sorted(size), (files, size)
assert [p['part'] for p in r['parts']] == [0, 1, 2]
for p in r['parts']:
    assert p['bytes'] == sum(size[f] for f in p['files'])
assert r['skipped'] == []
PY"
  expect_true "$cmd: dry run writes nothing" "[ ! -e q ]"
  for i in 1 2 0; do
    # shellcheck disable=SC2086
    $Z $cmd --quiet --part $i/3 "$in" p/ || bad "$cmd: part $i/3"
  done
  expect_true "$cmd: no index before finish" "! ls p | grep -q index"
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part finish "$in" p/ || bad "$cmd: finish"
  expect_same_folder "$cmd: 3 parts + finish = one run" one p
  rm -rf p
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/3 "$in" p/ && $Z $cmd --quiet --part finish "$in" p/ 2>err.txt
  rc=$?
  expect_true "$cmd: early finish exits 1 ($rc)" "[ $rc = 1 ] && grep -q 'is missing: the part that writes it has not finished' err.txt"
done
"$Z" shrink --part 0/2 --in-place "$FIX/hf/bloated" 2>err.txt
rc=$?
expect_true "shrink --part --in-place: exit 2 ($rc)" "[ $rc = 2 ] && grep -q -- '--part with --in-place' err.txt"
# One output file: the part it falls to writes it, the others nothing.
rm -rf one p
"$Z" convert --quiet --to torch "$TMP/one.bin" one/
"$Z" convert --quiet --to torch --part 1/2 "$TMP/one.bin" p/ && "$Z" convert --quiet --to torch --part finish "$TMP/one.bin" p/ 2>err.txt
rc=$?
expect_true "one file: finish before its part: exit 1 ($rc)" "[ $rc = 1 ] && grep -q 'p/pytorch_model.bin: corrupt: is missing' err.txt && [ -z \"\$(ls p)\" ]"
"$Z" convert --quiet --to torch --part 0/2 "$TMP/one.bin" p/ && "$Z" convert --quiet --to torch --part finish "$TMP/one.bin" p/
expect_same_folder "one file: 2 parts + finish = one run" one p

# A file OUT is one file, written by one run: a usage error naming it.
for c in "convert --to safetensors|$TMP/st|u.safetensors" "shrink --to safetensors|$FIX/hf/bloated|u.safetensors" \
  "convert|$FIX/torch/parameters.pt|u.safetensors"; do
  IFS='|' read -r cmd in o <<<"$c"
  # shellcheck disable=SC2086
  $Z $cmd --part 0/2 "$in" "$o" 2>err.txt
  rc=$?
  want="zerofold: $o: invalid argument: --part divides the files of a folder OUT; this OUT is one file, written by one run (end OUT with '/' for a folder)"
  expect_true "$cmd --part into a file: exit 2 ($rc), nothing written" "[ $rc = 2 ] && [ ! -e $o ]"
  expect_true "$cmd --part into a file: the message" "[ \"\$(head -1 err.txt)\" = \"\$want\" ]"
done

# The report of a part: its files, their bytes, those found complete.
CK=$FIX/deepspeed/zero3_ws4_fp32/ckpt
HF=$FIX/hf/bloated
SF="--to safetensors --max-shard-size 4KB"
rm -rf p
# shellcheck disable=SC2086
"$Z" convert $SF --dry-run --json --part 1/3 "$HF" p/ >dry.json
read -r nall nmine mine_bytes < <(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); p=r["parts"][1]; print(len(r["files"]), len(p["files"]), p["bytes"])' dry.json)
# shellcheck disable=SC2086
"$Z" convert $SF --part 1/3 "$HF" p/ >out1.txt && "$Z" convert $SF --part 1/3 --json "$HF" p/ >rerun.json &&
  "$Z" convert $SF --part 1/3 "$HF" p/ >out2.txt
expect_true "part report: $nmine of $nall files, $mine_bytes bytes" "[ $nmine -ge 1 ] && [ \"\$(tail -1 out1.txt)\" = \"part 1/3: $nmine of $nall files, \$(/usr/bin/python3 -c 'import sys; n=int(sys.argv[1]); print(f\"{n/1000:.1f} KB\")' $mine_bytes); run --part finish after every part\" ]"
expect_true "part report: the part's files, one line each" "[ \$(grep -c -- '-> p/model-' out1.txt) = $nmine ] && ! grep -q skipped out1.txt"
expect_true "rerun report: every file skipped" "[ \$(grep -c 'already complete, skipped]' out2.txt) = $nmine ] && tail -1 out2.txt | grep -q \"($nmine already complete, skipped)\""
expect_true "rerun --json: skipped = the part's files" "/usr/bin/python3 - rerun.json dry.json <<'PY'
import json, sys
r, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r['skipped'] == d['parts'][1]['files'], (r['skipped'], d['parts'][1])
assert r['parts'] == d['parts']
assert r['index'] is None and r['copied'] == [] and r['removed'] == []
PY"
for i in 0 2; do "$Z" convert $SF --quiet --part $i/3 "$HF" p/; done
# shellcheck disable=SC2086
"$Z" convert $SF --part finish --json "$HF" p/ >fin.json
expect_true "finish --json: index, copies" "/usr/bin/python3 - fin.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r['parts'] is None and r['skipped'] == []
assert r['index'] == 'p/model.safetensors.index.json' and r['copied'] == ['config.json'], r
PY"

# merge --part finish --verify reads every file back against the sources:
# a flipped byte of tensor data is refused naming the file, no index.
rm -rf mv
for i in 0 1; do "$Z" merge --quiet --part $i/2 --to safetensors --max-shard-size 2KB "$FIX/deepspeed/zero3_ws4_fp32/ckpt" mv; done
f=$(ls mv | head -1)
printf '\x7f' | dd of="mv/$f" bs=1 seek=$(($(stat -c %s "mv/$f") - 1)) conv=notrunc 2>/dev/null
"$Z" merge --quiet --part finish --verify --to safetensors --max-shard-size 2KB "$FIX/deepspeed/zero3_ws4_fp32/ckpt" mv 2>err.txt
rc=$?
expect_true "merge finish --verify: exit 1 ($rc) naming mv/$f, no index" \
  "[ $rc = 1 ] && grep -q \"^zerofold: mv/$f: .*corrupt: \" err.txt && ! ls mv | grep -q index"
"$Z" merge --quiet --part finish --to safetensors --max-shard-size 2KB "$FIX/deepspeed/zero3_ws4_fp32/ckpt" mv
expect_true "merge finish without --verify: sizes only ($?)" "[ $? = 0 ] && ls mv | grep -q index"

# convert of a file into torch shards: finish --verify reads each shard back
# and compares it with the input's tensors: a flipped byte of a storage
# record is refused naming the shard, and no index is written.
rm -rf ts
for i in 0 1; do "$Z" convert --quiet --to torch --max-shard-size 300B --part $i/2 "$FIX/torch/state_dict.pt" ts/; done
f=ts/pytorch_model-00001-of-00002.bin
"$PY" - "$f" <<'PYEOF'
import struct, sys, zipfile
path = sys.argv[1]
info = next(i for i in zipfile.ZipFile(path).infolist() if "/data/" in i.filename)
with open(path, "r+b") as f:
    f.seek(info.header_offset)
    head = f.read(30)
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    at = info.header_offset + 30 + name_len + extra_len
    f.seek(at)
    b = f.read(1)
    f.seek(at)
    f.write(bytes([b[0] ^ 0xFF]))
PYEOF
"$Z" convert --quiet --to torch --max-shard-size 300B --part finish --verify "$FIX/torch/state_dict.pt" ts/ 2>err.txt
rc=$?
expect_true "convert into torch shards, finish --verify: exit 1 ($rc) naming $f, no index" \
  "[ $rc = 1 ] && grep -q \"^zerofold: $f: .*corrupt: tensor differs\" err.txt && ! ls ts | grep -q index"
"$Z" convert --quiet --to torch --max-shard-size 300B --part finish "$FIX/torch/state_dict.pt" ts/
expect_true "convert into torch shards, finish without --verify: sizes only ($?)" "[ $? = 0 ] && ls ts | grep -q index"

# One output file, two parts: part 1 has no file and verifies none (it
# opened part 0's file, not yet written: exit 3); part 0 and finish check it.
rm -rf one
"$Z" convert --quiet --to torch --verify --part 1/2 "$FIX/torch/state_dict.pt" one/ 2>err.txt
expect_true "one file, --verify --part 1/2: exit 0 ($?), nothing written" "[ $? = 0 ] && [ -z \"\$(ls one 2>/dev/null)\" ]"
for p in 0/2 finish; do
  "$Z" convert --to torch --verify --part $p "$FIX/torch/state_dict.pt" one/ >out.txt 2>err.txt
  expect_true "one file, --verify --part $p: 9 tensors verified" "grep -qx 'verified 9 tensors, 404 bytes' out.txt"
done
rm -rf one

# A file complete in size but not in value: skipped without --verify,
# refused with it (exit 1 naming the file), for safetensors and torch.
for c in "convert $SF|p|model-00001-of-00005.safetensors" "shrink|pt|pytorch_model-00001-of-00003.bin"; do
  IFS='|' read -r cmd o f <<<"$c"
  rm -rf "$o" "${o}1"
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/1 "$HF" "$o/"
  # A byte of tensor data: the last of a safetensors file, the first of a
  # torch archive's first data/ record.
  at=$(/usr/bin/python3 - "$o/$f" <<'PY'
import os, struct, sys, zipfile
path = sys.argv[1]
if not zipfile.is_zipfile(path):
    print(os.path.getsize(path) - 1)
    sys.exit()
with zipfile.ZipFile(path) as z, open(path, 'rb') as f:
    info = next(i for i in z.infolist() if '/data/' in i.filename)
    f.seek(info.header_offset + 26)
    n, m = struct.unpack('<HH', f.read(4))
    print(info.header_offset + 30 + n + m)
PY
)
  printf '\x7f' | dd of="$o/$f" bs=1 seek="$at" conv=notrunc 2>/dev/null
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/1 "$HF" "$o/"
  expect_true "$cmd: a flipped byte passes the size check ($?)" "[ $? = 0 ]"
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/1 --verify "$HF" "$o/" 2>err.txt
  rc=$?
  expect_true "$cmd --verify: a skipped file checked: exit 1 ($rc) naming $f" "[ $rc = 1 ] && grep -q \"^zerofold: $o/$f: .*corrupt: \" err.txt"
  # finish --verify checks every file's values, and writes no index then.
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part finish --verify "$HF" "$o/" 2>err.txt
  rc=$?
  expect_true "$cmd finish --verify: exit 1 ($rc) naming $f, no index" \
    "[ $rc = 1 ] && grep -q \"^zerofold: $o/$f: .*corrupt: \" err.txt && ! ls $o | grep -q index"
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/1 --force --verify "$HF" "$o/" && $Z $cmd --quiet --part finish "$HF" "$o/" &&
    $Z $cmd --quiet "$HF" "${o}1/"
  expect_same_folder "$cmd: --force rewrites it; = one run" "${o}1" "$o"
done

# A file of another size: a usage error naming it and both sizes.
rm -rf p
# shellcheck disable=SC2086
"$Z" convert $SF --quiet --part 0/2 "$HF" p/
f=$(ls p | head -1)
planned=$(stat -c %s "p/$f")
echo junk >>"p/$f"
# shellcheck disable=SC2086
"$Z" convert $SF --part 0/2 "$HF" p/ 2>err.txt
rc=$?
expect_true "wrong size: exit 2 ($rc)" "[ $rc = 2 ]"
expect_true "wrong size: the message" "[ \"\$(cat err.txt)\" = \"zerofold: p/$f: invalid argument: exists with $((planned + 5)) bytes, not the $planned this plan gives it (a file of another save, or of other flags); rerun this part with --force to rewrite its files\" ]"

# A failing finish leaves nothing: no OUT folder, no file.
for cmd in "shrink" "convert $SF"; do
  # shellcheck disable=SC2086
  $Z $cmd --part finish "$HF" nothing/ 2>err.txt
  rc=$?
  expect_true "$cmd: finish with no part run: exit 1 ($rc), OUT not created" "[ $rc = 1 ] && [ ! -e nothing ]"
done

# Files of an earlier save that the plan does not write: what one run does.
# merge refuses them without --force (exit 2, naming the file); so do its
# parts and finish; with --force, finish removes them.
rm -rf one p
"$Z" merge --quiet --max-shard-size 1KB "$CK" one
mkdir p && cp one/pytorch_model-00001-of-00020.bin p/pytorch_model-00001-of-00099.bin
"$Z" merge --quiet --max-shard-size 1KB "$CK" p 2>err.txt
expect_true "merge one run: an earlier save refused ($?)" "grep -q 'p/pytorch_model-00001-of-00099.bin: invalid argument: is part of an earlier save' err.txt"
"$Z" merge --quiet --part 0/2 --max-shard-size 1KB "$CK" p 2>err.txt
rc=$?
expect_true "merge part: the earlier save's file refused: exit 2 ($rc)" "[ $rc = 2 ] && [ \"\$(cat err.txt)\" = 'zerofold: p/pytorch_model-00001-of-00099.bin: invalid argument: is part of an earlier save in the output folder, not of this plan; use --force (with every part and finish) to replace that save: --part finish then removes it' ]"
expect_true "merge part refused: nothing written" "[ \"\$(ls p)\" = pytorch_model-00001-of-00099.bin ]"
for i in 0 1; do "$Z" merge --quiet --force --part $i/2 --max-shard-size 1KB "$CK" p; done
"$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p 2>err.txt
rc=$?
expect_true "merge finish: the earlier save's file refused: exit 2 ($rc), kept, no index" "[ $rc = 2 ] && grep -q 'p/pytorch_model-00001-of-00099.bin: invalid argument: is part of an earlier save' err.txt && [ -e p/pytorch_model-00001-of-00099.bin ] && ! ls p | grep -q index"
"$Z" merge --quiet --force --part finish --max-shard-size 1KB "$CK" p
expect_same_folder "merge finish --force: removed; = one run" one p
# convert --to safetensors into a folder treats an earlier save as merge
# does (output/target.h): refused without --force; with it replaced whole
# (as save_pretrained does), by one run or by finish.
rm -rf one p
# shellcheck disable=SC2086
"$Z" convert $SF --quiet "$HF" one/
for o in one p; do mkdir -p $o && cp one/model-00001-of-00005.safetensors $o/model-00001-of-00099.safetensors; done
# shellcheck disable=SC2086
"$Z" convert $SF --quiet "$HF" one/ 2>err.txt
rc=$?
expect_true "convert one run: the earlier save refused without --force: exit 2 ($rc), kept" "[ $rc = 2 ] && [ -e one/model-00001-of-00099.safetensors ]"
# shellcheck disable=SC2086
"$Z" convert $SF --quiet --force "$HF" one/
expect_true "convert one run --force: the earlier save's file removed" "[ ! -e one/model-00001-of-00099.safetensors ]"
# shellcheck disable=SC2086
"$Z" convert $SF --quiet --part 1/2 "$HF" p/ 2>err.txt
rc=$?
expect_true "convert part: the earlier save refused without --force: exit 2 ($rc)" "[ $rc = 2 ] && grep -q 'p/model-00001-of-00099.safetensors: invalid argument: is part of an earlier save' err.txt"
# shellcheck disable=SC2086
for i in 1 0; do "$Z" convert $SF --quiet --force --part $i/2 "$HF" p/; done
expect_true "convert part: the earlier save's file left to finish" "[ -e p/model-00001-of-00099.safetensors ]"
# shellcheck disable=SC2086
"$Z" convert $SF --quiet --force --part finish "$HF" p/
expect_same_folder "convert finish --force: removed; = one run" one p

# Finish before every part: exit 1 naming a file the missing part writes.
rm -rf p one
"$Z" merge --quiet --max-shard-size 1KB "$CK" one
"$Z" merge --quiet --part 0/2 --max-shard-size 1KB "$CK" p
"$Z" merge --dry-run --json --part 1/2 --max-shard-size 1KB "$CK" p >dry.json
first=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parts"][1]["files"][0])' dry.json)
"$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p 2>err.txt
rc=$?
expect_true "finish early: exit 1 ($rc)" "[ $rc = 1 ]"
expect_true "finish early: names $first" "[ \"\$(cat err.txt)\" = \"zerofold: $first: corrupt: is missing: the part that writes it has not finished; rerun that part\" ]"
expect_true "finish early: no index" "! ls p | grep -q index"
# The part rerun skips its finished files and writes nothing new.
before=$(stat -c %Y.%i p/* | sort | tr '\n' ' ')
"$Z" merge --part 0/2 --max-shard-size 1KB "$CK" p >out.txt
expect_true "rerun skips complete files" "grep -q 'already complete, skipped' out.txt && [ \"$before\" = \"\$(stat -c %Y.%i p/* | sort | tr '\n' ' ')\" ]"
"$Z" merge --quiet --part 0/2 --verify --max-shard-size 1KB "$CK" p
expect_true "rerun with --verify checks skipped files: exit 0" "[ $? = 0 ]"
"$Z" merge --quiet --part 1/2 --max-shard-size 1KB "$CK" p && "$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p
expect_same_folder "parts after a refused finish = one run" one p

# A part killed mid-write (SIGKILL) and rerun: exactly the expected files.
# The kill lands at a varying point; the outcome must not depend on it.
for delay in 0.01 0.03 0.1; do
  rm -rf p
  "$Z" merge --quiet --part 0/2 --max-shard-size 1KB --buffer-size 4KiB "$CK" p &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # A temp file the killed writer left is swept by the rerun (its writer is gone).
  "$Z" merge --quiet --part 0/2 --max-shard-size 1KB "$CK" p
  "$Z" merge --quiet --part 1/2 --max-shard-size 1KB "$CK" p
  "$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p
  expect_same_folder "killed after ${delay}s, rerun: identical, no temp file" one p
done

# Usage errors: exit 2, nothing written.
for v in 3/3 1/0 -1/2 x 1/2/3 ""; do
  "$Z" merge --part "$v" "$CK" u 2>err.txt
  rc=$?
  expect_true "--part '$v': exit 2 ($rc)" "[ $rc = 2 ] && [ ! -e u ]"
done
"$Z" merge --part 0/2 "$CK" u.bin 2>err.txt
rc=$?
expect_true "--part with a file OUT: exit 2 ($rc)" "[ $rc = 2 ] && grep -q 'divides the files of a folder OUT' err.txt && [ ! -e u.bin ]"
"$Z" merge --part 1/4 --help >/dev/null
expect_true "--help names --part" "\"$Z\" merge --help | grep -q -- '--part I/N|finish'"

zf_finish
