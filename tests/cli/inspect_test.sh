#!/usr/bin/env bash
# zerofold inspect from the command line: exit codes and exact stderr lines for usage
# errors, missing and corrupt input; several paths (each listed or reported, the worst exit
# code); --json parses and names failed files; every fixture truncated at 50 points or with
# flipped central-directory and pickle bytes: exit 1 with one error line, never a crash.
#
#   ZEROFOLD=build/zerofold bash tests/cli/inspect_test.sh
source "$(dirname "$0")/lib.sh"

hint='zerofold: hint: run '"'"'zerofold inspect --help'"'"''
views=$F/torch/views.pt
cd "$T" || exit 1

# --- usage errors -------------------------------------------------------------------------
run_z inspect
expect "no path" 2 "zerofold: inspect: needs at least one PATH
$hint
"
run_z inspect --bogus "$views"
expect "unknown flag" 2 "zerofold: inspect: unknown flag --bogus (see --help)
$hint
"
run_z inspect "$views" --max-pickle-depth
expect "flag without its value" 2 "zerofold: inspect: flag --max-pickle-depth needs a value (N)
$hint
"
run_z inspect --help
expect "--help" 0 ""
head -n 1 "$OUT" | grep -qx 'usage: zerofold inspect \[--json\] PATH\.\.\.' || fail "--help: first line $(head -n 1 "$OUT")"
run_z
[ "$RC" = 2 ] || fail "no command: exit $RC, want 2"
grep -q '^usage: zerofold COMMAND' "$ERR" || fail "no command: no usage on stderr"
[ ! -s "$OUT" ] || fail "no command: stdout not empty"

# --- missing and corrupt input ------------------------------------------------------------
run_z inspect "$T/nope.pt"
expect "missing" 3 "zerofold: $T/nope.pt: not found: no such file or folder
"
head -c 100 "$views" >cut.pt
run_z inspect cut.pt
expect "truncated" 1 "zerofold: cut.pt: @ 0: corrupt: no end of central directory record in the last 100 bytes: not a zip archive, or truncated
"
[ ! -s "$OUT" ] || fail "truncated: stdout not empty: $(cat "$OUT")"
run_z inspect "$F/bad/torchscript.pt"
expect "torchscript" 1 "zerofold: $F/bad/torchscript.pt: torchscript/code/__torch__/zerofold_fixture_tiny.py @ 713: unsupported: a TorchScript archive (torch.jit.save), not a torch.save checkpoint
"

# --- several paths: each listed or reported; the worst exit code --------------------------
run_z inspect "$views" cut.pt "$F/torch/bare_tensor.pt"
expect "good, bad, good" 1 "zerofold: cut.pt: @ 0: corrupt: no end of central directory record in the last 100 bytes: not a zip archive, or truncated
"
[ "$(grep -c ' tensors in ' "$OUT")" = 2 ] || fail "good, bad, good: $(grep -c ' tensors in ' "$OUT") summaries, want 2"
run_z inspect "$T/nope.pt" cut.pt
expect "missing and bad" 3 "zerofold: $T/nope.pt: not found: no such file or folder
zerofold: cut.pt: @ 0: corrupt: no end of central directory record in the last 100 bytes: not a zip archive, or truncated
"

# --- human output -------------------------------------------------------------------------
run_z inspect "$views"
expect "views.pt" 0 ""
grep -qx '  6 tensors in 2 storages: stored 656 B, referenced 252 B: 2.60x' "$OUT" ||
  fail "views.pt summary: $(grep ' tensors in ' "$OUT")"
run_z inspect "$F/torch/tied_weights.pt"
grep -qx '  tied: embed.weight = lm_head.weight = decoder.weight' "$OUT" || fail "tied_weights.pt: no tied line: $(cat "$OUT")"
run_z inspect "$F/bad/unsafe_os_system.pt"
expect "unsafe" 0 ""
grep -q '^  unsafe globals (never run by zerofold; torch.load would run them): posix.system (runs code: processes and the operating system)$' "$OUT" ||
  fail "unsafe_os_system.pt: no unsafe line: $(cat "$OUT")"

# --- --json: one document; failed files carry an error object -----------------------------
run_z inspect --json "$views" cut.pt "$F/hf/bloated"
expect "--json" 1 "zerofold: cut.pt: @ 0: corrupt: no end of central directory record in the last 100 bytes: not a zip archive, or truncated
"
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
paths = [f["path"] for f in d["files"]]
assert paths[0].endswith("torch/views.pt") and paths[1] == "cut.pt", paths
assert len(paths) == 5 and all("pytorch_model-0000" in p for p in paths[2:]), paths
assert d["files"][1]["error"] == {"code": "corrupt", "record": "", "offset": 0, "message":
    "no end of central directory record in the last 100 bytes: not a zip archive, or truncated", "path": "cut.pt"}
