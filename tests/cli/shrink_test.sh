#!/usr/bin/env bash
# zerofold shrink from the command line: exit codes and exact stderr lines for usage
# errors, missing and corrupt input; no partial output after a failure; refusals (existing
# OUT, OUT = IN); --in-place (atomic: a new inode, the content shrunk); --dry-run (writes
# nothing, prints the plan); --json; --verify; and every fixture truncated at 50 points or
# with flipped central-directory and pickle bytes: exit 1 with one error line, never a crash.
#
#   ZEROFOLD=build/zerofold bash tests/cli/shrink_test.sh
source "$(dirname "$0")/lib.sh"

hint='zerofold: hint: run '"'"'zerofold shrink --help'"'"''
views=$F/torch/views.pt
mkdir -p "$T/w"
cd "$T/w" || exit 1

# --- usage errors: exit 2, the message and the hint --------------------------------------
run_z shrink
expect "no arguments" 2 "zerofold: shrink: needs IN and OUT
$hint
"
run_z shrink a.pt
expect "one argument" 2 "zerofold: shrink: needs IN and OUT
$hint
"
run_z shrink a.pt b.pt c.pt
expect "three arguments" 2 "zerofold: shrink: needs IN and OUT
$hint
"
run_z shrink --bogus a.pt b.pt
expect "unknown flag" 2 "zerofold: shrink: unknown flag --bogus (see --help)
$hint
"
run_z shrink --in-place a.pt b.pt
expect "--in-place with OUT" 2 "zerofold: shrink: --in-place takes one path, IN
$hint
"
run_z shrink "$views" b.pt --buffer-size
expect "flag without its value" 2 "zerofold: shrink: flag --buffer-size needs a value (SIZE)
$hint
"
run_z shrink --buffer-size 12 "$views" b.pt
expect "buffer too small" 2 "zerofold: shrink: --buffer-size needs 4KiB to 4GiB
$hint
"
run_z shrink --verify --dry-run "$views" b.pt
expect "--verify with --dry-run" 2 "zerofold: shrink: --verify reads the output back; --dry-run writes none
$hint
"
for combo in "- out.pt|a stream ('-', .zst) cannot be re-read" \
             "$views out.pt.zst|a stream ('-', .zst) cannot be re-read" \
             "--dtype bfloat16 $views out.pt|--dtype changes the tensors"; do
  read -r -a words <<<"${combo%%|*}"
  run_z shrink --verify "${words[@]}" </dev/null
  expect "--verify ${combo%%|*}" 2 "zerofold: shrink: --verify: ${combo#*|}
$hint
"
done
# A file into torch shards: every shard read back and compared (convert/torch_shards.cc).
run_z shrink --verify --max-shard-size 300B "$F/torch/state_dict.pt" outdir/
expect "--verify into torch shards" 0 ""
grep -qx "verified 9 tensors, 404 bytes" "$OUT" || fail "--verify into torch shards: want 9 tensors verified: $(cat "$OUT")"
expect_true "--verify into torch shards: two shards and the index" \
  "[ \"\$(ls outdir | tr '\n' ' ')\" = 'pytorch_model-00001-of-00002.bin pytorch_model-00002-of-00002.bin pytorch_model.bin.index.json ' ]"
rm -rf outdir
# safetensors output is verified too (rewrite/convert.h ConvertOptions::verify).
run_z shrink --verify --to safetensors "$views" out.safetensors
expect "--verify --to safetensors" 0 ""
n=$("$Z" inspect --json out.safetensors | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["files"][0]["tensors"]))')
grep -qx "verified $n tensors, [0-9]* bytes" "$OUT" || fail "--verify --to safetensors: want $n tensors verified: $(cat "$OUT")"
rm -f out.safetensors
run_z frobnicate
expect "unknown command" 2 "zerofold: unknown command 'frobnicate'
zerofold: hint: run 'zerofold --help'
"
run_z shrink --help
expect "--help" 0 ""
head -n 1 "$OUT" | grep -qx 'usage: zerofold shrink \[FLAGS\] IN OUT' || fail "--help: first line $(head -n 1 "$OUT")"
grep -q -- '--verify' "$OUT" || fail "--help does not list --verify"
expect_empty_dir "usage errors" "$T/w"

# --- missing input, missing output folder: exit 3 ----------------------------------------
run_z shrink "$T/nope.pt" out.pt
expect "missing input" 3 "zerofold: $T/nope.pt: not found: open: No such file or directory
"
run_z shrink "$views" nodir/out.pt
expect "missing output folder" 3 "zerofold: nodir/out.pt: not found: create temp file: No such file or directory
"
expect_empty_dir "missing input" "$T/w"

