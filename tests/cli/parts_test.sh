#!/usr/bin/env bash
# --part I/N and --part finish of merge, shrink and convert (folders): parts
# run in any order, then finish, give a folder byte-identical to one run
# (ZeRO, DCP, a sharded torch folder, a sharded safetensors folder; many files
# from a small --max-shard-size); finish before every part has run exits 1
# naming the missing file; a part killed (SIGKILL) and rerun leaves exactly
# the expected files; usage errors.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
FIX=$F
TMP=$T
cd "$TMP" || exit 1

bad() { ok; fail "$*"; }  # counted as a check that failed
check() { if eval "$2"; then ok; else bad "$1" "$2"; fi; }

# same_folder NAME A B: the same file names (hidden ones too) and bytes.
same_folder() {
  if [ "$(ls -A "$2")" = "$(ls -A "$3")" ] && diff -r "$2" "$3" >/dev/null; then ok; else
    bad "$1" "$(ls -A "$2" | tr '\n' ' ')" "$(ls -A "$3" | tr '\n' ' ')"
  fi
}

# run_parts CKPT OUT N ORDER... FLAGS...: runs the parts in ORDER, then finish.
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
  check "$name: several files ($nfiles)" "[ $nfiles -ge 4 ]"
  for i in 2 0 1; do
    # shellcheck disable=SC2086
    "$Z" merge --quiet --part $i/3 $flags "$ckpt" p || bad "$name: part $i/3"
  done
  check "$name: no index before finish" "! ls p | grep -q index"
  # shellcheck disable=SC2086
  "$Z" merge --quiet --part finish $flags "$ckpt" p || bad "$name: finish"
  same_folder "$name: 3 parts + finish = one run" one p
  # The dry run's parts cover every file once, and each part's bytes add up.
  # shellcheck disable=SC2086
  "$Z" merge --dry-run --json --part 1/3 $flags "$ckpt" q >dry.json
  check "$name: dry-run parts" "/usr/bin/python3 - dry.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
files = sorted(f for p in r['parts'] for f in p['files'])
assert files == sorted(o['path'] for o in r['outputs']), files
size = {o['path']: o['bytes'] for o in r['outputs']}
assert [p['part'] for p in r['parts']] == [0, 1, 2]
for p in r['parts']:
    assert p['bytes'] == sum(size[f] for f in p['files'])
PY"
  check "$name: dry run writes nothing" "[ ! -e q ]"
  # N=1: one part and finish.
  rm -rf p1
  # shellcheck disable=SC2086
  "$Z" merge --quiet --part 0/1 $flags "$ckpt" p1 && "$Z" merge --quiet --part finish $flags "$ckpt" p1
  same_folder "$name: 1 part + finish = one run" one p1
done

# shrink and convert of folders: the output files divided the same way
# (torch shards, and safetensors shards sharded afresh).
rm -rf st
"$Z" merge --quiet --to safetensors --max-shard-size 1KB "$FIX/deepspeed/zero3_ws4_fp32/ckpt" st
for c in "shrink|$FIX/hf/bloated" "convert --to torch|$TMP/st" \
  "convert --to safetensors --max-shard-size 4KB|$FIX/hf/bloated" \
  "shrink --to safetensors --max-shard-size 3KB|$FIX/hf/bloated" \
  "convert --to safetensors --max-shard-size 2KB|$TMP/st"; do
  IFS='|' read -r cmd in <<<"$c"
  rm -rf one p
  # shellcheck disable=SC2086
  $Z $cmd --quiet "$in" one/ || bad "$cmd: single run"
  case $cmd in *safetensors*)
    nfiles=$(ls one | grep -c 'model-.*safetensors$')
    check "$cmd: several files ($nfiles)" "[ $nfiles -ge 4 ]" ;;
  esac
  # The dry run's parts cover every file of one run's plan once, and each
  # part's bytes add up.
  # shellcheck disable=SC2086
  $Z $cmd --dry-run --json --part 2/3 "$in" q/ >dry.json && $Z $cmd --dry-run --json "$in" q/ >all.json
  check "$cmd: dry-run parts" "/usr/bin/python3 - dry.json all.json <<'PY'
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
  check "$cmd: dry run writes nothing" "[ ! -e q ]"
  for i in 1 2 0; do
    # shellcheck disable=SC2086
    $Z $cmd --quiet --part $i/3 "$in" p/ || bad "$cmd: part $i/3"
  done
  check "$cmd: no index before finish" "! ls p | grep -q index"
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part finish "$in" p/ || bad "$cmd: finish"
  same_folder "$cmd: 3 parts + finish = one run" one p
  rm -rf p
  # shellcheck disable=SC2086
  $Z $cmd --quiet --part 0/3 "$in" p/ && $Z $cmd --quiet --part finish "$in" p/ 2>err.txt
  rc=$?
  check "$cmd: early finish exits 1 ($rc)" "[ $rc = 1 ] && grep -q 'is missing: the part that writes it has not finished' err.txt"