v = d["files"][0]
assert (v["stored_bytes"], v["referenced_bytes"], len(v["tensors"])) == (656, 252, 6), v
' "$OUT" || fail "--json document: $(head -c 600 "$OUT")"
# --- untrusted names in error lines: escaped (Status::ToString), every file in --json -------
# Central directory names: the first byte flipped (0x62 -> 0x9d, not UTF-8); the first six
# bytes ESC, LF, backslash, NUL, 0xff, TAB. A storage key ESC (in the message as well).
"$PY" - "$F/torch/bare_tensor.pt" "$T" <<'EOF'
import os, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
b = bytes(open(src, "rb").read())
cd = zipfile.ZipFile(src).start_dir
flipped = bytearray(b)
flipped[cd + 46] ^= 0xFF
open(os.path.join(out, "badname.pt"), "wb").write(flipped)
ctl = bytearray(b)
ctl[cd + 46:cd + 52] = b"\x1b\n\\\x00\xff\t"
open(os.path.join(out, "ctl.pt"), "wb").write(ctl)
z = zipfile.ZipFile(src)
with zipfile.ZipFile(os.path.join(out, "key.pt"), "w", zipfile.ZIP_STORED) as w:
    for i in z.infolist():
        d = z.read(i.filename)
        if i.filename.endswith("/data.pkl"):
            assert d.count(b"X\x01\x00\x00\x000") == 1  # BINUNICODE '0', the storage key
            d = d.replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x00\x1b")
        w.writestr(i.filename, d)
EOF
run_z inspect badname.pt
expect "record not UTF-8" 1 'zerofold: badname.pt: \x9dare_tensor/data.pkl @ 30: ambiguous: local header names "bare_tensor/data.pkl", the central directory "\x9dare_tensor/data.pkl": torch finds the record by the central name, a reader of local headers by the local one
'
run_z inspect ctl.pt
expect "record with control bytes and NUL" 1 'zerofold: ctl.pt: \x1b\n\\\x00\xff\tensor/data.pkl @ 512: corrupt: entry name "\x1b\x0a\x5c\x00\xff\x09ensor/data.pkl" contains a backslash
'
run_z inspect key.pt
expect "storage key with a control byte" 1 "zerofold: key.pt: bare_tensor/data/\\x1b: corrupt: storage '\\x1b' has no record bare_tensor/data/\\x1b
"
# --json: one document with every file; the records as they are, bytes that are not UTF-8
# as the text \xNN.
run_z inspect --json "$views" badname.pt ctl.pt key.pt
zf_checks=$((zf_checks + 1))
[ "$RC" = 1 ] || fail "--json with bad names: exit $RC, want 1"
"$PY" -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
paths = [f["path"] for f in d["files"]]
assert len(paths) == 4 and paths[0].endswith("torch/views.pt") and paths[1:] == ["badname.pt", "ctl.pt", "key.pt"], paths
assert len(d["files"][0]["tensors"]) == 6, d["files"][0]
errors = [f["error"] for f in d["files"][1:]]
assert errors[0] == {"code": "ambiguous", "record": "\\x9dare_tensor/data.pkl", "offset": 30, "message":
    "local header names \"bare_tensor/data.pkl\", the central directory \"\\x9dare_tensor/data.pkl\": torch finds the record by the central name, a reader of local headers by the local one",
    "path": "badname.pt"}, errors[0]
assert [e["path"] for e in errors] == paths[1:], errors
assert errors[1]["record"] == "\x1b\n\\\x00\\xff\tensor/data.pkl" and errors[1]["offset"] == 512, errors[1]
assert errors[2]["record"] == "bare_tensor/data/\x1b", errors[2]
assert errors[2]["message"] == "storage \x27\x1b\x27 has no record bare_tensor/data/\x1b", errors[2]
' "$OUT" || fail "--json with bad names: $(head -c 600 "$OUT" | tr -c '[:print:]' '?')"

# --- hostile names in the listing ---------------------------------------------------------
# A name holding terminal escapes is listed escaped, as error lines show it: the listing
# carries no control byte. Nor does shrink --dry-run's plan, naming an output with one.
/usr/bin/python3 - hostile.pt <<'EOF'
import sys, torch
flat = torch.arange(8, dtype=torch.float32)
torch.save({"\x1b]0;pwned\x07\x1b[2Jw": flat[:4], "tab\there": flat[4:]}, sys.argv[1])
EOF
has_control() { tr -d '\n' <"$1" | LC_ALL=C grep -q '[[:cntrl:]]'; }
run_z inspect hostile.pt
expect "hostile names" 0 ""
zf_checks=$((zf_checks + 3))
has_control "$OUT" && fail "inspect listing carries a control byte: $(od -c "$OUT" | head -5)"
grep -qF '\x1b]0;pwned\x07\x1b[2Jw' "$OUT" || fail "escaped name missing: $(cat "$OUT")"
grep -qF 'tab\there' "$OUT" || fail "escaped tab missing: $(cat "$OUT")"
run_z shrink --dry-run hostile.pt $'small\x1b[2J.pt'
expect "dry run, hostile names" 0 ""
zf_checks=$((zf_checks + 1))
has_control "$OUT" && fail "dry-run plan carries a control byte: $(od -c "$OUT" | head -5)"

# --- damaged fixtures ---------------------------------------------------------------------
check_damaged() {  # REL KIND FILE
  run_z inspect "$3"
  check_bad_input_exit "$1 $2" "$2" || return
  if [ "$RC" = 1 ]; then
    check_error_line "$1 $2" "$3"
    [ ! -s "$OUT" ] || fail "$1 $2: exit 1 with a listing on stdout"
  else
    [ -s "$OUT" ] || fail "$1 $2: exit 0 without a listing"
  fi
}
for_each_damaged_input check_damaged

zf_finish
