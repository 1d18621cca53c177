#!/usr/bin/env bash
# Everyday command-line behaviour: --dtype's short names in every command that takes it,
# -h as --help everywhere, "did you mean" for a mistyped command or flag, a damaged file
# named .safetensors read as safetensors, --progress=lines, every --json error's path, a
# folder shrink's lines as each shard completes, inspect FOLDER's total, --dedupe-tied
# files read back with their ties, --only on convert and shrink.
#
#   ZEROFOLD=build/zerofold bash tests/cli/usage_test.sh
source "$(dirname "$0")/lib.sh"

sd=$F/torch/state_dict.pt
mkdir -p "$T/w"
cd "$T/w" || exit 1

# --- --dtype: torch's names and the short ones give the same bytes --------------------------
for pair in bfloat16:bf16 float16:fp16 float16:half float32:fp32 float32:float; do
  long=${pair%%:*} short=${pair##*:}
  for cmd in convert shrink; do
    run_z "$cmd" --dtype "$long" "$sd" "l.$cmd.$long.pt"
    expect "$cmd --dtype $long" 0 ""
    run_z "$cmd" --dtype "$short" "$sd" "s.$cmd.$short.pt"
    expect "$cmd --dtype $short" 0 ""
    # The archive's folder is named after the file: compare the tensors, and the sizes.
    run_z diff "l.$cmd.$long.pt" "s.$cmd.$short.pt"
    expect "$cmd --dtype $short = $long" 0 ""
    expect_true "$cmd --dtype $short: same size" "[ $(size "l.$cmd.$long.pt") = $(size "s.$cmd.$short.pt") ]"
  done
  run_z convert --dtype "$short" "$sd" "$short.safetensors"
  expect "convert --dtype $short to safetensors" 0 ""
  run_z inspect --json "$short.safetensors"
  "$PY" - "$OUT" "$long" <<'EOF' || fail "--dtype $short: $(cat "$OUT")"
import json, sys
doc = json.load(open(sys.argv[1]))["files"][0]
dtypes = {t["dtype"] for t in doc["tensors"]}
assert dtypes == {sys.argv[2], "int64"}, dtypes
EOF
  run_z merge --dtype "$short" "$F/dcp/dim0_ws2/ckpt" "m.$short.bin"
  expect "merge --dtype $short" 0 ""
  run_z merge --dtype "$long" "$F/dcp/dim0_ws2/ckpt" "m.$long.bin"
  run_z diff "m.$short.bin" "m.$long.bin"
  expect "merge --dtype $short = $long" 0 ""
  rm -f ./*.pt ./*.bin
done
run_z convert --dtype fp64 "$sd" x.pt
expect "--dtype fp64" 2 "zerofold: convert: --dtype takes bfloat16 (bf16), float16 (fp16, half) or float32 (fp32, float), not 'fp64'
zerofold: hint: run 'zerofold convert --help'
"

# --- -h is --help, for every command and at the top -----------------------------------------
for cmd in inspect shrink merge convert diff; do
  "$Z" "$cmd" --help >long.txt 2>&1
  run_z "$cmd" -h
  expect "$cmd -h" 0 ""
  expect_true "$cmd -h prints --help's text" "cmp -s long.txt '$OUT'"
  expect_true "$cmd -h: usage line" "head -n 1 '$OUT' | grep -q '^usage: zerofold $cmd '"
done
"$Z" --help >long.txt
run_z -h
expect "top-level -h" 0 ""
expect_true "top-level -h prints --help's text" "cmp -s long.txt '$OUT'"

# --- -q is --quiet, where the command has --quiet -------------------------------------------
rm -f ./*.pt
run_z convert -q "$sd" q.pt
expect "convert -q prints nothing" 0 ""
expect_true "convert -q wrote q.pt" "test -s q.pt"
expect_true "convert -q: stdout empty" "test ! -s '$OUT'"
run_z convert "$sd" q2.pt
expect_true "convert without -q prints a report (the check above can fail)" "test -s '$OUT'"
"$Z" shrink --help >long.txt
expect_true "shrink --help shows -q, --quiet" "grep -q -- '-q, --quiet' long.txt"
run_z inspect -q "$sd"
expect "inspect has no --quiet: -q is unknown" 2 "zerofold: inspect: unknown flag -q (see --help)
zerofold: hint: run 'zerofold inspect --help'
"
rm -f ./*.pt

# --- did you mean ---------------------------------------------------------------------------
rm -f ./*
run_z shrnk a b
expect "mistyped command" 2 "zerofold: unknown command 'shrnk'; did you mean 'shrink'?
zerofold: hint: run 'zerofold --help'
"
run_z convrt a b
expect "mistyped command, a letter left out" 2 "zerofold: unknown command 'convrt'; did you mean 'convert'?
zerofold: hint: run 'zerofold --help'
"
run_z compress a b
expect "unknown command, nothing close" 2 "zerofold: unknown command 'compress'
zerofold: hint: run 'zerofold --help'
"
run_z convert --dtpye bf16 a b
expect "swapped letters in a flag" 2 "zerofold: convert: unknown flag --dtpye; did you mean --dtype? (see --help)
zerofold: hint: run 'zerofold convert --help'
"
run_z merge --exclude-frozn a b
expect "a letter left out of a flag" 2 "zerofold: merge: unknown flag --exclude-frozn; did you mean --exclude-frozen? (see --help)
zerofold: hint: run 'zerofold merge --help'
"
run_z diff --atoll 1 a b
expect "a letter too many" 2 "zerofold: diff: unknown flag --atoll; did you mean --atol? (see --help)
zerofold: hint: run 'zerofold diff --help'
"
run_z inspect --jsn a
expect "short flag, one edit" 2 "zerofold: inspect: unknown flag --jsn; did you mean --json? (see --help)
zerofold: hint: run 'zerofold inspect --help'
"
run_z shrink --zz a b
expect "unknown flag, nothing close" 2 "zerofold: shrink: unknown flag --zz (see --help)
zerofold: hint: run 'zerofold shrink --help'
"
expect_empty_dir "usage errors write nothing" "$T/w"

# --- a damaged file named .safetensors: the safetensors reader's error ----------------------
printf 'hello world, not a checkpoint at all' >bad.safetensors
printf 'abc' >short.safetensors
for cmd in "inspect bad.safetensors" "convert bad.safetensors o.pt" "diff bad.safetensors bad.safetensors"; do
  # shellcheck disable=SC2086
  run_z $cmd
  want_rc=1
  [ "${cmd%% *}" = diff ] && want_rc=2
  expect "$cmd" $want_rc "zerofold: bad.safetensors: header @ 0: corrupt: HeaderTooLarge: header length 8031924123371070824 is over the limit of 100000000 bytes and past the end of the file (36 bytes)
"
done
run_z inspect short.safetensors
expect "short .safetensors" 1 "zerofold: short.safetensors: header @ 0: corrupt: HeaderTooSmall: file is 3 bytes, the header length field needs 8
"
# A torch file with a .safetensors name is still read as the torch file it is.
cp "$sd" torch_named.safetensors
run_z diff torch_named.safetensors "$sd"
expect "a torch file named .safetensors" 0 ""
cp "$F/torch/legacy_state_dict.pt" legacy_named.safetensors
run_z diff legacy_named.safetensors "$F/torch/legacy_state_dict.pt"
expect "a legacy torch file named .safetensors" 0 ""

# --- --progress=lines: timestamped lines for logs (the interval shortened: no waiting) ------
stamp='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}'
amount='[0-9.]+ [KMGT]?B'
run_z shrink --progress=lines --progress-interval 0 "$F/torch/views.pt" v.pt
expect_true "progress lines: exit 0" "[ $RC = 0 ]"
expect_true "progress lines: some lines" "[ \$(wc -l <'$ERR') -ge 1 ]"
expect_true "progress lines: each in the format" \
  "! grep -Evq '^$stamp shrink $F/torch/views.pt: $amount of $amount \\([0-9]+%\\), $amount/s\$' '$ERR'"
expect_true "progress lines: the last at 100%" "tail -n 1 '$ERR' | grep -q ' (100%), '"
expect_true "progress lines: no carriage return" "! grep -q \$'\\r' '$ERR'"
# A folder's progress is the whole run's: the file being written, k of N,
# and one percent over every file (it never starts again at 0% per shard).
rm -rf hfp
run_z shrink --progress=lines --progress-interval 0 "$F/hf/bloated" hfp/
grep -E "^$stamp shrink $F/hf/bloated \(file [0-9]+ of 3\): " "$ERR" >hfp_lines.txt || true
expect_true "folder progress: exit 0, lines name the file k of 3" "[ $RC = 0 ] && [ -s hfp_lines.txt ]"
expect_true "folder progress: files 1, 2 and 3 each named" \
  "[ \"\$(grep -oE '\\(file [0-9]+ of 3\\)' hfp_lines.txt | sort -u | tr -d '\\n')\" = '(file 1 of 3)(file 2 of 3)(file 3 of 3)' ]"
expect_true "folder progress: the percent never goes down, the last at 100%" \
  "grep -oE '\\([0-9]+%\\)' hfp_lines.txt | tr -d '()%' | sort -n -c && tail -n 1 hfp_lines.txt | grep -q ' (100%), '"
expect_true "folder progress: the file number never goes down" \
  "grep -oE 'file [0-9]+ of' hfp_lines.txt | awk '{print \$2}' | sort -n -c"
rm -rf hfp
# --verify's progress follows the writing's: the files checked, to 100%.
run_z shrink --verify --progress=lines --progress-interval 0 "$F/hf/bloated" hfp/
expect_true "folder --verify progress: 'verify' lines name file k of 3, the last at 100%" \
  "[ $RC = 0 ] && grep -E '^$stamp verify $F/hf/bloated \\(file [0-9]+ of 3\\): ' '$ERR' | tail -n 1 | grep -q ' (100%), '"
rm -rf hfp
run_z merge --verify --progress=lines --progress-interval=0 "$F/dcp/dim0_ws2/ckpt" mv.bin
expect_true "merge --verify progress: a verify line at 100%" \
  "[ $RC = 0 ] && grep -Eq '^$stamp verify $F/dcp/dim0_ws2/ckpt -> mv.bin: $amount of $amount \\(100%\\), $amount/s\$' '$ERR'"
rm -f mv.bin
run_z diff --progress=lines --progress-interval 0 "$F/torch/views.pt" "$F/torch/views.pt"
expect_true "diff progress lines: exit 0, the last at 100%" \
  "[ $RC = 0 ] && grep -q ' diff .*views.pt: .* of .* (' '$ERR' && tail -n 1 '$ERR' | grep -q ' (100%), '"
run_z diff --quiet --progress-interval 0 "$F/torch/views.pt" "$F/torch/views.pt"
expect "diff --quiet: no progress" 0 ""
run_z merge --progress=lines --progress-interval=0 "$F/dcp/dim0_ws2/ckpt" m.bin
expect_true "merge progress lines" \
  "grep -Eq '^$stamp merge $F/dcp/dim0_ws2/ckpt -> m.bin: $amount of $amount \\(100%\\), $amount/s\$' '$ERR'"
for flags in "--progress=none --progress-interval 0" "--no-progress --progress-interval 0" "--quiet --progress-interval 0"; do
  rm -f v.pt
  # shellcheck disable=SC2086
  run_z shrink $flags "$F/torch/views.pt" v.pt
  [ "$flags" = "--quiet --progress-interval 0" ] || expect_true "$flags: exit 0" "[ $RC = 0 ]"
  expect_true "$flags: nothing on stderr" "[ ! -s '$ERR' ]"
done
rm -f v.pt
run_z shrink --progress=bar "$F/torch/views.pt" v.pt
expect_true "--progress=bar: the bar's carriage returns" "grep -q \$'\\r' '$ERR'"
run_z shrink --progress=dots "$F/torch/views.pt" w.pt
expect "--progress=dots" 2 "zerofold: shrink: --progress takes bar, lines or none, not 'dots'
zerofold: hint: run 'zerofold shrink --help'
"

# --- every --json error object names its path -----------------------------------------------
head -c 100 "$F/torch/views.pt" >cut.pt
for cmd in "inspect --json cut.pt" "convert --json cut.pt o.safetensors" "shrink --json cut.pt o.pt" \
    "diff --json cut.pt $F/torch/views.pt" "merge --json $T/w/nope o.bin"; do
  # shellcheck disable=SC2086
  run_z $cmd
  ok
  "$PY" - "$OUT" <<'EOF' || fail "$cmd: error object without its path: $(cat "$OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
e = d["error"] if "error" in d else d["files"][0]["error"]
assert set(e) == {"code", "record", "offset", "message", "path"}, e
assert e["path"] in ("cut.pt",) or e["path"].endswith("/w/nope"), e
EOF
done
rm -f cut.pt

# --- a folder's result lines come as each shard completes, before the next shard's work -----
"$Z" shrink --progress=lines --progress-interval 0 "$F/hf/bloated" sm/ >both.txt 2>&1
first_result=$(grep -n 'pytorch_model-00001-of-00003.bin -> sm/' both.txt | cut -d: -f1)
last_progress=$(grep -n ' shrink .*hf/bloated[^:]*: .* of ' both.txt | tail -n 1 | cut -d: -f1)
expect_true "per-file lines: the first shard's line before the last shard's progress" \
  "[ -n '$first_result' ] && [ -n '$last_progress' ] && [ $first_result -lt $last_progress ]"
expect_true "per-file lines: each shard once, then the total" \
  "[ \$(grep -c ' -> sm/pytorch_model-0000[123]-of-00003.bin: ' both.txt) = 3 ] && tail -n 1 both.txt | grep -q '^total: '"
rm -rf sm both.txt

# --- inspect FOLDER: the folder's total, and what shrink would save (its exact plan) --------
"$Z" shrink "$F/hf/bloated" sm/ >/dev/null 2>&1 || fail "shrink of hf/bloated"
run_z inspect --json "$F/hf/bloated"
expect "inspect --json FOLDER" 0 ""
if "$PY" - "$OUT" "$F/hf/bloated" sm <<'EOF'; then ok; else bad "inspect --json folder total: $(head -c 400 "$OUT")"; fi
import glob, json, os, sys
d = json.load(open(sys.argv[1]))
folder, shrunk = sys.argv[2], sys.argv[3]
files = d["files"]
[t] = d["folders"]
on_disk = sum(os.path.getsize(p) for p in glob.glob(folder + "/*.bin"))
after = sum(os.path.getsize(p) for p in glob.glob(shrunk + "/*.bin"))
assert t["path"] == folder and t["files"] == len(files) == 3, t
assert t["file_bytes"] == on_disk and t["shrunk_file_bytes"] == after < on_disk, (t, on_disk, after)
assert t["shrink_saves_bytes"] == on_disk - after, t
assert t["stored_bytes"] == sum(f["stored_bytes"] for f in files), t
assert t["referenced_bytes"] == sum(f["referenced_bytes"] for f in files), t
EOF
run_z inspect "$F/hf/bloated"
expect_true "inspect FOLDER: the total line" \
  "tail -n 1 '$OUT' | grep -Eq '^folder $F/hf/bloated: 3 files, [0-9.]+ KB on disk; stored [0-9.]+ KB, referenced [0-9.]+ KB: [0-9.]+x; shrink would save [0-9.]+ KB \\([0-9.]+ KB -> [0-9.]+ KB\\)\$'"
# A file listed alone, or a folder of safetensors (nothing to shrink), gets no saving.
run_z inspect --json "$F/torch/views.pt"
expect_true "inspect FILE: no folders" "! grep -q '\"folders\"' '$OUT'"
"$Z" convert --to safetensors "$F/hf/bloated" st/ >/dev/null 2>&1 || fail "convert of hf/bloated"
run_z inspect --json st
if "$PY" - "$OUT" <<'EOF'; then ok; else bad "inspect --json safetensors folder: $(head -c 400 "$OUT")"; fi
import json, sys
[t] = json.load(open(sys.argv[1]))["folders"]
assert t["shrunk_file_bytes"] is None and t["shrink_saves_bytes"] is None and t["files"] == 1, t
assert t["stored_bytes"] == t["referenced_bytes"] > 0, t
EOF
rm -rf sm st

# --- --dedupe-tied files read back with their ties: torch output shares one storage, diff ---
# compares each dropped name as its kept name.
tied=$F/torch/tied_weights.pt
run_z convert --dedupe-tied "$tied" d.safetensors
expect "convert --dedupe-tied" 0 ""
run_z diff d.safetensors "$tied"
expect "diff of a deduped file" 0 ""
expect_true "diff of a deduped file: every name in both" \
  "grep -qx '5 tensors in both: 5 equal, 0 different; 0 only in A, 0 only in B' '$OUT'"
run_z convert d.safetensors back.pt
expect "deduped file to torch" 0 ""
if "$PY" - back.pt "$tied" "$ZF_ROOT/tests" <<'EOF'; then ok; else bad "deduped file to torch: ties not restored"; fi
import sys
sys.path.insert(0, sys.argv[3])
import torch, torch_oracle as oracle
got, want = oracle.load(sys.argv[1]), oracle.load(sys.argv[2])
assert sorted(got) == sorted(want), (list(got), list(want))
assert list(got) == sorted(got), list(got)  # load_file's order: by name
for k in want:
    assert torch.equal(got[k], want[k]), k
ptr = lambda t: t.storage().data_ptr()
assert ptr(got["embed.weight"]) == ptr(got["lm_head.weight"]) == ptr(got["decoder.weight"]), "not one storage"
assert ptr(got["proj.weight"]) != ptr(got["embed.weight"])
EOF
# A zerofold.tied record that contradicts the file is corrupt input.
"$PY" - <<'EOF'
import json, struct
def save(path, tied):
    data = struct.pack("<4f", 1, 2, 3, 4)
    header = {"__metadata__": {"format": "pt", "zerofold.tied": tied},
              "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
save("tie_missing.safetensors", json.dumps({"b": "nope"}))
save("tie_held.safetensors", json.dumps({"a": "a"}))
save("tie_text.safetensors", "not json")
save("tie_ok.safetensors", json.dumps({"b": "a"}))
EOF
run_z convert tie_missing.safetensors x.pt
expect "tied record naming a missing tensor" 1 "zerofold: tie_missing.safetensors: __metadata__: corrupt: \"zerofold.tied\" keeps \"nope\" for \"b\", which the file lacks
"
run_z diff tie_held.safetensors tie_ok.safetensors
expect "tied record dropping a tensor the file holds" 2 "zerofold: tie_held.safetensors: __metadata__: corrupt: \"zerofold.tied\" drops \"a\", which the file holds
"
run_z convert tie_text.safetensors x.pt
expect "tied record that is no JSON object" 1 "zerofold: tie_text.safetensors: __metadata__: corrupt: \"zerofold.tied\" is no JSON object of tensor names
"
run_z diff --json tie_ok.safetensors tie_ok.safetensors
expect "a tied record read back" 0 ""
expect_true "a tied record read back: both names" "grep -q '\"only_in_a\":\\[\\]' '$OUT' && grep -q '\"name\":\"b\"' '$OUT'"
rm -f ./*.safetensors back.pt

# --- --only on convert and shrink, as on merge: names by glob, ties follow ------------------
hf=$F/hf/bloated
s1=$hf/pytorch_model-00001-of-00003.bin
run_z convert --only 'model.layers.*.weight' "$s1" only_w.pt
expect "convert --only to a torch file" 0 ""
run_z convert --only 'lm_head.*' "$s1" only_tied.safetensors
expect "convert --only to safetensors: the tie follows" 0 ""
run_z shrink --only '*.bias,model.layers.0.attn.*' "$s1" only_b.pt
expect "shrink --only, two patterns" 0 ""
run_z shrink --quiet --only '*.bias' "$s1" -
expect "shrink --only to stdout" 0 ""
cp "$OUT" only_stdout.pt
run_z shrink --only '*.bias' "$hf" only_folder/
expect "shrink --only of a folder" 0 ""
run_z convert --to safetensors --only 'model.layers.1.*' "$hf" only_st/
expect "convert --only of a folder to safetensors" 0 ""
if "$PY" - "$s1" "$ZF_ROOT/tests" <<'EOF2'; then ok; else bad "--only outputs: names or values wrong"; fi
import json, sys
sys.path.insert(0, sys.argv[2])
import torch, torch_oracle as oracle
src = oracle.load(sys.argv[1])
def same(got, names):
    assert sorted(got) == sorted(names), (sorted(got), sorted(names))
    for k in names:
        assert torch.equal(got[k], src[k]), k
same(oracle.load("only_w.pt"), ["model.layers.0.attn.weight", "model.layers.0.mlp.up.weight", "model.layers.0.mlp.down.weight"])
same(oracle.load_safetensors("only_tied.safetensors"), ["lm_head.weight", "model.embed.weight"])
same(oracle.load("only_b.pt"), ["model.layers.0.attn.bias", "model.layers.0.mlp.up.bias", "model.layers.0.attn.weight"])
same(oracle.load("only_stdout.pt"), ["model.layers.0.attn.bias", "model.layers.0.mlp.up.bias"])
index = json.load(open("only_folder/pytorch_model.bin.index.json"))
held = {}
for shard in sorted(set(index["weight_map"].values())):
    for k, v in oracle.load("only_folder/" + shard).items():
        held[k] = (shard, v)
assert sorted(held) == sorted(index["weight_map"]), (sorted(held), index["weight_map"])
assert all(k.endswith(".bias") for k in held) and len(held) == 4, sorted(held)
assert {k: s for k, (s, _) in held.items()} == index["weight_map"]
assert index["metadata"]["total_size"] == sum(v.nelement() * v.element_size() for _, v in held.values())
st = oracle.load_safetensors("only_st/model.safetensors")
assert sorted(st) == ["model.layers.1.attn.bias", "model.layers.1.attn.weight", "model.layers.1.mlp.down.weight",
                      "model.layers.1.mlp.up.bias", "model.layers.1.mlp.up.weight"], sorted(st)
EOF2
run_z shrink --only 'nothing*' "$s1" none.pt
expect "--only matching nothing" 2 "zerofold: $s1: invalid argument: --only \"nothing*\" matches no tensor; its names look like: \"model.embed.weight\", \"model.layers.0.attn.weight\", \"model.layers.0.attn.bias\", \"model.layers.0.mlp.up.weight\", \"model.layers.0.mlp.up.bias\" (and 2 more)
"
expect_true "--only matching nothing: no output" "[ ! -e none.pt ]"
run_z shrink --only 'nothing*' "$hf" none/
expect "--only matching nothing in a folder" 2 "zerofold: $hf: invalid argument: --only matches no tensor of the folder's shards
"
expect_true "--only matching nothing in a folder: no output" "[ ! -e none ]"
cp "$s1" mine.bin
run_z shrink --only '*.bias' --in-place mine.bin
expect "--only with --in-place" 2 "zerofold: shrink: --only with --in-place would drop the rest of IN
zerofold: hint: run 'zerofold shrink --help'
"
run_z convert --only '' "$s1" e.pt
expect "--only with no pattern" 2 "zerofold: convert: --only needs a pattern
zerofold: hint: run 'zerofold convert --help'
"
rm -rf only_* none* mine.bin e.pt

zf_finish