# --- corrupt input: exit 1, one line naming file, record and offset ----------------------
# state_dict.pt with its last pickle opcode (STOP, at byte 905) flipped and the CRC-32
# repaired, so the pickle decoder meets it.
"$PY" - "$F/torch/state_dict.pt" "$T/stop_flipped.pt" <<'EOF'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
assert b[905] == ord(".")
b[905] ^= 0xFF
crc = zlib.crc32(bytes(b[64:906]))
struct.pack_into("<I", b, b.find(b"PK\x01\x02") + 16, crc)
struct.pack_into("<I", b, 910, crc)  # the data descriptor after data.pkl
open(sys.argv[2], "wb").write(b)
EOF
run_z shrink "$T/stop_flipped.pt" out.pt
expect "corrupt pickle" 1 "zerofold: $T/stop_flipped.pt: state_dict/data.pkl @ 905: corrupt: unknown opcode 0xd1
"
head -c 2000 "$F/torch/state_dict.pt" >"$T/cut.pt"
run_z shrink "$T/cut.pt" out.pt
expect "truncated" 1 "zerofold: $T/cut.pt: @ 0: corrupt: no end of central directory record in the last 2000 bytes: not a zip archive, or truncated
"
# Deflated records are inflated and CRC-checked; the stored rewrite of this
# compact archive would be bigger, so it is copied unchanged: never bigger.
run_z shrink "$F/bad/deflated.pt" out.pt
expect "deflated" 0 ""
cmp -s out.pt "$F/bad/deflated.pt" || fail "deflated: a compact archive not copied unchanged ($(size out.pt) bytes)"
"$Z" inspect --json "$F/bad/deflated.pt" | grep -q '"deflated_records":11,"crc32_unrecorded_records":0}' || fail "deflated: input not counted"
rm -f out.pt
run_z shrink "$F/bad/unsafe_eval.pt" out.pt
expect "unsafe" 1 "zerofold: $F/bad/unsafe_eval.pt: unsafe: pickle references unsafe globals: builtins.eval (runs code: running or compiling code) (--keep-unsafe carries them through unexecuted)
"
expect_empty_dir "bad input" "$T/w"
# --json: the error object on stdout, the line on stderr.
run_z shrink --json "$T/stop_flipped.pt" out.pt
expect "corrupt pickle, --json" 1 "zerofold: $T/stop_flipped.pt: state_dict/data.pkl @ 905: corrupt: unknown opcode 0xd1
"
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d == {"error": {"code": "corrupt", "record": "state_dict/data.pkl", "offset": 905,
                       "message": "unknown opcode 0xd1", "path": sys.argv[2]}}, d' "$OUT" "$T/stop_flipped.pt" || fail "--json error object: $(cat "$OUT")"
expect_empty_dir "bad input, --json" "$T/w"

# --- an existing OUT is refused without --force; OUT = IN without --in-place -------------
echo "keep me" >out.pt
run_z shrink "$views" out.pt
expect "existing OUT" 2 "zerofold: out.pt: invalid argument: exists; use --force to replace it
"
[ "$(cat out.pt)" = "keep me" ] || fail "existing OUT was changed"
run_z shrink --force "$views" out.pt
expect "--force" 0 ""
[ "$(size out.pt)" -lt "$(size "$views")" ] || fail "--force: out.pt not shrunk"
cp "$views" in.pt
run_z shrink --force in.pt in.pt
expect "OUT is IN" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
$hint
"
cmp -s in.pt "$views" || fail "OUT is IN: the input changed"
# The same file by another name is still the input: "./", an absolute path, a symlink to it,
# a hard link; IN a symlink to OUT; also with --to safetensors. Nothing changes.
ln -s in.pt sym.pt
ln in.pt hard.pt
for o in ./in.pt "$PWD/in.pt" sym.pt hard.pt; do
  run_z shrink --force in.pt "$o"
  expect "OUT is IN as $o" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
