#!/usr/bin/env bash
# zerofold convert and diff from the command line: the output format from OUT's name or
# --to; round trips torch -> safetensors -> torch that diff finds equal for every fixture;
# streams where the formats allow them and clear refusals where they do not; --verify;
# shrink of safetensors pointing to convert; diff's exit codes (0 same, 1 different,
# 2 trouble, 3 I/O), its text and --json reports, tolerances; no partial output.
#
#   ZEROFOLD=build/zerofold bash tests/cli/convert_diff_test.sh
source "$(dirname "$0")/lib.sh"

chint='zerofold: hint: run '"'"'zerofold convert --help'"'"''
dhint='zerofold: hint: run '"'"'zerofold diff --help'"'"''
views=$F/torch/views.pt
mkdir -p "$T/w"
cd "$T/w" || exit 1

# --- convert: usage errors, exit 2 ---------------------------------------------------------
run_z convert "$views"
expect "one argument" 2 "zerofold: convert: needs IN and OUT
$chint
"
run_z convert "$views" out.weights
expect "unknown extension" 2 "zerofold: convert: cannot tell the output format from 'out.weights': add --to torch or --to safetensors
$chint
"
run_z convert "$views" outdir/
expect "folder without --to" 2 "zerofold: convert: cannot tell the output format from 'outdir/': add --to torch or --to safetensors
$chint
"
run_z convert --in-place "$views"
expect "no --in-place" 2 "zerofold: convert: unknown flag --in-place (see --help)
$chint
"
run_z convert --to onnx "$views" x.pt
expect "--to onnx" 2 "zerofold: convert: --to takes torch or safetensors, not 'onnx'
$chint
"
run_z convert --to safetensors - x.safetensors </dev/null
expect "safetensors from a stream" 2 "zerofold: convert: '-' is a stream, read in one forward pass; safetensors output (its header lists every tensor before their bytes) and a folder OUT (shards take tensors in an order of their own) read the input at random: save it to a file first
$chint
"
run_z convert --dtype bfloat16 --verify "$views" x.safetensors
expect "--verify --dtype" 2 "zerofold: convert: --verify: --dtype changes the tensors
$chint
"
expect_empty_dir "usage errors" "$T/w"
run_z convert --help
expect "--help" 0 ""
head -n 1 "$OUT" | grep -qx 'usage: zerofold convert \[FLAGS\] IN OUT' || fail "convert --help: $(head -n 1 "$OUT")"
run_z --help
expect "top-level --help" 0 ""
grep -q '^  convert IN OUT ' "$OUT" || fail "top-level --help does not list convert"
grep -q '^  diff A B ' "$OUT" || fail "top-level --help does not list diff"

# --- shrink of safetensors: nothing to shrink, use convert (exit 2) -----------------------
"$Z" convert "$views" v.safetensors >/dev/null 2>&1 || fail "convert $views v.safetensors"
run_z shrink v.safetensors x.pt
expect "shrink of safetensors" 2 "zerofold: shrink: 'v.safetensors' is safetensors, which stores every tensor in exactly its own bytes: there is nothing to shrink. To change its format, dtype, shards or selection, use: zerofold convert
zerofold: hint: run 'zerofold shrink --help'
"
mkdir st_folder && cp v.safetensors st_folder/model.safetensors
run_z shrink st_folder/ x/
expect "shrink of a safetensors folder" 2 "zerofold: shrink: 'st_folder/' is safetensors, which stores every tensor in exactly its own bytes: there is nothing to shrink. To change its format, dtype, shards or selection, use: zerofold convert
zerofold: hint: run 'zerofold shrink --help'
"
[ ! -e x.pt ] && [ ! -e x ] || fail "shrink of safetensors wrote output"
run_z convert --to torch - x.pt <v.safetensors
expect "safetensors on standard input" 1 "zerofold: <stdin>: @ 0: unsupported: a safetensors file, which is read at its tensors' offsets: it cannot come from a stream ('-', .zst); save it to a file first
"
rm -rf st_folder v.safetensors

