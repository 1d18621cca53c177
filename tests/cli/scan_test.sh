#!/usr/bin/env bash
# zerofold scan: a tree mixing every input form (torch zip under any name, legacy, safetensors,
# a Hugging Face folder with index, a DCP folder, a Megatron torch_dist checkpoint, a DeepSpeed
# folder, fixtures/bad, a pickle calling os.system, text) gets one verdict per file, none
# skipped; shrink's savings checked against `zerofold shrink` run on the files; optimizer bytes
# against the torch oracle (tests/torch_oracle.py, the rule written again in Python) and
# against inspect's own DCP/Megatron totals; --hash duplicate groups against the oracle's
# sha256 of every tensor; --json parsed line by line; exit codes; progress on stderr; inspect
# FOLDER naming what it did not read.
#
#   ZEROFOLD=build/zerofold bash tests/cli/scan_test.sh
source "$(dirname "$0")/lib.sh"

hint='zerofold: hint: run '"'"'zerofold scan --help'"'"''
cd "$T" || exit 1

# --- usage --------------------------------------------------------------------------------
run_z scan
expect "no path" 2 "zerofold: scan: needs at least one PATH
$hint
"
run_z scan --bogus .
expect "unknown flag" 2 "zerofold: scan: unknown flag --bogus (see --help)
$hint
"
run_z scan --help
expect "--help" 0 ""
head -n 1 "$OUT" | grep -qx 'usage: zerofold scan \[--json\] \[--hash\] PATH\.\.\.' || bad "--help: first line $(head -n 1 "$OUT")"
expect_true "--help documents the exit codes" "grep -q '^Exit codes: 0 every file safe' '$OUT'"