$hint
"
done
run_z shrink --force sym.pt in.pt
expect "OUT is IN: IN a symlink to OUT" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
$hint
"
run_z shrink --force --to safetensors in.pt ./in.pt
expect "OUT is IN, --to safetensors" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
$hint
"
cmp -s in.pt "$views" || fail "OUT is IN by another name: the input changed"
[ -L sym.pt ] && [ "$(inode hard.pt)" = "$(inode in.pt)" ] || fail "OUT is IN by another name: a link was replaced"
rm -f out.pt in.pt sym.pt hard.pt
# Folders: OUT the folder IN by another name; an OUT file that is an input shard (a hard
# link, a symlink); a file IN whose folder OUT holds it (written over, or removed as an
# earlier save when sharding); --to safetensors into a folder holding a link to IN.
mkdir -p "$T/same" && cp -r "$F/hf/bloated" "$T/same/hf" && mkdir "$T/same/o" "$T/same/st" "$T/same/single"
cd "$T/same" || exit 1
cp "$views" single/pytorch_model.bin
shard2=pytorch_model-00002-of-00003.bin
ln "hf/$shard2" "o/$shard2"
ln -s ../single/pytorch_model.bin st/model.safetensors
cp -r hf hf.orig
for o in ./hf/ "$T/same/hf"; do
  run_z shrink --quiet hf "$o"
  expect "folder OUT is IN as $o" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
$hint
"
done
run_z shrink --quiet hf o
expect "an OUT shard is an input shard (hard link)" 2 "zerofold: o/$shard2: invalid argument: is an input file, which the output would destroy: hf/$shard2
"
rm "o/$shard2" && ln -s "../hf/$shard2" "o/$shard2"
run_z shrink --quiet hf o
expect "an OUT shard is an input shard (symlink)" 2 "zerofold: o/$shard2: invalid argument: is an input file, which the output would destroy: hf/$shard2
"
[ "$(ls -A o)" = "$shard2" ] || fail "a refused folder shrink wrote: $(ls -A o)"
diff -r hf hf.orig >/dev/null || fail "a refused folder shrink changed the input"
for limit in 1GB 100B; do
  run_z shrink --quiet --max-shard-size $limit single/pytorch_model.bin single/
  expect "IN in its folder OUT, --max-shard-size $limit" 2 "zerofold: single/pytorch_model.bin: invalid argument: is an input file, which the output would destroy
"
done
run_z shrink --quiet --to safetensors single/pytorch_model.bin st/
expect "--to safetensors onto a link to IN" 2 "zerofold: st/model.safetensors: invalid argument: is an input file, which the output would destroy: single/pytorch_model.bin
"
cmp -s single/pytorch_model.bin "$views" && [ "$(ls -A single)" = pytorch_model.bin ] || fail "a refused shard or conversion changed the input"
[ -L st/model.safetensors ] && [ "$(ls -A st)" = model.safetensors ] || fail "a refused conversion wrote into st: $(ls -A st)"
cd "$T/w" && rm -rf "$T/same"

# --- a failure leaves no partial output, and no temp file --------------------------------
mkdir -p "$T/ro" && cp "$views" "$T/ro/in.pt"
head -c 1500 "$views" >"$T/ro/cut.pt"   # cut inside the storage records
run_z shrink "$T/ro/cut.pt" "$T/ro/out.pt"
expect "cut inside the data" 1 "zerofold: $T/ro/cut.pt: @ 0: corrupt: no end of central directory record in the last 1500 bytes: not a zip archive, or truncated
"
[ "$(ls -A "$T/ro" | sort | tr '\n' ' ')" = "cut.pt in.pt " ] || fail "after a failure: $(ls -A "$T/ro")"
rm -rf "$T/ro"

