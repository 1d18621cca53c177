# Shared helpers of the CLI tests (sourced by tests/cli/*_test.sh; not a test itself).
#
#   ZEROFOLD   the binary under test (default build/zerofold)
# Each check prints "FAIL: what" on failure; zf_finish prints the count and exits 1 if any
# check failed. Known bugs, reported and not yet fixed, are printed as "KNOWN BUG" lines
# and counted apart (see zf_known_bug): they do not fail the run, and are listed so the
# fix can turn them into failures again.

set -u
export LC_ALL=C  # byte-wise [:print:] in the checks below
ZF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
Z=${ZEROFOLD:-$ZF_ROOT/build/zerofold}
case $Z in /*) ;; *) Z=$PWD/$Z ;; esac
F=$ZF_ROOT/fixtures
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
zf_checks=0
zf_fails=0
zf_known=0
declare -A zf_known_seen=()

fail() {
  zf_fails=$((zf_fails + 1))
  echo "FAIL: $*"
}

ok() { zf_checks=$((zf_checks + 1)); }

# zf_known_bug KEY WHAT: a failure matching a reported bug; printed once per KEY.
zf_known_bug() {
  zf_known=$((zf_known + 1))
  if [ -z "${zf_known_seen[$1]+x}" ]; then
    zf_known_seen[$1]=1
    echo "KNOWN BUG ($1): $2"
  fi
}

# run_z ARGS...: runs zerofold; sets RC, and OUT/ERR to files holding stdout/stderr.
OUT=$T/.stdout
ERR=$T/.stderr
run_z() {
  "$Z" "$@" >"$OUT" 2>"$ERR"
  RC=$?
}

# expect NAME WANT_RC WANT_STDERR: the last run_z exited WANT_RC with exactly that stderr.
expect() {
  zf_checks=$((zf_checks + 1))
  local got
  got=$(cat "$ERR"; echo x)
  got=${got%x}
  if [ "$RC" != "$2" ]; then
    fail "$1: exit $RC, want $2; stderr: $got"
  elif [ "$got" != "$3" ]; then
    fail "$1: stderr
--- got:
$got--- want:
$3"
  fi
}

# bad WHAT...: a check that failed (counted, and printed as a failure).
bad() { ok; fail "$*"; }

# expect_true NAME EXPR: EXPR, evaluated by the shell, succeeds.
expect_true() { if eval "$2"; then ok; else bad "$1" "$2"; fi; }

# expect_same_folder NAME A B: A and B hold the same file names (hidden ones
# too, so a leftover temp file fails it) with the same bytes.
expect_same_folder() {
  if [ "$(ls -A "$2")" = "$(ls -A "$3")" ] && diff -r "$2" "$3" >/dev/null; then ok; else
    bad "$1" "$(ls -A "$2" | tr '\n' ' ')" "$(ls -A "$3" | tr '\n' ' ')"
  fi
}

# expect_empty_dir NAME DIR: DIR holds no file at all (no output, no temp file).
expect_empty_dir() {
  zf_checks=$((zf_checks + 1))
  local left
  left=$(ls -A "$2")
  [ -z "$left" ] || fail "$1: left behind in $2: $left"
}

# inode PATH
inode() { stat -c %i "$1"; }
# size PATH
size() { stat -c %s "$1"; }

# check_error_line NAME PATH: stderr of the last run is one error line for PATH in the
# format "zerofold: PATH: [RECORD ][@ OFFSET: ]code: why" with a bad-input code, optionally
# followed by one "zerofold: hint: " line. Every line is text a terminal shows as is: no NUL,
# no control bytes (C0, DEL, C1) and valid UTF-8 (the escaping of Status::ToString).
check_error_line() {
  zf_checks=$((zf_checks + 1))
  local name=$1 path=$2 lines parts
  mapfile -d '' parts <"$ERR"  # more than one part: a NUL byte (builtins only: this runs thousands of times)
  if [ "${#parts[@]}" -gt 1 ]; then
    fail "$name: stderr holds a NUL byte: $(head -c 300 "$ERR" | tr -c '[:print:]\n' '?')"
    return
  fi
  mapfile -t lines <"$ERR"
  local first=${lines[0]-}
  if [[ "${lines[*]}" == *[![:print:]]* ]]; then
    if [[ "${lines[*]}" == *[[:cntrl:]]* ]]; then
      fail "$name: stderr holds control bytes: ${first//[![:print:]]/?}"
      return
    fi
    # Only bytes >= 0x80: they must be valid UTF-8 without C1 controls (rare: a tool is fine).
    if ! "$PY" -c '
import sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
assert not any(0x80 <= ord(c) <= 0x9F for c in text)' "$ERR" 2>/dev/null; then
      fail "$name: stderr is not valid UTF-8 or holds C1 controls: ${first//[![:print:]]/?}"
      return
    fi
  fi
  if [ "${#lines[@]}" -lt 1 ] || [ "${#lines[@]}" -gt 2 ]; then
    fail "$name: ${#lines[@]} stderr lines, want 1 (or 1 + hint): ${lines[*]}"
    return
  fi
  if [ "${#lines[@]}" -eq 2 ] && [[ ${lines[1]} != "zerofold: hint: "* ]]; then
    fail "$name: second stderr line is no hint: ${lines[1]}"
  fi
  local re="^zerofold: ${path//./\\.}: (.+ )?(@ [0-9]+: )?(corrupt|unsupported|unsafe|limit|ambiguous): [^ ].*$"
  [[ $first =~ $re ]] || fail "$name: error line not in the format: $first"
}

# dir_is_empty DIR: true if DIR holds no file (builtins only).
dir_is_empty() {
  local files
  files=("$1"/* "$1"/.[!.]*)
  local f
  for f in "${files[@]}"; do [ -e "$f" ] && return 1; done
  return 0
}

# mutations SRC DIR CUTS FLIPS: writes to DIR
#   cut.N      the first N bytes of SRC, for CUTS values of N spread over [0, size)
#   cd.K       SRC with one byte flipped in the zip central directory / end records (zip only)
#   pkl.K      SRC with one byte flipped in its pickle (zip: data.pkl, with the CRC-32 in
#              the central directory and data descriptor repaired so the pickle decoder
#              sees the change; legacy: the pickles before the storage bytes)
# FLIPS files of each kind, positions spread evenly. Prints nothing.
mutations() {
  "$PY" - "$@" <<'PYEOF'
import os, pickletools, struct, sys, zipfile, zlib
src, out, cuts, flips = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, "rb").read()
n = len(data)
os.makedirs(out, exist_ok=True)
for k in sorted({min(n - 1, i * n // cuts + i % 7) for i in range(cuts)} | {n - 1}):
    open(os.path.join(out, f"cut.{k}"), "wb").write(data[:k])

def spread(lo, hi, count):
    if hi <= lo:
        return []
    return sorted({lo + i * (hi - lo) // count for i in range(count)} | {hi - 1})

def flip(at, fix=None):
    b = bytearray(data)
    b[at] ^= 0xFF
    if fix:
        fix(b)
    return bytes(b)

if zipfile.is_zipfile(src):
    z = zipfile.ZipFile(src)
    for k, at in enumerate(spread(z.start_dir, n, flips)):
        open(os.path.join(out, f"cd.{k}"), "wb").write(flip(at))
    info = [i for i in z.infolist() if i.filename.endswith("/data.pkl")][0]
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    end = start + info.file_size
    cd_at = z.start_dir
    while data[cd_at:cd_at + 4] == b"PK\x01\x02":  # the data.pkl entry in the central directory
        nl, el, cl = struct.unpack_from("<HHH", data, cd_at + 28)
        if data[cd_at + 46:cd_at + 46 + nl].decode("utf-8", "replace") == info.filename:
            break
        cd_at += 46 + nl + el + cl

    def fix(b):
        crc = zlib.crc32(bytes(b[start:end]))
        struct.pack_into("<I", b, cd_at + 16, crc)
        if b[end:end + 4] == b"PK\x07\x08":
            struct.pack_into("<I", b, end + 4, crc)
    for k, at in enumerate(spread(start, end, flips)):
        open(os.path.join(out, f"pkl.{k}"), "wb").write(flip(at, fix))
else:
    with open(src, "rb") as f:
        try:
            for _ in range(5):  # magic, protocol, sys_info, the object, the storage keys
                for _op in pickletools.genops(f):
                    pass
        except Exception:
            pass
        end = f.tell()
    for k, at in enumerate(spread(0, end, flips)):
        open(os.path.join(out, f"pkl.{k}"), "wb").write(flip(at))
PYEOF
}

# checkpoint_fixtures: every checkpoint file under fixtures/{torch,hf,deepspeed,bad}.
checkpoint_fixtures() {
  find "$F/torch" "$F/hf" "$F/deepspeed" "$F/bad" -type f \
    ! -name '*.json' ! -name '*.md' ! -name '*.log' ! -name '*.py' ! -name latest | sort
}

# for_each_damaged_input CHECK: for every checkpoint fixture, 50 truncations and 12 flips
# of each kind (see mutations), runs "CHECK REL KIND FILE" (REL: the fixture under
# fixtures/, KIND: cut.N, cd.K or pkl.K). Fails if fewer than 3000 inputs were tried.
for_each_damaged_input() {
  local fixture rel m bad n=0
  while read -r fixture; do
    rel=${fixture#"$F/"}
    m=$T/mut/${rel//\//_}
    mutations "$fixture" "$m" 50 12
    for bad in "$m"/*; do
      "$1" "$rel" "${bad##*/}" "$bad"
      n=$((n + 1))
    done
    rm -rf "$m"
  done < <(checkpoint_fixtures)
  [ "$n" -ge 3000 ] || fail "only $n damaged inputs tried"
}

# check_bad_input_exit NAME KIND: the last run did not crash (exit >= 128), exited 1 for a
# truncation (cut.*), 0 or 1 for a flipped byte. Returns 1 after a failure.
check_bad_input_exit() {
  zf_checks=$((zf_checks + 1))
  if [ "$RC" -ge 128 ]; then
    fail "$1: crashed (exit $RC): $(head -c 300 "$ERR")"
  elif [[ $2 == cut.* ]] && [ "$RC" != 1 ]; then
    fail "$1: exit $RC, want 1: $(head -c 300 "$ERR")"
  elif [ "$RC" != 0 ] && [ "$RC" != 1 ]; then
    fail "$1: exit $RC, want 0 or 1: $(head -c 300 "$ERR")"
  else
    return 0
  fi
  return 1
}

# Last line "N passed, F failed", as tests/run_all.sh counts it.
zf_finish() {
  echo "$(basename "$0"): $zf_known checks hit known bugs (listed above; counted neither passed nor failed)"
  echo "$((zf_checks - zf_fails - zf_known)) passed, $zf_fails failed"
  [ "$zf_fails" -eq 0 ]
}