# --- diff --only: the names matching the patterns, on both sides ----------------------------
run_z convert -q --only '0.*' "$F/torch/state_dict.pt" part.safetensors
run_z diff "$F/torch/state_dict.pt" part.safetensors
expect "diff against a subset: different (7 names only in A)" 1 ""
run_z diff --only '0.*' "$F/torch/state_dict.pt" part.safetensors
expect "diff --only '0.*': the same" 0 ""
expect_true "diff --only '0.*': two tensors compared" "grep -qx '2 tensors in both: 2 equal, 0 different; 0 only in A, 0 only in B' '$OUT'"
run_z diff --only '0.*,3.bias' --json "$F/torch/state_dict.pt" part.safetensors
expect "diff --only '0.*,3.bias': 3.bias only in A" 1 ""
expect_true "diff --only --json: only_in_a is [3.bias]" \
  "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"only_in_a\"] == [\"3.bias\"] and len(d[\"tensors\"]) == 2' '$OUT'"
run_z diff --only 'nothing*' "$F/torch/state_dict.pt" part.safetensors
expect "diff --only matching nothing" 2 "zerofold: diff: --only matches no tensor of $F/torch/state_dict.pt or part.safetensors
$dhint
"
rm -f part.safetensors

# --- round trips: torch -> safetensors -> torch, diff equal, for every fixture -------------
# (files whose dtypes safetensors or torch 1.13 cannot hold are refused with exit 1)
n=0
for f in "$F"/torch/*.pt; do
  name=${f##*/}
  run_z convert "$f" "$name.safetensors"
  if [ "$RC" = 1 ]; then
    check_error_line "convert $name" "$f"
    continue
  fi
  [ "$RC" = 0 ] || { fail "convert $name: exit $RC: $(cat "$ERR")"; continue; }
  run_z diff "$f" "$name.safetensors"
  expect "diff $name $name.safetensors" 0 ""
  run_z convert "$name.safetensors" "$name.back.pt"
  expect "convert $name.safetensors" 0 ""
  run_z diff "$name.back.pt" "$f"
  expect "diff $name.back.pt $name" 0 ""
  # The torch file starts as a zip archive (legacy input included).
  [ "$(head -c 2 "$name.back.pt")" = PK ] || fail "$name.back.pt is not a zip archive"
  n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n fixtures made the round trip"
run_z convert "$F/torch/legacy_state_dict.pt" legacy.pt
expect "legacy -> zip" 0 ""
[ "$(head -c 2 legacy.pt)" = PK ] || fail "legacy.pt is not a zip archive"
run_z diff legacy.pt "$F/torch/legacy_state_dict.pt"
expect "diff legacy.pt" 0 ""

# An existing OUT needs --force.
run_z convert "$views" views.pt.safetensors
expect "existing OUT" 2 "zerofold: views.pt.safetensors: invalid argument: exists; use --force to replace it
"
run_z convert --force "$views" views.pt.safetensors
expect "--force" 0 ""
run_z convert --force views.pt.safetensors ./views.pt.safetensors
expect "OUT is IN" 2 "zerofold: convert: OUT is IN; convert writes a new file, leaving IN as it is
$chint
"

# --- streams ------------------------------------------------------------------------------
"$Z" convert --to safetensors "$views" - >stdout.safetensors 2>report.txt || fail "convert to standard output"
cmp -s stdout.safetensors views.pt.safetensors || fail "safetensors on standard output differs from the file's"
grep -q ' -> -: ' report.txt || fail "the report of a standard output run is not on stderr: $(cat report.txt)"
run_z convert "$views" v.safetensors.zst
expect "safetensors .zst" 0 ""
zstd -qdc v.safetensors.zst | cmp -s - views.pt.safetensors || fail "v.safetensors.zst does not decompress to the file's bytes"
"$Z" convert --to torch - - <"$views" >piped.pt 2>/dev/null || fail "convert - - of a torch file"
run_z diff piped.pt "$views"
expect "diff piped.pt" 0 ""
run_z convert views.pt.safetensors v.pt.zst
expect "torch .zst from safetensors" 0 ""
zstd -qdc v.pt.zst >v.pt
run_z diff v.pt "$views"
expect "diff of the .zst output" 0 ""