# --- the tree -----------------------------------------------------------------------------
mkdir -p tree/torch tree/st tree/bad
cp "$F/torch/views.pt" "$F/torch/legacy_state_dict.pt" "$F/torch/optimizer_state.pt" tree/torch/
cp "$F/torch/state_dict.pt" tree/torch/weights.data        # a torch zip under another name
cp "$F/torch/legacy_views_tied.pt" tree/torch/legacy.blob   # a legacy file under another name
cp -r "$F/hf/bloated" tree/hf
cp -r "$F/dcp/v26_recipe_optim_ws2/ckpt" tree/dcp
cp -r "$F/megatron/gpt_tp2pp2_mlm/ckpt" tree/megatron
cp -r "$F/deepspeed/zero2_ws3_bf16/ckpt" tree/deepspeed
cp "$F"/bad/*.pt tree/bad/
head -c 100 "$F/torch/views.pt" >tree/bad/cut.pt
"$Z" convert "$F/torch/state_dict.pt" tree/st/model.safetensors >/dev/null 2>&1 || bad "convert to safetensors"
"$PY" - tree/st/evil.pkl <<'EOF'
import os, pickle, sys
class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))
open(sys.argv[1], "wb").write(pickle.dumps(Payload(), protocol=2))
EOF
printf 'a model card\n' >tree/st/README.md
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' tree/st/sock  # no regular file
mkfifo tree/st/fifo                                           # nor is this: no wait for a writer
"$PY" - tree/st <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1] + "/docs.zip", "w") as z:       # a zip, no checkpoint
    z.writestr("docs/a.txt", "x")
with zipfile.ZipFile(sys.argv[1] + "/mixed.zip", "w") as z:      # a data.pkl torch could take
    z.writestr("a/data.pkl", b"\x80\x02}q\x00.")
    z.writestr("b/x", b"1")
EOF
: >tree/st/empty

run_z scan --json --no-progress tree
expect "scan tree" 1 ""
cp "$OUT" tree.jsonl

# Every file of the tree has exactly one line, in walk order; the verdicts and formats.
if "$PY" - tree.jsonl tree <<'EOF'; then ok; else bad "tree verdicts"; fi
import json, os, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
files, totals = lines[:-1], lines[-1]
assert all(l["type"] == "file" for l in files) and totals["type"] == "totals", "line types"
on_disk = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[2]) for f in fs)
seen = [l["path"] for l in files]
assert sorted(seen) == on_disk, f"files: {sorted(set(on_disk) ^ set(seen))}"
assert len(seen) == len(set(seen)), "a file twice"
by = {l["path"]: l for l in files}
def want(path, verdict, fmt=None):
    got = by[path]
    assert got["verdict"] == verdict, f"{path}: {got['verdict']}, want {verdict}: {got}"
    if fmt is not None:
        assert got["format"] == fmt, f"{path}: format {got['format']}, want {fmt}"
want("tree/torch/views.pt", "safe", "torch-zip")
want("tree/torch/legacy_state_dict.pt", "safe", "torch-legacy")
want("tree/torch/optimizer_state.pt", "safe", "torch-zip")
want("tree/torch/weights.data", "safe", "torch-zip")
want("tree/torch/legacy.blob", "safe", "torch-legacy")
want("tree/st/model.safetensors", "safe", "safetensors")
want("tree/st/evil.pkl", "unsafe", "pickle")
assert by["tree/st/evil.pkl"]["unsafe_globals"] == ["posix.system"], by["tree/st/evil.pkl"]
want("tree/st/README.md", "not a checkpoint", "")
want("tree/st/empty", "not a checkpoint", "")
want("tree/st/sock", "not a checkpoint", "")
want("tree/st/fifo", "not a checkpoint", "")
want("tree/st/docs.zip", "not a checkpoint", "")
want("tree/st/mixed.zip", "corrupt")
for shard in ("pytorch_model-00001-of-00003.bin", "pytorch_model-00002-of-00003.bin", "pytorch_model-00003-of-00003.bin"):
    want("tree/hf/" + shard, "safe", "torch-zip")
want("tree/hf/pytorch_model.bin.index.json", "safe", "hf-index")
want("tree/hf/config.json", "not a checkpoint")
want("tree/dcp/.metadata", "safe", "dcp-metadata")
for f in os.listdir("tree/dcp"):
    if f.endswith(".distcp"):
        want("tree/dcp/" + f, "safe", "dcp-data")
want("tree/megatron/iter_0000010/.metadata", "safe", "dcp-metadata")
want("tree/megatron/latest_checkpointed_iteration.txt", "not a checkpoint")
want("tree/megatron/iter_0000010/metadata.json", "not a checkpoint")
# common.pt: a torch file whatever the verdict on its globals (the allowlist decides).
assert by["tree/megatron/iter_0000010/common.pt"]["format"] == "torch-zip"
for f in os.listdir("tree/deepspeed/global_step2"):
    want("tree/deepspeed/global_step2/" + f, "safe", "torch-zip")
want("tree/deepspeed/latest", "not a checkpoint")
want("tree/bad/deflated.pt", "safe", "torch-zip")
for f in ("unsafe_eval.pt", "unsafe_getattr.pt", "unsafe_os_system.pt"):
    want("tree/bad/" + f, "unsafe", "torch-zip")
    assert by["tree/bad/" + f]["unsafe_globals"], f
want("tree/bad/torchscript.pt", "corrupt")
assert by["tree/bad/torchscript.pt"]["error"]["code"] == "unsupported"
want("tree/bad/cut.pt", "corrupt")
assert by["tree/bad/cut.pt"]["error"]["path"] == "tree/bad/cut.pt"
# Totals: the lines' sums and counts.
counts = {}
for l in files:
    counts[l["verdict"]] = counts.get(l["verdict"], 0) + 1
assert totals["files"] == len(files)
assert {k: v for k, v in totals["verdicts"].items() if v} == counts, (totals["verdicts"], counts)
assert totals["file_bytes"] == sum(l["file_bytes"] for l in files)
# Byte counts add up over the files read whole only (a refused file's are what its damage declares).
read = [l for l in files if l["verdict"] in ("safe", "unsafe")]
for key in ("stored_bytes", "referenced_bytes", "optimizer_bytes"):
    assert totals[key] == sum(l[key] for l in read), key
assert totals["shrink_saves_bytes"] == sum(l["shrink_saves_bytes"] or 0 for l in read)
assert totals["file_bytes"] == sum(os.path.getsize(p) for p in on_disk)
assert totals["hashed"] is False and totals["duplicates"] == []
EOF

# --- what shrink would save: `zerofold shrink` on each file, the same name in another folder --
n=0
while read -r path saves; do
  n=$((n + 1))
  mkdir -p "shrunk/$n"
  out="shrunk/$n/$(basename "$path")"
  if ! "$Z" shrink --keep-unsafe --no-progress "$path" "$out" >/dev/null 2>"shrunk/$n.err"; then
    bad "shrink $path: $(cat "shrunk/$n.err")"
    continue
  fi
  got=$(($(size "$path") - $(size "$out")))
  [ "$got" -lt 0 ] && got=0
  if [ "$got" = "$saves" ]; then ok; else bad "shrink $path saves $got bytes, scan said $saves"; fi
done < <("$PY" -c '
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["type"] == "file" and o["shrink_saves_bytes"] is not None:
        print(o["path"], o["shrink_saves_bytes"])' tree.jsonl)
[ "$n" -ge 15 ] || bad "only $n files had a shrink prediction"
"$PY" -c '
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])][-1]
sys.exit(0 if t["shrink_saves_bytes"] > 20000 else 1)' tree.jsonl && ok || bad "the bloated folder's savings are in the totals"
# The folder as a whole: shrink's folder report against the shards' predictions.
"$Z" shrink --no-progress tree/hf shrunk/hf >/dev/null 2>&1 || bad "shrink FOLDER"
hf_before=0; hf_after=0
for f in tree/hf/pytorch_model-0000*.bin; do
  hf_before=$((hf_before + $(size "$f")))
  hf_after=$((hf_after + $(size "shrunk/hf/$(basename "$f")")))
done
hf_pred=$("$PY" -c '
import json, sys
print(sum(o["shrink_saves_bytes"] for o in map(json.loads, open(sys.argv[1]))
          if o["type"] == "file" and o["path"].startswith("tree/hf/") and o["shrink_saves_bytes"] is not None))' tree.jsonl)
expect_true "shrink FOLDER saves what scan predicted" "[ $((hf_before - hf_after)) = $hf_pred ]"

# --- optimizer bytes: the torch oracle, and the formats' own totals ------------------------
if "$PY" - tree.jsonl "$ZF_ROOT" "$F" <<'EOF'; then ok; else bad "optimizer bytes"; fi
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[2], "tests"))
import torch_oracle
by = {o["path"]: o for o in map(json.loads, open(sys.argv[1])) if o["type"] == "file"}
F = sys.argv[3]
STATE_NAMES = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg",
               "acc_delta", "sum", "exp_inf", "mu_product", "eta", "mu", "ax", "prev", "step_size", "row_var",
               "col_var", "variance"}
def is_optimizer(elems):
    # The rule of src/scan/optimizer.h, written again: keys split at dots, ints in decimal.
    parts = [p for e in elems for p in (str(e).split(".") if isinstance(e, str) else [str(e)])]
    if parts and parts[0] in ("optimizer", "optim", "optimizer_state_dict", "optimizer_states", "optimizers"):
        return True
    return len(parts) >= 3 and parts[-1] in STATE_NAMES and "state" in parts[:-2]
def oracle(path):
    d = torch_oracle.describe(torch_oracle.load(path))
    return sum(t["nbytes"] for t in d["tensors"] if is_optimizer(t["path"]))
checked = 0
for path, o in by.items():
    if o["format"] in ("torch-zip", "torch-legacy") and o["verdict"] == "safe":
        want = oracle(path)
        assert o["optimizer_bytes"] == want, f"{path}: {o['optimizer_bytes']}, oracle {want}"
        checked += 1
assert by["tree/torch/optimizer_state.pt"]["optimizer_bytes"] > 0
assert all(by[p]["optimizer_bytes"] > 0 for p in by if p.endswith("optim_states.pt"))
assert checked >= 12, checked
# DCP and torch_dist: the chunks' optimizer bytes sum to what torch loads from the fixtures'
# expected_all.pt (every key, merged), and to the optimizer group inspect reports.
for tree, fixture in (("tree/dcp/", F + "/dcp/v26_recipe_optim_ws2"), ("tree/megatron/", F + "/megatron/gpt_tp2pp2_mlm")):
    got = sum(o["optimizer_bytes"] for p, o in by.items() if p.startswith(tree) and o["format"] == "dcp-data")
    want = oracle(fixture + "/expected_all.pt")
    assert got == want and got > 0, f"{tree}: {got}, oracle {want}"
EOF
for pair in "dcp/v26_recipe_optim_ws2/ckpt dcp" "megatron/gpt_tp2pp2_mlm/ckpt megatron"; do
  set -- $pair
  "$Z" inspect --json "$F/$1" >inspect.json 2>/dev/null
  if "$PY" - tree.jsonl inspect.json "tree/$2/" <<'EOF'; then ok; else bad "optimizer bytes of $1 against inspect"; fi
import json, sys
got = sum(o["optimizer_bytes"] for o in map(json.loads, open(sys.argv[1]))
          if o["type"] == "file" and o["path"].startswith(sys.argv[3]) and o["format"] == "dcp-data")
doc = json.load(open(sys.argv[2]))
f = doc["files"][0]
groups = f["groups"]
want = sum(g["nbytes"] for g in groups if g["group"] != "model")
assert got == want, (got, want, groups)
EOF
done

# --- a refused file's declared sizes stay out of the totals (a chunk of 4 EiB past a 747-byte file)
run_z scan --json --no-progress "$F/dcp/bad/huge_length"
"$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
t = lines[-1]
assert any(l.get("verdict") == "corrupt" for l in lines[:-1]), lines
assert t["stored_bytes"] < 1 << 20 and t["referenced_bytes"] < 1 << 20, t' "$OUT" && ok ||
  bad "totals of dcp/bad/huge_length add a corrupt file's declared bytes: $(tail -1 "$OUT")"

# --- every damaged DCP and Megatron fixture: what merge refuses, scan does not call safe -----
# (fixtures/*/bad/expected_errors.json: merge's exit codes. dcp/bad/no_metadata is a folder
# of .distcp files without .metadata: no DCP folder, so each file is judged by its bytes.)
for set in dcp megatron; do
  while read -r name want; do
    run_z scan --json --no-progress "$F/$set/bad/$name"
    case " $want " in
      *" $RC "*) ok ;;
      *) bad "$set/bad/$name: scan exit $RC, want one of $want: $(grep -v '"verdict":"safe"' "$OUT" | head -c 300)" ;;
    esac
  done < <("$PY" -c '
import json, sys
for name, case in json.load(open(sys.argv[1])).items():
    if name != "no_metadata":
        print(name, " ".join(str(c) for c in case["exit"]))' "$F/$set/bad/expected_errors.json")
done

# --- a DeepSpeed folder judged as a whole too: a missing rank's file, a `latest` naming nothing --
cp -r "$F/deepspeed/zero2_ws3_bf16/ckpt" ds_missing
rm ds_missing/global_step2/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt
run_z scan --json --no-progress ds_missing
expect "DeepSpeed folder missing a rank: exit 1" 1 ""
expect_true "missing rank: reported on latest, naming the rank" \
  "grep '\"path\":\"ds_missing/latest\"' '$OUT' | grep -q '\"verdict\":\"corrupt\".*optim states of rank 1 missing'"
cp -r "$F/deepspeed/zero2_ws3_bf16/ckpt" ds_tag
echo nope >ds_tag/latest
run_z scan --json --no-progress ds_tag
expect "DeepSpeed latest naming no tag: exit 1" 1 ""
expect_true "latest naming no tag: latest is corrupt" \
  "grep '\"path\":\"ds_tag/latest\"' '$OUT' | grep -q '\"verdict\":\"corrupt\".*names tag'"
run_z scan --no-progress "$F/deepspeed"
expect "every DeepSpeed fixture (merge refusals are no damage): exit 0" 0 ""

# --- human output -------------------------------------------------------------------------
run_z scan --no-progress tree
expect "scan tree (text)" 1 ""
expect_true "text: a not-a-checkpoint line" "grep -q '^not a checkpoint  tree/st/README.md' '$OUT'"
expect_true "text: an unsafe line, its globals" "grep -A1 '^unsafe  *tree/st/evil.pkl (pickle' '$OUT' | grep -q 'posix.system'"
expect_true "text: a corrupt file's error line" "grep -A1 '^corrupt  *tree/bad/cut.pt' '$OUT' | grep -q 'tree/bad/cut.pt: @ 0: corrupt: '"
expect_true "text: the totals" "grep -q '^stored .*; shrink would save .*; optimizer state ' '$OUT'"

# --- exit codes -----------------------------------------------------------------------------
run_z scan --no-progress tree/hf tree/torch
expect "all safe or not a checkpoint: exit 0" 0 ""
run_z scan --no-progress tree/bad/cut.pt
expect "corrupt: exit 1" 1 ""
run_z scan --no-progress tree/st/evil.pkl
expect "unsafe: exit 1" 1 ""
run_z scan --no-progress tree/torch nope
expect "missing PATH: exit 3" 3 ""
expect_true "missing PATH: reported unreadable" "grep -q '^unreadable  *nope' '$OUT'"
run_z scan --json --no-progress tree/bad/cut.pt nope
expect "corrupt and missing: the largest, 3" 3 ""

# --- progress on stderr ---------------------------------------------------------------------
run_z scan --json --progress=lines --progress-interval 0 tree/torch
expect_true "progress lines name the scan" "grep -q ' scan tree/torch/views.pt: ' '$ERR'"
expect_true "progress reaches the total" "tail -n 1 '$ERR' | grep -q '(100%)'"
expect_true "progress leaves stdout JSON" "$PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' '$OUT'"

# --- --hash: copies of identical tensor data ------------------------------------------------
mkdir -p dup/b
cp "$F/torch/state_dict.pt" dup/a.pt
cp "$F/torch/state_dict.pt" dup/b/copy.pt
cp "$F/torch/tied_weights.pt" dup/tied.pt
run_z scan --json --hash --no-progress dup
expect "scan --hash dup" 0 ""
if "$PY" - "$OUT" "$ZF_ROOT" dup/a.pt dup/b/copy.pt dup/tied.pt <<'EOF'; then ok; else bad "--hash groups: $(tail -n 1 "$OUT" | head -c 600)"; fi
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[2], "tests"))
import torch_oracle
lines = [json.loads(l) for l in open(sys.argv[1])]
totals = lines[-1]
assert totals["hashed"] is True and all(l["hashed"] for l in lines[:-1])
# The oracle: every distinct view of each file (a tie counts once), grouped by the sha256 of
# its logical bytes and its size.
groups = {}
for path in sys.argv[3:]:
    d = torch_oracle.describe(torch_oracle.load(path))
    seen = set()
    for t in d["tensors"]:
        view = (t["storage"], t["storage_offset"], tuple(t["shape"]), tuple(t["stride"]), t["dtype"])
        if t["nbytes"] == 0 or view in seen:
            continue
        seen.add(view)
        groups.setdefault((t["sha256"], t["nbytes"]), []).append(path + ": " + t["name"])
