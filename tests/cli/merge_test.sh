#!/usr/bin/env bash
# zerofold merge on the command line: exit codes, the exact stderr line of every refusal,
# and the summary, dry-run, JSON, progress and quiet outputs. Values are checked by
# tests/interop/test_merge.py; here each case is a command and what it must print.
# Ends with "N passed, F failed".
set -u
Z=$(cd "$(dirname "${ZEROFOLD:-build/zerofold}")" && pwd)/$(basename "${ZEROFOLD:-build/zerofold}")
DS=$(cd "$(dirname "$0")/../../fixtures/deepspeed" && pwd)
PY=/usr/bin/python3
export ORACLE_DIR
ORACLE_DIR=$(cd "$(dirname "$0")/.." && pwd)  # tests/, for torch_oracle.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; shift; printf '  %s\n' "$@"; }

# expect NAME RC STDERR CMD...: runs CMD, checks its exit code and its whole stderr.
expect() {
  local name=$1 want_rc=$2 want_err=$3
  shift 3
  "$@" >out.txt 2>err.txt
  local rc=$?
  local err
  err=$(cat err.txt)
  if [ "$rc" = "$want_rc" ] && [ "$err" = "$want_err" ]; then ok; else
    bad "$name" "exit $rc, want $want_rc" "stderr: $err" "want:   $want_err"
  fi
}

# expect_stdout NAME WANT: the last command's whole stdout.
expect_stdout() {
  local got
  got=$(cat out.txt)
  if [ "$got" = "$2" ]; then ok; else bad "$1" "stdout: $got" "want:   $2"; fi
}

fresh() {  # fresh CASE: a writable copy of a fixture's checkpoint in ./ckpt
  rm -rf ckpt out out.bin
  cp -r "$DS/$1/ckpt" ckpt
}

# --- help and usage -----------------------------------------------------------------------
expect "help" 0 "" "$Z" merge --help
if grep -q "^usage: zerofold merge \[FLAGS\] CKPT_DIR OUT" out.txt && grep -q -- "--exclude-frozen" out.txt; then ok
else bad "help text" "$(head -2 out.txt)"; fi
expect "top-level help lists merge" 0 "" "$Z" --help
if grep -q "^  merge CKPT OUT" out.txt; then ok; else bad "top-level help" "$(cat out.txt)"; fi
expect "one argument" 2 "zerofold: merge: needs CKPT_DIR and OUT
zerofold: hint: run 'zerofold merge --help'" "$Z" merge ckpt
expect "stdout" 2 "zerofold: -: invalid argument: is a stream ('-' or .zst), which this command does not write; name a file or a folder (and compress it afterwards)" "$Z" merge ckpt -
expect "--dtype int8" 2 "zerofold: merge: --dtype takes bfloat16 (bf16), float16 (fp16, half) or float32 (fp32, float), not 'int8'
zerofold: hint: run 'zerofold merge --help'" "$Z" merge --dtype int8 ckpt out.bin
expect "--to onnx" 2 "zerofold: merge: --to takes torch or safetensors, not 'onnx'
zerofold: hint: run 'zerofold merge --help'" "$Z" merge --to onnx ckpt out
expect "bad shard size" 2 "zerofold: merge: --max-shard-size takes a size like 5GB, 500MB or 2GiB
zerofold: hint: run 'zerofold merge --help'" "$Z" merge --max-shard-size lots ckpt out
expect "dry run and verify" 2 "zerofold: merge: --verify checks written files; drop --dry-run
zerofold: hint: run 'zerofold merge --help'" "$Z" merge --dry-run --verify ckpt out

# --- a merge, its summary, and what it refuses to overwrite --------------------------------
fresh zero3_ws3_fp16
expect "merge ZeRO-3" 0 "" "$Z" merge ckpt out
expect_stdout "summary" "ckpt (ZeRO-3, world size 3) -> out: 27 params, 1 frozen, 2 buffers, 1 tied; 162.2 KB in 1 file"
[ -f out/pytorch_model.bin ] && ok || bad "out/pytorch_model.bin written"
expect "existing output" 2 "zerofold: out/pytorch_model.bin: invalid argument: exists; use --force to replace it" \
  "$Z" merge ckpt out