# --- --verify of safetensors and torch output -----------------------------------------------
run_z convert --verify --force "$views" views.pt.safetensors
expect "--verify safetensors" 0 ""
nt=$("$Z" inspect --json "$views" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["files"][0]["tensors"]))')
grep -qx "verified $nt tensors, [0-9]* bytes" "$OUT" || fail "--verify: want $nt tensors: $(cat "$OUT")"
run_z convert --verify views.pt.safetensors verified.pt
expect "--verify torch from safetensors" 0 ""
grep -qx "verified $nt tensors, [0-9]* bytes" "$OUT" || fail "--verify torch: want $nt tensors: $(cat "$OUT")"

# --- folders: torch shards -> safetensors shards -> torch shards ---------------------------
run_z convert --to safetensors --max-shard-size 5KB "$F/hf/bloated" st/
expect "folder -> safetensors shards" 0 ""
[ -f st/model.safetensors.index.json ] && [ -f st/model-00001-of-00004.safetensors ] && [ -f st/config.json ] ||
  fail "st/ holds $(ls st)"
run_z convert --to torch st/ tf/
expect "safetensors shards -> torch shards" 0 ""
[ -f tf/pytorch_model.bin.index.json ] && [ -f tf/pytorch_model-00004-of-00004.bin ] || fail "tf/ holds $(ls tf)"
"$PY" - tf/pytorch_model.bin.index.json st/model.safetensors.index.json <<'EOF' || fail "tf/ index"
import json, sys
t, s = (json.load(open(p)) for p in sys.argv[1:])
assert t["metadata"]["total_size"] == s["metadata"]["total_size"], (t, s)
assert {k: v.replace("model-", "pytorch_model-").replace(".safetensors", ".bin") for k, v in s["weight_map"].items()} == t["weight_map"]
EOF
# A folder with pytorch_model.bin and a safetensors index is read as its torch checkpoint,
# by shrink and convert alike (transformers loads pytorch_model.bin first when asked for torch).
mkdir mixed && cp "$views" mixed/pytorch_model.bin && cp st/model*.safetensors* mixed/
run_z shrink mixed/ mixed_small/
expect "shrink of a folder with both formats" 0 ""
[ -f mixed_small/pytorch_model.bin ] && [ ! -e mixed_small/pytorch_model-00001-of-00004.bin ] ||
  fail "shrink mixed/: $(ls mixed_small)"
run_z diff mixed_small/pytorch_model.bin "$views"
expect "diff of the shrunk pytorch_model.bin" 0 ""
run_z diff mixed/ "$views"
expect "diff reads the folder's torch checkpoint" 0 ""
for pair in "$F/hf/bloated st" "st tf" "tf $F/hf/bloated"; do
  read -r a b <<<"$pair"
  run_z diff "$a" "$b"
  expect "diff $pair" 0 ""
done

# --- diff across layouts: every fixture with itself, a bloated folder against its compacted
# single file, a merge's output against the ground truth gathered from the live engine ----
while read -r f; do
  run_z diff "$f" "$f"
  expect "diff ${f#"$F/"} itself" 0 ""
