#!/usr/bin/env bash
# zerofold shrink through pipes and .zst names: the same bytes as the file
# path form, refusals with their exact stderr lines and exit codes.
# Run by tests/run_all.sh with ZEROFOLD set to the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
Z=${ZEROFOLD:-build/zerofold}
F=fixtures
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Every check counts once: a pass unless it calls fail.
checks=0
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { checks=$((checks + 1)); }
# expect_exit CODE CMD...: runs CMD (stdout and stderr to $T/out, $T/err).
expect_exit() {
  local want=$1; shift
  local got=0
  check
  "$@" >"$T/out" 2>"$T/err" || got=$?
  [ "$got" -eq "$want" ] || fail "exit $got, want $want: $* ($(head -c 300 "$T/err"))"
}
# expect_stderr TEXT: $T/err is exactly TEXT.
expect_stderr() {
  check
  [ "$(cat "$T/err")" = "$1" ] || fail "stderr was: $(cat "$T/err")"$'\n'"      wanted: $1"
}
same() { check; cmp -s "$1" "$2" || fail "$1 and $2 differ"; }

# 1. A pipe gives the path form's bytes, for every zip fixture.
inputs=("$F"/torch/*.pt "$F"/hf/bloated/*.bin "$F"/deepspeed/bloat_zero2_ws2_bf16/*.bin
        "$F"/deepspeed/zero3_ws4_fp32/ckpt/global_step2/*.pt)
n=0 want=0
for f in "${inputs[@]}"; do
  case "$f" in *legacy*) continue ;; esac
  want=$((want + 1))
  rm -f "$T/path.pt"
  "$Z" shrink --quiet "$f" "$T/path.pt" || { fail "path form of $f"; continue; }
  cat "$f" | "$Z" shrink --quiet - - >"$T/pipe.pt" || { fail "pipe form of $f"; continue; }
  same "$T/path.pt" "$T/pipe.pt"
  n=$((n + 1))
done
check
[ "$n" -eq "$want" ] && [ "$n" -ge 25 ] || fail "$n fixtures compared of $want"

# 2. .zst output decompresses to the path form's bytes; .zst input and
#    zstd-compressed standard input read as the plain file.
in="$F/hf/bloated/pytorch_model-00001-of-00003.bin"
"$Z" shrink --quiet "$in" "$T/path.bin"
"$Z" shrink --quiet "$in" "$T/out.bin.zst"
zstd -dq "$T/out.bin.zst" -o "$T/out.bin"
same "$T/path.bin" "$T/out.bin"
zstd -q "$in" -o "$T/in.bin.zst"
"$Z" shrink --quiet "$T/in.bin.zst" "$T/from_zst.bin"
same "$T/path.bin" "$T/from_zst.bin"
zstd -qc "$in" | "$Z" shrink --quiet - - >"$T/from_zst_pipe.bin"
same "$T/path.bin" "$T/from_zst_pipe.bin"
"$Z" shrink --quiet --zstd-level 19 "$T/in.bin.zst" "$T/both.bin.zst"
zstd -dq "$T/both.bin.zst" -o "$T/both.bin"
same "$T/path.bin" "$T/both.bin"
cat "$in" | "$Z" shrink --quiet - - | zstd -q >"$T/piped.bin.zst"
zstd -dq "$T/piped.bin.zst" -o "$T/piped.bin"
same "$T/path.bin" "$T/piped.bin"

# 3. A legacy file through a pipe: top folder "archive" on standard output,
#    the output's stem for a named output, as from a path.
legacy="$F/torch/legacy_views_tied.pt"
mkdir "$T/l"
"$Z" shrink --quiet "$legacy" "$T/l/archive.pt"
cat "$legacy" | "$Z" shrink --quiet - - >"$T/legacy_pipe.pt"
same "$T/l/archive.pt" "$T/legacy_pipe.pt"
"$Z" shrink --quiet "$legacy" "$T/l/small.pt"
cat "$legacy" | "$Z" shrink --quiet - "$T/small.pt"
same "$T/l/small.pt" "$T/small.pt"

# 4. Reports go to stderr when standard output carries the archive.
cat "$F/torch/views.pt" | "$Z" shrink - - >"$T/views.pt" 2>"$T/err"
"$Z" shrink --quiet "$F/torch/views.pt" "$T/views_path.pt"
same "$T/views_path.pt" "$T/views.pt"
check
grep -q '^- -> -: ' "$T/err" || fail "no report on stderr: $(cat "$T/err")"

# 4b. Standard output as a file is written through a descriptor of its own
#     (O_DIRECT where the filesystem takes it): the bytes land where standard
#     output stood, after bytes already written or appended, and the shell's
#     descriptor goes on after them. A checkpoint of over 8 MiB, so that
#     whole chunks go through the writer thread.
gen="$(dirname "$Z")/bench/shrink_gen"
"$gen" "$T/big" 12582912 2 3 bfloat16 8388608 >/dev/null
big="$T/big/pytorch_model-00001-of-00002.bin"
"$Z" shrink --quiet "$big" "$T/big_path.bin"
check
[ "$(stat -c %s "$T/big_path.bin")" -gt 8388608 ] || fail "big output too small"
{ printf abc; "$Z" shrink --quiet - - <"$big"; printf xyz; } >"$T/framed.bin"
{ printf abc; cat "$T/big_path.bin"; printf xyz; } >"$T/framed_want.bin"
same "$T/framed_want.bin" "$T/framed.bin"
printf 12345 >"$T/appended.bin"
"$Z" shrink --quiet - - <"$big" >>"$T/appended.bin"
{ printf 12345; cat "$T/big_path.bin"; } >"$T/appended_want.bin"
same "$T/appended_want.bin" "$T/appended.bin"
"$Z" shrink --quiet "$big" - >"$T/big_stdout.bin"
same "$T/big_path.bin" "$T/big_stdout.bin"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp /dev/shm/zf-stream-XXXXXX)
  "$Z" shrink --quiet - - <"$big" >"$shm"
  same "$T/big_path.bin" "$shm"
  rm -f "$shm"
fi

# 5. Refusals.
if script -qec true /dev/null >/dev/null 2>&1; then
  expect_exit 0 script -qec "$Z shrink $F/torch/views.pt -; echo exit=\$?" /dev/null
  check
  grep -q 'zerofold: shrink: refusing to write binary data to a terminal; redirect standard output or name a file' \
    "$T/out" || fail "no refusal on a terminal: $(cat "$T/out")"
  check
  grep -q 'exit=2' "$T/out" || fail "terminal refusal exit code: $(cat "$T/out")"
else
  echo "skip: 'script' is unavailable, terminal refusal not tested"
fi
expect_exit 2 "$Z" shrink --json "$F/torch/views.pt" -
expect_stderr "zerofold: shrink: --json prints on standard output, which OUT - takes for the archive
zerofold: hint: run 'zerofold shrink --help'"
for pair in "- $T/v.pt" "$F/torch/views.pt -" "$F/torch/views.pt $T/v.pt.zst"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$Z" shrink --verify $pair
  expect_stderr "zerofold: shrink: --verify: a stream ('-', .zst) cannot be re-read
zerofold: hint: run 'zerofold shrink --help'"
done
for flags in "--to safetensors" "--max-shard-size 1MB"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$Z" shrink $flags - "$T/st/"
  expect_stderr "zerofold: shrink: '-' is a stream, read in one forward pass; safetensors output (its header lists every tensor before their bytes) and a folder OUT (shards take tensors in an order of their own) read the input at random: save it to a file first
zerofold: hint: run 'zerofold shrink --help'"
done
# --dtype and --select work through pipes as from paths.
"$Z" shrink --quiet --dtype bfloat16 --select module \
  "$F/deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt" "$T/sel_path.pt"
"$Z" shrink --quiet --dtype bfloat16 --select module - - \
  <"$F/deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt" >"$T/sel_pipe.pt"
same "$T/sel_path.pt" "$T/sel_pipe.pt"
expect_exit 2 "$Z" shrink --in-place -
expect_stderr "zerofold: shrink: --in-place rewrites a file; '-' is a stream
zerofold: hint: run 'zerofold shrink --help'"
expect_exit 2 "$Z" shrink --zstd-level 30 "$F/torch/views.pt" "$T/x.pt.zst"
expect_stderr "zerofold: shrink: --zstd-level needs a number from 1 to 19
zerofold: hint: run 'zerofold shrink --help'"

# A storage key that makes a record name the zip reader refuses (a control byte): corrupt
# input, exit 1, from a pipe as from a path; from the pipe, named where the key is.
/usr/bin/python3 - "$T/esc.pt" <<'EOF'
import sys, torch, zipfile
torch.save({"w": torch.arange(4, dtype=torch.float32)}, sys.argv[1] + ".src")
src = zipfile.ZipFile(sys.argv[1] + ".src")
with zipfile.ZipFile(sys.argv[1], "w") as out:
    for info in src.infolist():
        data, name = src.read(info.filename), info.filename
        if name.endswith("data.pkl"):
            i = data.index(b"X\x01\x00\x00\x000")
            data = data[:i] + b"X\x01\x00\x00\x00\x1b" + data[i + 6:]
        if name.endswith("data/0"):
            name = name[:-1] + "\x1b"
        out.writestr(name, data)
EOF
expect_exit 1 "$Z" shrink "$T/esc.pt" "$T/esc_out.pt"
expect_stderr "zerofold: $T/esc.pt: esc.pt/data/\\x1b @ 419: corrupt: entry name \"esc.pt/data/\\x1b\" contains a control character"
expect_exit 1 sh -c "cat '$T/esc.pt' | '$Z' shrink - '$T/esc_out.pt'"
expect_stderr "zerofold: <stdin>: esc.pt/data.pkl @ 45: corrupt: storage key '\\x1b': entry name \"esc.pt/data/\\x1b\" contains a control character"
check
[ ! -e "$T/esc_out.pt" ] || fail "a refused shrink left $T/esc_out.pt"

# A truncated pipe: the record and the offset where it ended; no output file.
head -c 1000 "$F/torch/views.pt" >"$T/cut.pt"
expect_exit 1 sh -c "cat '$T/cut.pt' | '$Z' shrink - '$T/cut_out.pt'"
expect_stderr "zerofold: <stdin>: views/data/1 @ 1000: corrupt: stream ends inside entry data (40 of 400 bytes)"
check
[ ! -e "$T/cut_out.pt" ] || fail "a failed shrink left $T/cut_out.pt"
zstd -q "$T/cut.pt" -o "$T/cut.pt.zst"
expect_exit 1 "$Z" shrink "$T/cut.pt.zst" "$T/cut_out.pt"
expect_stderr "zerofold: $T/cut.pt.zst: views/data/1 @ 1000: corrupt: stream ends inside entry data (40 of 400 bytes); in .zst input, offset 1000 of the decompressed stream"
check
[ ! -e "$T/cut_out.pt" ] || fail "a failed shrink left $T/cut_out.pt"

# Storage records in another order than torch's: fine from a path, refused
# from a pipe, naming the record.
/usr/bin/python3 - "$F/torch/views.pt" "$T/reordered.pt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:
    names = src.namelist()
    data = sorted((n for n in names if "/data/" in n), reverse=True)
    for n in [n for n in names if n.endswith("data.pkl")] + data + [n for n in names if n.endswith("/version")]:
        dst.writestr(n, src.read(n))
EOF
"$Z" shrink --quiet "$T/reordered.pt" "$T/reordered_path.pt"
expect_exit 1 sh -c "cat '$T/reordered.pt' | '$Z' shrink - - > '$T/reordered_pipe.pt'"
expect_stderr "zerofold: <stdin>: views/data/1 @ 548: unsupported: record views/data/1 comes before views/data/0, but its bytes go after them in the output, whose storages are in string order of their keys; a single pass cannot reorder them: give the file's path instead"

echo "$((checks - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
