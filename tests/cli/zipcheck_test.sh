#!/usr/bin/env bash
# Container parity and CRC-32 (issue 27) from the command line:
# - every zip fixtures/zipcheck/make_ambiguous.py crafts, which torch 1.13 reads (its
#   reading printed from readings.json), is refused with exit 1 and one line naming the
#   file, the record, the offset and both readings;
# - files torch 2.6 wrote with set_crc32_options(False) (CRC-32 0: not recorded) are
#   inspected (text and JSON say so), converted and diffed right;
# - a byte flipped inside a stored record is caught (exit 1, diff 2) by every command
#   that reads the record whole: convert, shrink, merge, diff, --verify.
#
#   ZEROFOLD=build/zerofold bash tests/cli/zipcheck_test.sh
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/w"
cd "$T/w" || exit 1
ZC=$F/zipcheck

# --- ambiguous zips -----------------------------------------------------------------------
"$PY" "$ZF_ROOT/fixtures/zipcheck/make_ambiguous.py" amb >amb.log 2>&1 || bad "make_ambiguous.py failed: $(cat amb.log)"
# reading CASE: what torch 1.13 read from amb/CASE.pt ("keys [..]" or "error ...").
reading() {
  "$PY" -c '
import json, sys
r = json.load(open("amb/readings.json"))[sys.argv[1]]
print("torch 1.13 reads keys %s" % r["keys"] if r["loads"] else "torch 1.13 fails: " + r["error"])' "$1"
}
# refused CASE COMMAND WANT_CODE WANT_TEXT...: COMMAND (inspect or convert) exits 1 with
# one well-formed line holding "WANT_CODE:" and each WANT_TEXT.
refused() {
  local name=$1 cmd=$2 code=$3
  shift 3
  if [ "$cmd" = convert ]; then run_z convert "amb/$name.pt" "amb/$name.safetensors"; else run_z inspect "amb/$name.pt"; fi
  echo "$name: $(reading "$name"); zerofold $cmd: $(head -1 "$ERR")"
  zf_checks=$((zf_checks + 1))
  [ "$RC" = 1 ] || fail "$name: zerofold $cmd exit $RC, want 1"
  check_error_line "$name" "amb/$name.pt"
  grep -qF -- "$code: " "$ERR" || fail "$name: not $code: $(cat "$ERR")"
  local want
  for want in "$@"; do grep -qF -- "$want" "$ERR" || fail "$name: stderr lacks '$want': $(cat "$ERR")"; done
  [ ! -e "amb/$name.safetensors" ] || fail "$name: convert left an output"
}
# torch_reads CASE KEY: torch 1.13 loaded the file and found KEY (what zerofold refuses).
torch_reads() {
  expect_true "$1: torch 1.13 loads it with key $2" \
    "\"\$PY\" -c 'import json,sys; r=json.load(open(\"amb/readings.json\"))[sys.argv[1]]; sys.exit(0 if r[\"loads\"] and r[\"keys\"]==[sys.argv[2]] else 1)' $1 $2"
}

torch_reads case_names a
refused case_names inspect ambiguous 't/DATA.PKL @ 664' '"t/data.pkl" and "t/DATA.PKL"' 'differ only in case' \
  'torch looks names up ignoring case'
torch_reads duplicate_names a
refused duplicate_names inspect ambiguous 't/data.pkl @ 664' 'duplicate entry name' 'entries at 499 and 664' \
  'torch reads whichever'
# torch reads the hidden end record's central directory, whose t/data.pkl is B's pickle
# (key "b"); zerofold's record lists A's.
torch_reads hidden_end_record b
refused hidden_end_record inspect ambiguous '@ 963' 'torch (miniz) reads the last signature, at 963' \
  'zerofold the record whose comment reaches the end of the file, at 720'
torch_reads bytes_before a
refused bytes_before inspect ambiguous 't/data.pkl @ 0' '202 bytes before the first entry' \
  'torch reads the entries the central directory lists' 'reads those bytes as a record'
# Local headers are read when a record is opened (inspect reads none of a storage's).
torch_reads local_name a
refused local_name convert ambiguous 't/data/0 @ 232' 'local header names "t/data/9", the central directory "t/data/0"' \
  'torch finds the record by the central name'
torch_reads local_encrypted a
refused local_encrypted convert ambiguous 't/data/0 @ 208' 'local header flags 0x0001 say encrypted' \
  'torch reads the bytes as they are'
# torch 1.13 "loads" a tensor of whatever its allocator held: miniz extracted nothing.
torch_reads directory_entry a
refused directory_entry inspect ambiguous 't/data/0 @ 391' 'marked a directory (external attributes 0x00000010)' \
  'torch reads none of them'
expect_true "size_past_end: torch 1.13 refuses it too" "reading size_past_end | grep -q 'torch 1.13 fails: RuntimeError'"
refused size_past_end inspect corrupt 't/data/0 @ 373' 'entry of 1048576 bytes with its local header at 202 runs past the central directory at 297'