done < <(find "$F/torch" "$F/deepspeed" -name '*.pt' -o -name '*.bin' | sort)
bloat=$F/deepspeed/bloat_zero2_ws2_bf16
run_z diff "$bloat" "$bloat/expected_compacted_state_dict.pt"
expect "diff bloated folder, compacted file" 0 ""
[ "$(cat "$OUT")" = "31 tensors in both: 31 equal, 0 different; 0 only in A, 0 only in B" ] || fail "diff bloat: $(cat "$OUT")"
"$Z" merge "$F/deepspeed/zero2_ws3_bf16/ckpt" merged.bin >/dev/null 2>&1 || fail "merge zero2_ws3_bf16"
run_z diff merged.bin "$F/deepspeed/zero2_ws3_bf16/ground_truth.pt"
expect "diff merge output, ground truth" 0 ""
# DeepSpeed's zero_to_fp32.py keeps the frozen param in bf16 and writes the int64 buffer as
# float32 (fixtures/deepspeed/README.md): diff names both.
run_z diff merged.bin "$F/deepspeed/zero2_ws3_bf16/reference_zero_to_fp32.bin"
expect "diff merge output, zero_to_fp32 output" 1 ""
want='! transformer.position_ids: dtype int64 vs float32
! transformer.wpe.weight: dtype float32 vs bfloat16
31 tensors in both: 29 equal, 2 different; 0 only in A, 0 only in B'
[ "$(cat "$OUT")" = "$want" ] || fail "diff merge output, zero_to_fp32 output: $(cat "$OUT")"

# --- diff: differences, text and JSON, exit codes -------------------------------------------
# Two safetensors files written by the spec: a: x = [1, 2, 3, 4] f32, y = [7] i64, only_a;
# b: x = [1, 2.5, 3, 4.25], y = [7], only_b.
"$PY" - <<'EOF'
import json, struct
def save(path, tensors):
    header, data = {}, b""
    for name, (dtype, shape, raw) in sorted(tensors.items()):
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
f32 = lambda *v: struct.pack(f"<{len(v)}f", *v)
save("a.safetensors", {"x": ("F32", [2, 2], f32(1, 2, 3, 4)), "y": ("I64", [1], struct.pack("<q", 7)),
                       "only_a": ("F32", [1], f32(0))})
save("b.safetensors", {"x": ("F32", [2, 2], f32(1, 2.5, 3, 4.25)), "y": ("I64", [1], struct.pack("<q", 7)),
                       "only_b": ("F32", [1], f32(0))})
save("c.safetensors", {"x": ("F32", [2, 2], f32(1, 2, 3, 4)), "y": ("I64", [1], struct.pack("<q", 7)),
                       "only_a": ("F32", [1], f32(0))})
EOF
run_z diff a.safetensors b.safetensors
expect "diff different" 1 ""
want='- only_a: only in A
+ only_b: only in B
! x: 2 of 4 elements differ, first at [0, 1]; max abs diff 0.5, max rel diff 0.2
2 tensors in both: 1 equal, 1 different; 1 only in A, 1 only in B'
[ "$(cat "$OUT")" = "$want" ] || fail "diff text:
$(cat "$OUT")
--- want:
$want"
run_z diff a.safetensors c.safetensors
expect "diff same" 0 ""
[ "$(cat "$OUT")" = "3 tensors in both: 3 equal, 0 different; 0 only in A, 0 only in B" ] || fail "diff same: $(cat "$OUT")"
run_z diff --quiet a.safetensors b.safetensors
expect "diff --quiet" 1 ""
[ ! -s "$OUT" ] || fail "diff --quiet printed $(cat "$OUT")"
run_z diff --json --atol 0.3 --rtol 0 a.safetensors b.safetensors
expect "diff --json --atol" 1 ""
"$PY" - "$OUT" <<'EOF' || fail "diff --json: $(cat "$OUT")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["same"] is False and r["mode"] == "close" and r["atol"] == 0.3 and r["rtol"] == 0.0, r
assert r["only_in_a"] == ["only_a"] and r["only_in_b"] == ["only_b"], r
x = [t for t in r["tensors"] if t["name"] == "x"][0]
assert x["differing"] == 1 and x["first_index"] == [0, 1] and x["max_abs_diff"] == 0.5, x
assert x["max_rel_diff"] == 0.2 and x["numel"] == 4 and x["dtype"] == ["float32", "float32"], x
assert x["shape"] == [[2, 2], [2, 2]] and x["xxh3_128"][0] != x["xxh3_128"][1], x
y = [t for t in r["tensors"] if t["name"] == "y"][0]
assert y["same"] and y["differing"] == 0 and y["first_index"] is None and y["xxh3_128"][0] == y["xxh3_128"][1], y
EOF
run_z diff --atol 0.5 --rtol 0 a.safetensors c.safetensors
expect "diff close" 0 ""