# --- --in-place: a new inode, the content shrunk, nothing else in the folder -------------
mkdir -p "$T/ip" && cp "$views" "$T/ip/views.pt"
before_inode=$(inode "$T/ip/views.pt")
run_z shrink --in-place "$T/ip/views.pt"
expect "--in-place" 0 ""
[ "$(inode "$T/ip/views.pt")" != "$before_inode" ] || fail "--in-place: same inode (not replaced by rename)"
[ "$(size "$T/ip/views.pt")" -lt "$(size "$views")" ] || fail "--in-place: not shrunk"
[ "$(ls -A "$T/ip")" = "views.pt" ] || fail "--in-place: left $(ls -A "$T/ip")"
"$Z" shrink "$views" "$T/views.pt" >/dev/null 2>&1
cmp -s "$T/ip/views.pt" "$T/views.pt" || fail "--in-place: bytes differ from shrinking to another file"
rm -f "$T/views.pt"
# A folder, in place: each shard replaced, other files left as they are.
cp -r "$F/hf/bloated" "$T/ip/hf"
declare -A inodes=()
for f in "$T/ip/hf"/*; do inodes[$f]=$(inode "$f"); done
run_z shrink --in-place --quiet "$T/ip/hf"
expect "--in-place folder" 0 ""
for f in "$T/ip/hf"/*.bin; do
  [ "$(inode "$f")" != "${inodes[$f]}" ] || fail "--in-place folder: $f not replaced"
  [ "$(size "$f")" -lt "$(size "$F/hf/bloated/$(basename "$f")")" ] || fail "--in-place folder: $f not shrunk"
done
[ "$(inode "$T/ip/hf/config.json")" = "${inodes[$T/ip/hf/config.json]}" ] || fail "--in-place folder: config.json rewritten"
[ "$(ls -A "$T/ip/hf" | tr '\n' ' ')" = "$(ls -A "$F/hf/bloated" | tr '\n' ' ')" ] || fail "--in-place folder: files $(ls -A "$T/ip/hf")"
rm -rf "$T/ip"

# A folder OUT that holds this plan's files: refused without --force (as a
# file OUT is), untouched; --force replaces them.
mkdir -p "$T/again"
"$Z" shrink --quiet "$F/hf/bloated" "$T/again/o"
first=$(inode "$T/again/o/pytorch_model-00001-of-00003.bin")
run_z shrink --quiet "$F/hf/bloated" "$T/again/o"
expect "folder OUT with this plan's files" 2 "zerofold: $T/again/o/pytorch_model-00001-of-00003.bin: invalid argument: exists; use --force to replace it
"
[ "$(inode "$T/again/o/pytorch_model-00001-of-00003.bin")" = "$first" ] || fail "refused folder OUT: a shard was rewritten"
run_z shrink --quiet --force "$F/hf/bloated" "$T/again/o"
expect "folder OUT with --force" 0 ""
[ "$(inode "$T/again/o/pytorch_model-00001-of-00003.bin")" != "$first" ] || fail "--force: the shard was not rewritten"
# A copied file (config.json) of an earlier run is an output too.
rm -f "$T/again/o"/pytorch_model*
run_z shrink --quiet "$F/hf/bloated" "$T/again/o"
expect "folder OUT with this run's config.json" 2 "zerofold: $T/again/o/config.json: invalid argument: exists; use --force to replace it
"
[ "$(ls "$T/again/o")" = "config.json" ] || fail "refused folder OUT: wrote $(ls "$T/again/o")"
# A shard that fails after others were written: what the run wrote is removed.
cp -r "$F/hf/bloated" "$T/again/hf"
head -c 3000 "$F/hf/bloated/pytorch_model-00002-of-00003.bin" >"$T/again/hf/pytorch_model-00002-of-00003.bin"
run_z shrink --quiet "$T/again/hf" "$T/again/failed"
[ "$RC" = 1 ] || fail "a truncated second shard: exit $RC, want 1"
[ ! -e "$T/again/failed" ] && ok || fail "a failed folder shrink left $T/again/failed: $(ls -A "$T/again/failed")"
rm -rf "$T/again"

# --- --dry-run writes nothing and prints the plan ----------------------------------------
run_z shrink --dry-run "$views" out.pt
expect "--dry-run" 0 ""
# Storage 0's 44 unreferenced bytes cost less than the two records splitting
# it would add: kept whole, and said so.
want="$views -> out.pt: 1.8 KB -> 1.4 KB (6 tensors, 2 -> 2 storages) [dry run]
  storage 1: 400 bytes -> 40
  storage 0: kept whole: 44 B unreferenced, less than splitting costs"
[ "$(cat "$OUT")" = "$want" ] || fail "--dry-run stdout:
$(cat "$OUT")
--- want:
$want"
expect_empty_dir "--dry-run" "$T/w"
run_z shrink --dry-run --json "$F/hf/bloated" outdir
expect "--dry-run folder" 0 ""
[ ! -e outdir ] || fail "--dry-run folder created outdir"
"$PY" -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["dry_run"] is True, d
assert [f["output"] for f in d["files"]] == ["outdir/pytorch_model-0000%d-of-00003.bin" % k for k in (1, 2, 3)], d
assert [f["stored_bytes_after"] for f in d["files"]] == [8512, 5312, 464], d
# The read plan: the shards read, then the copied config.json whole, last.
config = sys.argv[2] + "/config.json"
assert d["reads"][-1] == {"path": config, "offset": 0, "length": os.path.getsize(config)}, d["reads"]
assert all(r["path"].endswith(".bin") for r in d["reads"][:-1]), d["reads"]
assert d["read_bytes"] == sum(r["length"] for r in d["reads"]), d
' "$OUT" "$F/hf/bloated" || fail "--dry-run --json folder: $(cat "$OUT")"

# --- --json and --verify on success ------------------------------------------------------
run_z shrink --json --verify "$views" out.pt
expect "--json --verify" 0 ""
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
f, = d["files"]
assert d["dry_run"] is False
assert f["input_bytes"] == 1823 and f["output_bytes"] == 1439, f
assert f["stored_bytes_before"] == 656 and f["stored_bytes_after"] == 296, f
assert f["changed_storages"] == ["1: 400 bytes -> 40"], f
assert f["kept_whole"] == ["0: kept whole: 44 B unreferenced, less than splitting costs"], f
assert f["copied_unchanged"] is False, f
assert f["verified_tensors"] == 6 and f["verified_bytes"] == 264, f
' "$OUT" || fail "--json --verify: $(cat "$OUT")"
[ "$(size out.pt)" = 1439 ] || fail "--json: output_bytes is not the file size"

# --- never larger: an input the rewrite would not make smaller is copied unchanged -------
# A legacy file with nothing to reclaim: its zip form would be larger.
legacy="$F/torch/legacy_state_dict.pt"
rm -f out.pt
run_z shrink "$legacy" out.pt
expect "already compact" 0 ""
[ "$(cat "$OUT")" = "$legacy -> out.pt: 1.8 KB -> 1.8 KB (9 tensors, 9 -> 9 storages)
  already compact: copied unchanged" ] || fail "already compact stdout: $(cat "$OUT")"
cmp -s "$legacy" out.pt || fail "already compact: bytes differ from the input"
run_z shrink --json "$legacy" out2.pt
"$PY" -c '
import json, sys
f, = json.load(open(sys.argv[1]))["files"]
assert f["copied_unchanged"] is True and f["output_bytes"] == f["input_bytes"] == 1778, f
assert f["changed_storages"] == [] and f["storages_after"] == f["storages_before"], f
' "$OUT" || fail "already compact --json: $(cat "$OUT")"
rm -f out.pt out2.pt
# In place, it is left untouched: the same inode, the same bytes.
mkdir -p "$T/compact" && cp "$legacy" "$T/compact/l.pt"
ino=$(inode "$T/compact/l.pt")
run_z shrink --in-place "$T/compact/l.pt"
expect "already compact in place" 0 ""
[ "$(cat "$OUT")" = "$T/compact/l.pt -> $T/compact/l.pt: 1.8 KB -> 1.8 KB (9 tensors, 9 -> 9 storages)
  already compact: left untouched" ] || fail "already compact in place stdout: $(cat "$OUT")"
[ "$(inode "$T/compact/l.pt")" = "$ino" ] || fail "already compact in place: replaced"
cmp -s "$legacy" "$T/compact/l.pt" || fail "already compact in place: bytes changed"
# The stream form passes it through.
"$Z" shrink - - < "$legacy" > "$T/compact/s.pt" 2>/dev/null || fail "already compact stream: exit $?"
cmp -s "$legacy" "$T/compact/s.pt" || fail "already compact stream: bytes differ"
rm -rf "$T/compact"
run_z shrink --force --verify "$views" out.pt
expect "--verify" 0 ""
[ "$(tail -n 1 "$OUT")" = "verified 6 tensors, 264 bytes" ] || fail "--verify: $(tail -n 1 "$OUT")"
run_z shrink --force --verify --select optimizer/state "$F/torch/optimizer_state.pt" out.pt
expect "--verify --select" 0 ""
[ "$(tail -n 1 "$OUT")" = "verified 18 tensors, 688 bytes" ] || fail "--verify --select: $(tail -n 1 "$OUT")"
run_z shrink --force --quiet "$views" out.pt
expect "--quiet" 0 ""
[ ! -s "$OUT" ] || fail "--quiet printed $(cat "$OUT")"
rm -f out.pt

# --- damaged fixtures: exit 1 and one error line (truncated), or 0/1 (flipped bytes) -----
# Never a crash (exit >= 128), never partial output.
mkdir -p "$T/o"
check_damaged() {  # REL KIND FILE
  run_z shrink "$3" "$T/o/out.pt"
  check_bad_input_exit "$1 $2" "$2" || return
  if [ "$RC" = 1 ]; then
    check_error_line "$1 $2" "$3"
    dir_is_empty "$T/o" || fail "$1 $2: left behind: $(ls -A "$T/o")"
  else
    # A flip the format cannot see (a timestamp, a name byte the reader does not
    # compare): the output must then be a good archive.
    "$Z" inspect "$T/o/out.pt" >/dev/null 2>&1 || fail "$1 $2: exit 0 but the output does not read"
    rm -f "$T/o/out.pt"
  fi
}
for_each_damaged_input check_damaged

zf_finish