# From a pipe (the stream reader walks local headers, then checks the central directory):
# every crafted zip is refused too, with exit 1 and no output (the case-folded twin and the
# directory entry passed through `shrink -` with exit 0 before).
for f in amb/*.pt; do
  name=$(basename "$f" .pt)
  run_z shrink - "amb/$name.piped.pt" <"$f"
  zf_checks=$((zf_checks + 1))
  [ "$RC" = 1 ] || fail "$name from a pipe: shrink exit $RC, want 1: $(cat "$ERR")"
  [ ! -e "amb/$name.piped.pt" ] || fail "$name from a pipe: shrink left an output"
done
for name in case_names directory_entry; do
  run_z shrink - "amb/$name.piped.pt" <"amb/$name.pt"
  expect_true "$name from a pipe: ambiguous" "grep -q 'ambiguous: ' '$ERR'"
done

# --- CRC-32 0: not recorded -------------------------------------------------------------------
crc0=$ZC/crc0_state_dict.pt
ref=$ZC/crc0_ref.pt
run_z inspect "$crc0"
expect "inspect of a CRC-0 file" 0 ""
expect_true "inspect says the CRC-32 is not recorded" \
  "grep -qx '  crc32: not recorded (0) for 8 of 8 zip records, as torch.serialization.set_crc32_options(False) writes them; those records are not checked' '$OUT'"
run_z inspect "$ref"
expect "inspect of the same file with CRCs" 0 ""
expect_true "no crc32 line when CRCs are recorded" "! grep -q crc32 '$OUT'"
run_z inspect --json "$crc0" "$ref"
expect "inspect --json" 0 ""
expect_true "JSON counts the unrecorded CRCs" "\"\$PY\" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [f[\"crc32_unrecorded_records\"] for f in d[\"files\"]] == [8, 0], d' '$OUT'"
run_z diff "$crc0" "$ref"
expect "diff CRC-0 against the file with CRCs: the same" 0 ""
run_z convert "$crc0" crc0.safetensors
expect "convert CRC-0 to safetensors" 0 ""
run_z diff crc0.safetensors "$ref"
expect "the safetensors output equals the reference" 0 ""
run_z convert --verify "$crc0" crc0_out.pt
expect "convert --verify CRC-0 to torch" 0 ""
expect_true "torch 1.13 loads the output equal to the reference" "\"\$PY\" -c '
import sys, torch
a = torch.load(sys.argv[1], weights_only=True); b = torch.load(sys.argv[2], weights_only=True)
assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)' crc0_out.pt '$ref'"
run_z shrink "$crc0" crc0_shrunk.pt
expect "shrink of a CRC-0 file" 0 ""
run_z convert - crc0_stream.pt <"$crc0"
expect "convert of a CRC-0 file from a pipe (the stream reader)" 0 ""
run_z diff crc0_stream.pt "$ref"
expect "the pipe's output equals the reference" 0 ""

# --- a flipped byte in a stored record ---------------------------------------------------------
# flip SRC RECORD DST: DST is SRC with one bit flipped in the middle of RECORD's data;
# prints the record's data offset.
flip() {
  "$PY" - "$@" <<'EOF'
import struct, sys, zipfile
src, record, dst = sys.argv[1:4]
i = zipfile.ZipFile(src).getinfo(record)
b = bytearray(open(src, "rb").read())
n, e = struct.unpack("<HH", b[i.header_offset + 26:i.header_offset + 30])
data = i.header_offset + 30 + n + e
b[data + i.file_size // 2] ^= 0x10
open(dst, "wb").write(b)
print(data)
EOF
}
at=$(flip "$ref" crc0_ref/data/0 flipped.pt)
want="zerofold: flipped.pt: crc0_ref/data/0 @ $at: corrupt: CRC-32 of the record's 96 bytes is "
for args in "convert flipped.pt f.safetensors" "convert flipped.pt f.pt" "convert --verify flipped.pt fv.pt" \
            "shrink flipped.pt fs.pt" "shrink --verify flipped.pt fsv.pt" "diff flipped.pt $ref" "diff $ref flipped.pt"; do
  read -r -a argv <<<"$args"
  run_z "${argv[@]}"
  zf_checks=$((zf_checks + 1))
  wrc=1
  [ "${argv[0]}" = diff ] && wrc=2
  [ "$RC" = "$wrc" ] || fail "flip: zerofold $args exit $RC, want $wrc"
  grep -qF -- "$want" "$ERR" || fail "flip: zerofold $args: $(cat "$ERR")"
done
expect_true "no output left by the refused runs" "[ ! -e f.safetensors ] && [ ! -e f.pt ] && [ ! -e fv.pt ] && [ ! -e fs.pt ] && [ ! -e fsv.pt ]"
# A part of a record is not checked: inspect reads no storage bytes.
run_z inspect flipped.pt
expect "inspect reads no storage record" 0 ""

# merge reads each rank's fp32 partition whole, in pieces.
cp -r "$F/deepspeed/zero2_ws3_bf16/ckpt" ds
rank=ds/global_step2/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt
at=$(flip "$rank" bf16_zero_pp_rank_1_mp_rank_00_optim_states/data/6 rank.tmp) && mv rank.tmp "$rank"
for out in m.safetensors m.pt; do
  run_z merge ds "$out"
  expect "merge to $out catches the flipped byte" 1 "zerofold: $rank: bf16_zero_pp_rank_1_mp_rank_00_optim_states/data/6 @ $at: corrupt: CRC-32 of the record's 42048 bytes is $(grep -o '0x[0-9a-f]*, the' "$ERR" | head -1) central directory says $(grep -o 'says 0x[0-9a-f]*' "$ERR" | cut -c6-)
"
  expect_true "merge to $out left no output" "[ ! -e $out ]"
done

zf_finish