expect "--force --verify" 0 "" "$Z" merge --force --verify ckpt out
expect_stdout "verify summary" "ckpt (ZeRO-3, world size 3) -> out: 27 params, 1 frozen, 2 buffers, 1 tied; 162.2 KB in 1 file
verified 31 tensors, 162160 bytes"
expect "shards" 0 "" "$Z" merge --quiet --max-shard-size 40KB --force ckpt out
[ "$(ls out | wc -l)" = 7 ] && ok || bad "6 shards and the index" "$(ls out)"
expect "an earlier save" 2 "zerofold: out/pytorch_model-00001-of-00006.bin: invalid argument: is part of an earlier save in the output folder; use --force to replace it" \
  "$Z" merge ckpt out
expect "--quiet" 0 "" "$Z" merge --quiet --force ckpt out
[ "$(ls out)" = pytorch_model.bin ] && ok || bad "--force replaces the earlier save whole" "$(ls out)"
expect_stdout "quiet prints nothing" ""
mkdir dir.bin
# An existing folder is a folder OUT, whatever its name (output/target.h).
expect "OUT file name is a folder" 0 "" "$Z" merge --quiet ckpt dir.bin
[ "$(ls dir.bin)" = pytorch_model.bin ] && ok || bad "dir.bin/ holds the output" "$(ls dir.bin)"
expect "no archive name" 2 "zerofold: .bin: invalid argument: names no file: give a name before the extension" \
  "$Z" merge ckpt .bin
expect "--to against the extension" 2 "zerofold: x.safetensors: invalid argument: --to torch contradicts the safetensors file name" \
  "$Z" merge --to torch ckpt x.safetensors
expect "--only matching nothing" 2 "zerofold: invalid argument: --only 'decoder.*' matches none of the 31 tensor names (e.g. transformer.emb_scale)" \
  "$Z" merge --only 'decoder.*' ckpt part.bin
[ ! -e part.bin ] && ok || bad "no output after a refusal"

# --- dry run: the plan, nothing written ----------------------------------------------------
expect "dry run" 0 "" "$Z" merge --dry-run ckpt plan.bin
[ ! -e plan.bin ] && ok || bad "dry run wrote plan.bin"
if grep -qx "  lm_head.weight  tied to transformer.wte.weight" out.txt \
  && grep -qx "  transformer.position_ids  buffer int64 \[17\]  <- zero_pp_rank_0_mp_rank_00_model_states.pt:data/1\[0:17\] int64" out.txt \
  && grep -q "^  transformer.wte.weight  param float32 \[203, 36\]  <- zero_pp_rank_0_mp_rank_00_optim_states.pt:data/7\[0:2436\], zero_pp_rank_1_mp_rank_00_optim_states.pt:data/7\[0:2436\], zero_pp_rank_2_mp_rank_00_optim_states.pt:data/7\[0:2436\]$" out.txt \
  && grep -q "^plan.bin (170.0 KB, 31 tensors):$" out.txt \
  && tail -1 out.txt | grep -qx "ckpt (ZeRO-3, world size 3) -> plan.bin: 27 params, 1 frozen, 2 buffers, 1 tied; 162.2 KB in 1 file \[dry run\]"
then ok; else bad "dry-run listing" "$(cat out.txt)"; fi