want = sorted((n, sorted(c)) for (_, n), c in groups.items() if len(c) > 1)
got = sorted((g["nbytes"], sorted(g["copies"])) for g in totals["duplicates"])
assert got == want, (got, want)
wasted = sum(n * (len(c) - 1) for n, c in want)
assert totals["duplicate_wasted_bytes"] == wasted and wasted > 0, (totals["duplicate_wasted_bytes"], wasted)
assert all(g["wasted_bytes"] == g["nbytes"] * (len(g["copies"]) - 1) for g in totals["duplicates"])
EOF
run_z scan --hash --no-progress dup
expect_true "text: the duplicate groups" "grep -q '^duplicates: [0-9]* groups of identical tensor data, .* wasted' '$OUT'"
expect_true "text: a copy's name" "grep -q '^    dup/b/copy.pt: ' '$OUT'"
run_z scan --hash --json --no-progress tree/dcp tree/dcp
expect "a folder given twice is walked once" 0 ""
expect_true "folder twice: no duplicates from itself" \
  "tail -n 1 '$OUT' | $PY -c 'import json,sys; t=json.load(sys.stdin); sys.exit(0 if t[\"files\"] == len(open(\"$OUT\").readlines()) - 1 else 1)'"

# --- a bit flipped in a stored record: metadata only misses it, --hash reads it --------------
cp "$F/torch/state_dict.pt" flip.pt
"$PY" - flip.pt <<'EOF'
import struct, sys, zipfile
path = sys.argv[1]
z = zipfile.ZipFile(path)
info = next(i for i in z.infolist() if i.filename.endswith("/data/0"))
raw = open(path, "rb").read()
name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
at = info.header_offset + 30 + name_len + extra_len
assert info.compress_type == 0 and info.CRC != 0
data = bytearray(raw)
data[at] ^= 0x01
open(path, "wb").write(bytes(data))
EOF
run_z scan --json --no-progress flip.pt
expect "bit flip, metadata only: not read, safe" 0 ""
run_z scan --json --hash --no-progress flip.pt
# The records' CRC-32 is checked on every read of a whole record (--hash reads each).
if [ "$RC" = 1 ] && "$PY" -c '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if o["verdict"] == "corrupt" and o["error"]["path"] == "flip.pt" and o["error"]["record"].endswith("data/0") else 1)' "$OUT"; then
  ok