done
"$Z" shrink --part 0/2 --in-place "$FIX/hf/bloated" 2>err.txt
rc=$?
check "shrink --part --in-place: exit 2 ($rc)" "[ $rc = 2 ] && grep -q -- '--part with --in-place' err.txt"
# A file OUT is one file, written by one run: a usage error naming it.
for c in "convert --to safetensors|$TMP/st|u.safetensors" "shrink --to safetensors|$FIX/hf/bloated|u.safetensors" \
  "convert|$FIX/torch/parameters.pt|u.safetensors"; do
  IFS='|' read -r cmd in o <<<"$c"
  # shellcheck disable=SC2086
  $Z $cmd --part 0/2 "$in" "$o" 2>err.txt
  rc=$?
  want="zerofold: ${cmd%% *}: --part divides the files of a folder OUT; '$o' is one file, written by one run (end OUT with '/' for a folder)"
  check "$cmd --part into a file: exit 2 ($rc), nothing written" "[ $rc = 2 ] && [ ! -e $o ]"
  check "$cmd --part into a file: the message" "[ \"\$(head -1 err.txt)\" = \"\$want\" ]"
done

# Finish before every part: exit 1 naming a file the missing part writes.
CK=$FIX/deepspeed/zero3_ws4_fp32/ckpt
rm -rf p one
"$Z" merge --quiet --max-shard-size 1KB "$CK" one
"$Z" merge --quiet --part 0/2 --max-shard-size 1KB "$CK" p
"$Z" merge --dry-run --json --part 1/2 --max-shard-size 1KB "$CK" p >dry.json
first=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parts"][1]["files"][0])' dry.json)
"$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p 2>err.txt
rc=$?
check "finish early: exit 1 ($rc)" "[ $rc = 1 ]"
check "finish early: names $first" "[ \"\$(cat err.txt)\" = \"zerofold: $first: corrupt: is missing: the part that writes it has not finished; rerun that part\" ]"
check "finish early: no index" "! ls p | grep -q index"
# The part rerun skips its finished files and writes nothing new.
before=$(stat -c %Y.%i p/* | sort | tr '\n' ' ')
"$Z" merge --part 0/2 --max-shard-size 1KB "$CK" p >out.txt
check "rerun skips complete files" "grep -q 'already complete, skipped' out.txt && [ \"$before\" = \"\$(stat -c %Y.%i p/* | sort | tr '\n' ' ')\" ]"
"$Z" merge --quiet --part 0/2 --verify --max-shard-size 1KB "$CK" p
check "rerun with --verify checks skipped files: exit 0" "[ $? = 0 ]"
"$Z" merge --quiet --part 1/2 --max-shard-size 1KB "$CK" p && "$Z" merge --quiet --part finish --max-shard-size 1KB "$CK" p
same_folder "parts after a refused finish = one run" one p

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
  same_folder "killed after ${delay}s, rerun: identical, no temp file" one p
done

# Usage errors: exit 2, nothing written.
for v in 3/3 1/0 -1/2 x 1/2/3 ""; do
  "$Z" merge --part "$v" "$CK" u 2>err.txt
  rc=$?
  check "--part '$v': exit 2 ($rc)" "[ $rc = 2 ] && [ ! -e u ]"
done
"$Z" merge --part 0/2 "$CK" u.bin 2>err.txt
rc=$?
check "--part with a file OUT: exit 2 ($rc)" "[ $rc = 2 ] && grep -q 'needs a folder OUT' err.txt && [ ! -e u.bin ]"
"$Z" merge --part 1/4 --help >/dev/null
check "--help names --part" "\"$Z\" merge --help | grep -q -- '--part I/N|finish'"

zf_finish