# --- JSON summary and progress ---------------------------------------------------------------
expect "json" 0 "" "$Z" merge --json --verify --force ckpt out
if "$PY" - out.txt <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["zero_stage"] == 3 and d["world_size"] == 3 and d["bf16_optimizer"] is False, d
assert d["verified"] == {"tensors": 31, "bytes": 162160}, d["verified"]
assert d["outputs"] == [{"path": "out/pytorch_model.bin", "bytes": 170571, "tensors": 31}], d["outputs"]
assert (d["params"], d["frozen_params"], d["buffers"], d["ties"]) == (27, 1, 2, 1)
t = {x["name"]: x for x in d["tensors"]}
assert t["lm_head.weight"]["kind"] == "tie" and t["lm_head.weight"]["tied_to"] == "transformer.wte.weight"
assert t["transformer.wpe.weight"]["kind"] == "frozen param" and len(t["transformer.wpe.weight"]["sources"]) == 3
assert d["warnings"] == [] and d["index"] is None and d["removed"] == []
EOF
then ok; else bad "json document" "$(cat out.txt)"; fi
expect "json error" 3 "zerofold: nope: not found: no such folder" "$Z" merge --json nope out
if [ "$(cat out.txt)" = '{"error":{"code":"not found","record":"","offset":null,"message":"no such folder","path":"nope"}}' ]
then ok; else bad "json error document" "$(cat out.txt)"; fi
"$Z" merge --force --progress ckpt out >out.txt 2>err.txt
if grep -q $'\r.*merge ckpt -> out \[' err.txt && [ "$(tail -c 4 err.txt | od -An -c | tr -d ' ')" = '\r033[K' ]; then ok
else bad "progress on stderr, cleared at the end" "$(od -c err.txt | tail -3)"; fi
"$Z" merge --force --no-progress ckpt out >out.txt 2>err.txt
[ ! -s err.txt ] && ok || bad "no progress" "$(cat err.txt)"

# --- checkpoints that cannot be merged ------------------------------------------------------
mv ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt .
expect "missing optim rank" 3 "zerofold: ckpt/global_step2: not found: optim states of rank 1 missing: found ranks 0, 2" \
  "$Z" merge ckpt out2
mv zero_pp_rank_1_mp_rank_00_optim_states.pt ckpt/global_step2/
mv ckpt/global_step2/zero_pp_rank_2_mp_rank_00_model_states.pt .
expect "missing model-states rank" 3 "zerofold: ckpt/global_step2: not found: a stage 3 checkpoint has one model-states file per rank: found 2 for 3 ranks, missing zero_pp_rank_2_mp_rank_00_model_states.pt" \
  "$Z" merge ckpt out2
mv zero_pp_rank_2_mp_rank_00_model_states.pt ckpt/global_step2/
for f in optim model; do
  cp ckpt/global_step2/zero_pp_rank_2_mp_rank_00_${f}_states.pt ckpt/global_step2/zero_pp_rank_3_mp_rank_00_${f}_states.pt
done
expect "extra rank" 1 "zerofold: ckpt/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt: corrupt: partition_count says 3 ranks, found optim states of 4 (ranks 0-3): rank 3 and up are not part of this checkpoint" \
  "$Z" merge ckpt out2
rm ckpt/global_step2/zero_pp_rank_3_*
for f in zero_pp_rank_0_mp_rank_01_model_states.pt zero_pp_rank_1_mp_rank_01_optim_states.pt; do
  : >"ckpt/global_step2/$f"
done
expect "tensor parallel" 1 "zerofold: ckpt/global_step2/zero_pp_rank_0_mp_rank_01_model_states.pt: unsupported: tensor-parallel checkpoint (zero_pp_rank_0_mp_rank_01_model_states.pt): only mp_rank_00 is supported" \
  "$Z" merge ckpt out2
