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
expect "torchscript" 1 "zerofold: $F/bad/torchscript.pt: torchscript/code/__torch__/zerofold_fixture_tiny.py @ 2654: unsupported: a TorchScript archive (torch.jit.save), not a torch.save checkpoint
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
grep -q '^  unsafe globals (never run by zerofold; torch.load would run them): posix.system$' "$OUT" ||
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
    "no end of central directory record in the last 100 bytes: not a zip archive, or truncated"}
v = d["files"][0]
assert (v["stored_bytes"], v["referenced_bytes"], len(v["tensors"])) == (656, 252, 6), v
' "$OUT" || fail "--json document: $(head -c 600 "$OUT")"
# A failed file with an undecodable record name must not empty the document.
"$PY" - "$F/torch/bare_tensor.pt" "$T/badname.pt" <<'EOF'
import sys, zipfile
b = bytearray(open(sys.argv[1], "rb").read())
cd = zipfile.ZipFile(sys.argv[1]).start_dir
b[cd + 46] ^= 0xFF  # first byte of the first central directory name
open(sys.argv[2], "wb").write(b)
EOF
run_z inspect --json "$views" "$T/badname.pt"
zf_checks=$((zf_checks + 1))
if [ "$RC" != 1 ]; then
  fail "--json with a bad name: exit $RC, want 1"
elif ! "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["files"]) == 2, d' "$OUT" 2>/dev/null; then
  zf_known_bug json-drop "inspect --json prints {\"files\":[]} when an error record is not UTF-8, dropping every file: $(head -c 200 "$OUT")"
fi

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