else
  bad "scan --hash of a bit-flipped stored record: exit $RC, want 1 and verdict corrupt naming flip.pt and its data/0 record"
fi

# A deflated record's damage: its CRC-32 is checked as --hash finishes the record.
cp "$F/bad/deflated.pt" dflip.pt
"$PY" - dflip.pt <<'EOF'
import struct, sys, zipfile
path = sys.argv[1]
info = next(i for i in zipfile.ZipFile(path).infolist() if i.filename.endswith("/data/0"))
raw = bytearray(open(path, "rb").read())
name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
assert info.compress_type == 8
raw[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0x10
open(path, "wb").write(bytes(raw))
EOF
run_z scan --json --no-progress dflip.pt
expect "deflated bit flip, metadata only: safe" 0 ""
run_z scan --json --hash --no-progress dflip.pt
expect "deflated bit flip, --hash: exit 1" 1 ""
if "$PY" -c '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if o["verdict"] == "corrupt" and o["error"]["record"] == "deflated/data/0" and not o["hashed"] else 1)' "$OUT"
then ok; else bad "deflated bit flip, --hash: corrupt, naming the record: $(cat "$OUT")"; fi

# --- a case-folded duplicate name torch 1.13 would read: ambiguous --------------------------
"$PY" - "$F/torch/state_dict.pt" twin.pt <<'EOF'
import sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
with zipfile.ZipFile(sys.argv[2], "w") as out:
    for i in src.infolist():
        out.writestr(i, src.read(i))
    pkl = next(i for i in src.infolist() if i.filename.endswith("/data.pkl"))
    out.writestr(pkl.filename[:-len("data.pkl")] + "DATA.PKL", src.read(pkl))
EOF
run_z scan --json --no-progress twin.pt
# torch 1.13's miniz finds names case-insensitively: two readings, refused as ambiguous.
if [ "$RC" = 1 ] && grep -q '"verdict":"ambiguous"' "$OUT"; then ok; else
  bad "scan of an archive with data.pkl and DATA.PKL: exit $RC, want 1 and verdict ambiguous"
fi

# Every crafted zip of the container-parity suite (fixtures/zipcheck/make_ambiguous.py): scan reads
# local headers too, so the local-name and local-encryption cases are ambiguous here as well.
mkdir -p parity && "$PY" "$ZF_ROOT/fixtures/zipcheck/make_ambiguous.py" parity >/dev/null 2>&1 || bad "make_ambiguous.py"
run_z scan --json --no-progress parity
"$PY" -c '
import json, sys
by = {o["path"].split("/")[-1]: o for o in map(json.loads, open(sys.argv[1])) if o["type"] == "file"}
pts = [n for n in by if n.endswith(".pt")]
assert len(pts) >= 8, pts
for n in pts:
    want = "corrupt" if n == "size_past_end.pt" else "ambiguous"
    assert by[n]["verdict"] == want, (n, by[n])
    assert by[n]["error"]["code"] == want, (n, by[n]["error"])' "$OUT" && [ "$RC" = 1 ] && ok ||
  bad "scan of the crafted ambiguous zips: exit $RC: $(head -c 600 "$OUT")"

# --- inspect FOLDER names the files it did not read -----------------------------------------
cp tree/st/evil.pkl tree/hf/
run_z inspect tree/hf
expect "inspect FOLDER with a stray pickle" 0 ""
expect_true "inspect names the unread files, pointing to scan" \
  "grep -qx 'not read (not Hugging Face layout; \`zerofold scan\` judges every file): tree/hf/config.json, tree/hf/evil.pkl' '$OUT'"
run_z inspect --json tree/hf
expect_true "inspect --json: the folder's unread files" \
  "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"folders\"][0][\"unread\"] == [\"tree/hf/config.json\", \"tree/hf/evil.pkl\"] else 1)' '$OUT'"
run_z scan --no-progress tree/hf
expect "scan judges what inspect did not read" 1 ""

zf_finish