rm ckpt/global_step2/*mp_rank_01*
: >ckpt/global_step2/layer_01-model_00-model_states.pt
expect "pipeline parallel" 1 "zerofold: ckpt/global_step2/layer_01-model_00-model_states.pt: unsupported: pipeline-parallel checkpoint (layer_01-model_00-model_states.pt): layer_* files are not supported" \
  "$Z" merge ckpt out2
rm ckpt/global_step2/layer_*
: >ckpt/global_step2/expp_rank_0_mp_rank_00_optim_states.pt
expect "MoE" 1 "zerofold: ckpt/global_step2/expp_rank_0_mp_rank_00_optim_states.pt: unsupported: MoE checkpoint (expp_rank_0_mp_rank_00_optim_states.pt): expert files are not supported" \
  "$Z" merge ckpt out2
rm ckpt/global_step2/expp_*
head -c 100000 ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt >cut.pt
cp cut.pt ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt
"$Z" merge ckpt out2 >out.txt 2>err.txt
rc=$?
if [ $rc = 1 ] && grep -q "^zerofold: ckpt/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt: .*corrupt: " err.txt; then ok
else bad "truncated rank file" "exit $rc" "$(cat err.txt)"; fi
[ ! -e out2 ] && ok || bad "no output folder after a failure"
mkdir empty
expect "not a DeepSpeed folder" 3 "zerofold: empty: not found: not a DeepSpeed checkpoint folder: no 'latest' file, no *_model_states.pt file, no tag folder" \
  "$Z" merge empty out2
: >empty/notes.txt
expect "a folder of other files" 3 "zerofold: empty: not found: not a DeepSpeed checkpoint folder: no 'latest' file, no *_model_states.pt file, no tag folder" \
  "$Z" merge empty out2
expect "a file" 2 "zerofold: cut.pt: invalid argument: is a file; merge takes a DeepSpeed checkpoint folder" \
  "$Z" merge cut.pt out2

fresh zero1_ws2_fp16
expect "no such tag" 3 "zerofold: ckpt: not found: --tag names tag 'global_step9', which is no folder here (tag folders: global_step2)" \
  "$Z" merge --tag global_step9 ckpt out2
expect "--tag" 0 "" "$Z" merge --quiet --tag global_step2 ckpt tagged
expect "a tag folder itself" 0 "" "$Z" merge --quiet ckpt/global_step2 direct
cmp -s tagged/pytorch_model.bin direct/pytorch_model.bin && ok || bad "same output from CKPT_DIR and its tag folder"
echo global_step3 >ckpt/latest
expect "latest names no folder" 3 "zerofold: ckpt: not found: 'latest' names tag 'global_step3', which is no folder here (tag folders: global_step2)" \
  "$Z" merge ckpt out2
rm ckpt/latest
expect "no latest" 3 "zerofold: ckpt: not found: no 'latest' file to name the tag; tag folders here: global_step2 (use --tag)" \
  "$Z" merge ckpt out2
expect "onto an input" 2 "zerofold: ckpt/global_step2/mp_rank_00_model_states.pt: invalid argument: is an input file, which the output would destroy" \
  "$Z" merge --force ckpt/global_step2 ckpt/global_step2/mp_rank_00_model_states.pt
# The same file by other names: "./", an absolute path, a symlink, a hard link, and a
# folder OUT whose earlier save (replaced or removed under --force) is a rank file.
rank=ckpt/global_step2/mp_rank_00_model_states.pt
cp "$rank" rank.orig
ln -s global_step2/mp_rank_00_model_states.pt ckpt/sym.pt
ln "$rank" hard.pt
mkdir linked && ln -s "../$rank" linked/pytorch_model.bin
for o in "./$rank" "$TMP/$rank" ckpt/sym.pt hard.pt; do
  expect "onto an input as $o" 2 "zerofold: $o: invalid argument: is an input file, which the output would destroy: $rank" \
    "$Z" merge --force ckpt/global_step2 "$o"
done
expect "onto an input through a folder OUT" 2 "zerofold: linked/pytorch_model.bin: invalid argument: is an input file, which the output would destroy: $rank" \
  "$Z" merge --force ckpt/global_step2 linked
cmp -s "$rank" rank.orig && [ -L ckpt/sym.pt ] && [ -L linked/pytorch_model.bin ] && ok || bad "a refused merge changed its input"
rm -rf rank.orig ckpt/sym.pt hard.pt linked

# An unsafe global in client state: a warning, and the merge goes on.
fresh zero1_ws2_fp16
"$PY" - <<'EOF'
import os, sys
sys.path.insert(0, os.environ["ORACLE_DIR"])
import torch
import torch_oracle as oracle
p = "ckpt/global_step2/mp_rank_00_model_states.pt"
d = oracle.load(p)
d["client_hook"] = os.system  # pickled as the global posix.system
torch.save(d, p)
EOF
# Refused like every writing command (issue 27): exit 1, one line, no output.
expect "unsafe global refused" 1 "zerofold: ckpt/global_step2/mp_rank_00_model_states.pt: unsafe: pickle references unsafe globals: posix.system (runs code: processes and the operating system) (--keep-unsafe writes the tensors anyway; the globals are not carried)" \
  "$Z" merge ckpt out
if [ -e out ]; then bad "unsafe refused: no output" "out exists"; else ok; fi
expect "--keep-unsafe warns" 0 "zerofold: ckpt/global_step2/mp_rank_00_model_states.pt: warning: pickle references unsafe globals: posix.system (runs code: processes and the operating system) (not executed; merge writes only tensors, so none is carried)" \
  "$Z" merge --keep-unsafe ckpt out
expect "--quiet hides warnings" 0 "" "$Z" merge --keep-unsafe --quiet --force ckpt out

# A Megatron folder whose common.pt names an unsafe global: merge reads nothing of common.pt,
# but torch.load of it runs the global, so the merge is refused too (it went on before).
rm -rf mg out
cp -r "$DS/../megatron/gpt_tp2pp2_mlm/ckpt" mg
cp "$DS/../bad/unsafe_os_system.pt" mg/iter_0000010/common.pt
expect "Megatron: unsafe common.pt refused" 1 "zerofold: mg/iter_0000010/common.pt: unsafe: pickle references unsafe globals: posix.system (runs code: processes and the operating system) (merge writes nothing of common.pt; --keep-unsafe merges the tensors anyway)" \
  "$Z" merge mg out
if [ -e out ]; then bad "Megatron unsafe common.pt refused: no output" "out exists"; else ok; fi
expect "Megatron: --keep-unsafe merges" 0 "" "$Z" merge --keep-unsafe --quiet mg out
if [ -e out/pytorch_model.bin ]; then ok; else bad "Megatron --keep-unsafe: an output" "no out/pytorch_model.bin"; fi
rm -rf mg out

# Under a limit on open files below the rank files' count: zerofold holds at
# most half the limit open (4 model + 4 optim files of ZeRO-3 ws4 under a
# limit of 11, with 0-2 taken: holding all would need fds 0-10 before the
# output's) and reopens the others as needed; the output is the same.
"$Z" merge --quiet "$DS/zero3_ws4_fp32/ckpt" unlimited.safetensors
(
  for fd in $(seq 3 63); do eval "exec $fd>&-" 2>/dev/null; done
  ulimit -n 11
  "$Z" merge --quiet "$DS/zero3_ws4_fp32/ckpt" limited.safetensors
) 2>limit_err.txt
if cmp -s unlimited.safetensors limited.safetensors; then ok; else
  bad "merge under ulimit -n 11 equals the unlimited merge" "stderr: $(cat limit_err.txt)"
fi

# Output files waiting for their commit hold no descriptor: a merge into 31
# shards (one a tensor) under a limit of 24 open files, equal to the merge
# without the limit.
"$Z" merge --quiet --max-shard-size 1B "$DS/zero3_ws3_fp16/ckpt" many_unlimited/
(
  for fd in $(seq 3 63); do eval "exec $fd>&-" 2>/dev/null; done
  ulimit -n 24
  "$Z" merge --quiet --max-shard-size 1B "$DS/zero3_ws3_fp16/ckpt" many_limited/
) 2>many_err.txt
if [ "$(ls many_limited 2>/dev/null | wc -l)" -gt 24 ] && diff -r many_unlimited many_limited >/dev/null; then ok; else
  bad "merge into 31 shards under ulimit -n 24 equals the unlimited merge" "stderr: $(cat many_err.txt)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