run_z diff --equal-nan a.safetensors b.safetensors
expect "--equal-nan alone" 2 "zerofold: diff: --equal-nan needs --atol or --rtol (without them, NaNs are equal when their bits are)
$dhint
"
run_z diff --atol -1 a.safetensors b.safetensors
expect "negative --atol" 2 "zerofold: diff: --atol needs a number >= 0, not '-1'
$dhint
"
run_z diff a.safetensors
expect "diff one argument" 2 "zerofold: diff: needs A and B
$dhint
"
run_z diff - a.safetensors </dev/null
expect "diff of a stream" 2 "zerofold: diff: diff reads its inputs at random; '-' is a stream ('-', .zst): save it to a file first
$dhint
"
run_z diff "$T/nope.pt" a.safetensors
expect "diff missing" 3 "zerofold: $T/nope.pt: not found: open: No such file or directory
"
head -c 100 "$views" >cut.pt
run_z diff cut.pt a.safetensors
[ "$RC" = 2 ] || fail "diff of a truncated file: exit $RC, want 2"
grep -q '^zerofold: cut.pt: .*corrupt: ' "$ERR" || fail "diff of a truncated file: $(cat "$ERR")"
run_z diff --json cut.pt a.safetensors
[ "$RC" = 2 ] || fail "diff --json of a truncated file: exit $RC"
"$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["error"]["code"] == "corrupt"' "$OUT" ||
  fail "diff --json of a truncated file: $(cat "$OUT")"

# A dtype difference: float32 against bfloat16; close by value with a tolerance.
run_z convert --dtype bfloat16 --to safetensors "$F/torch/state_dict.pt" bf16.safetensors
expect "convert --dtype bfloat16" 0 ""
run_z diff "$F/torch/state_dict.pt" bf16.safetensors
expect "diff dtype" 1 ""
grep -q '^! 0.weight: dtype float32 vs bfloat16$' "$OUT" || fail "diff dtype: $(cat "$OUT")"
run_z diff --rtol 0.01 "$F/torch/state_dict.pt" bf16.safetensors
expect "diff dtype, close" 0 ""

# A deflated archive (fixtures/bad/deflated.pt: state_dict.pt's records deflated, as
# Python's zipfile writes them) is read through its inflated records, as convert reads it:
# equal to its stored original and to its own conversion, both ways round.
deflated=$F/bad/deflated.pt
run_z convert "$deflated" deflated.safetensors
expect "convert deflated" 0 ""
for pair in "$deflated deflated.safetensors" "deflated.safetensors $deflated" \
    "$deflated $F/torch/state_dict.pt" "$F/torch/state_dict.pt $deflated"; do
  # shellcheck disable=SC2086
  run_z diff $pair
  expect "diff $pair" 0 ""
  grep -q '^[1-9][0-9]* tensors in both: [0-9]* equal, 0 different; 0 only in A, 0 only in B$' "$OUT" ||
    fail "diff $pair: $(cat "$OUT")"
done
# Against its bfloat16 rounding: close within bfloat16's half ulp (2^-8 relative to the
# rounded value), where the compressed bytes would differ by up to 1e30.
run_z diff --json --rtol 0.00390625 --atol 0 "$deflated" bf16.safetensors
expect "diff deflated against bfloat16, close" 0 ""
"$PY" - "$OUT" <<'EOF' || fail "diff --json deflated vs bf16: $(cat "$OUT")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["same"] and len(r["tensors"]) == 9, r
floats = [t for t in r["tensors"] if t["dtype"] == ["float32", "bfloat16"]]
assert len(floats) == 8 and all(t["values_compared"] for t in floats), r
assert all(t["max_rel_diff"] <= 2 ** -8 and t["max_abs_diff"] < 0.01 for t in floats), r
assert max(t["max_rel_diff"] for t in floats) > 2 ** -9, r
EOF

zf_finish
