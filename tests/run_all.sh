#!/usr/bin/env bash
# The README's test command: installs what the tests need (Debian 12), builds,
# and runs every test: the source tree's layering (tests/layers_test.py), doctest unit
# tests, the C API's tests (and an install into a temp folder), the HTTP
# example against a real nginx, CLI tests, the input x output x flag matrix
# (tests/matrix), torch interop tests, the
# Slurm examples on a real single-node Slurm (tests/slurm/slurm_test.sh), and
# each fuzz target for a bounded time under ASan and UBSan (tests/fuzz/run_fuzz.sh). The two
# damaged-input suites (shrink_test.sh, inspect_test.sh) run beside the others (run_beside).
# Ends with one line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(meson ninja-build pkg-config g++ libzstd-dev libxxhash-dev doctest-dev python3-torch python3-numpy zstd
          clang-14 libclang-rt-14-dev munge slurmctld slurmd slurm-client libcurl4-openssl-dev nginx-light)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD=${BUILD:-build}
[ -d "$BUILD" ] || meson setup "$BUILD" -Dwerror=true >/dev/null
meson compile -C "$BUILD"
echo "--- install and build: ${SECONDS}s"

passed=0; failed=0
LOG=$(mktemp)
trap 'rm -rf "$LOG" "$BESIDE_DIR"' EXIT
# run NAME CMD...: one suite. Its test count comes from the runner's summary
# (doctest "test cases: N | P passed | F failed", unittest "Ran N tests",
# our shell tests "N passed, F failed"); a suite that fails without one
# counts as one failure.
# tally NAME RC START: counts the suite whose output is in $LOG.
tally() {
  local name=$1 rc=$2 start=$3 p f
  if grep -q "^\[doctest\] test cases:" "$LOG"; then
    p=$(grep "^\[doctest\] test cases:" "$LOG" | tail -1 | sed -E 's/.*\| *([0-9]+) passed.*/\1/')
    f=$(grep "^\[doctest\] test cases:" "$LOG" | tail -1 | sed -E 's/.*\| *([0-9]+) failed.*/\1/')
  elif grep -qE "^Ran [0-9]+ tests?" "$LOG"; then
    local n; n=$(grep -E "^Ran [0-9]+ tests?" "$LOG" | tail -1 | awk '{print $2}')
    f=$( { grep -E "^FAILED \(" "$LOG" || true; } | tail -1 | { grep -oE "(failures|errors)=[0-9]+" || true; } | awk -F= '{s+=$2} END {print s+0}')
    p=$((n - f))
  elif grep -qE "^[0-9]+ passed, [0-9]+ failed" "$LOG"; then
    p=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$LOG" | tail -1 | awk '{print $1}')
    f=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$LOG" | tail -1 | awk '{print $3}')
  else
    p=0; f=0
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  local took=$((SECONDS - start))
  if [ "$rc" -eq 0 ]; then echo "--- $name: ok ($p passed, ${took}s)"; else echo "--- $name: FAILED ($f failed, ${took}s)"; fi
}

run() {
  local name=$1; shift
  echo "=== $name"
  local rc=0 start=$SECONDS
  "$@" 2>&1 | tee "$LOG" || rc=$?
  tally "$name" "$rc" "$start"
}

# run_beside NAME CMD...: starts a suite in the background, on the second
# core, its output kept until finish_beside prints and counts it. For the
# suites that spawn zerofold thousands of times one process at a time (the
# damaged-input loops), which would otherwise leave a core idle.
BESIDE_DIR=$(mktemp -d)
BESIDE=()
run_beside() {
  local name=$1; shift
  local k=${#BESIDE[@]}
  BESIDE+=("$name|$SECONDS")
  ( rc=0; "$@" >"$BESIDE_DIR/$k.log" 2>&1 || rc=$?; echo "$rc" >"$BESIDE_DIR/$k.rc" ) &
}
finish_beside() {
  wait
  local k entry
  for k in "${!BESIDE[@]}"; do
    entry=${BESIDE[$k]}
    echo "=== ${entry%|*} (run beside the others)"
    cat "$BESIDE_DIR/$k.log"
    cp "$BESIDE_DIR/$k.log" "$LOG"
    tally "${entry%|*}" "$(cat "$BESIDE_DIR/$k.rc" 2>/dev/null || echo 1)" "${entry##*|}"
  done
}

run "layers: tests/layers_test.py" /usr/bin/python3 tests/layers_test.py
run "unit tests (doctest)" "$BUILD/tests/unit_tests"
run "capi: capi_test (C)" "$BUILD/tests/capi/capi_test" "$BUILD/zerofold"
run "capi: callback_test (C, the caller's bytes)" "$BUILD/tests/capi/callback_test"
run "capi: scan_capi_test (C, zf_scan_json)" "$BUILD/tests/capi/scan_capi_test" "$BUILD/zerofold"
run "capi: install_test.sh (meson install, pkg-config)" env ZEROFOLD="$BUILD/zerofold" bash tests/capi/install_test.sh "$BUILD"
run "examples: http_test.sh (http_convert against nginx)" env ZEROFOLD="$BUILD/zerofold" HTTP_CONVERT="$BUILD/examples/http/http_convert" bash tests/examples/http_test.sh
for t in tests/cli/*_test.sh; do
  [ -e "$t" ] || continue
  case $(basename "$t") in
    shrink_test.sh | inspect_test.sh)
      run_beside "cli: $(basename "$t")" env ZEROFOLD="$BUILD/zerofold" bash "$t" ;;
    *) run "cli: $(basename "$t")" env ZEROFOLD="$BUILD/zerofold" bash "$t" ;;
  esac
done
run "matrix: tests/matrix/matrix_test.py (every input x output x flag of shrink, convert, merge)" \
  env ZEROFOLD="$BUILD/zerofold" /usr/bin/python3 tests/matrix/matrix_test.py
for t in tests/interop/test_*.py; do
  [ -e "$t" ] || continue
  run "interop: $(basename "$t")" env ZEROFOLD="$BUILD/zerofold" /usr/bin/python3 "$t"
done

run "slurm: slurm_test.sh (a single-node Slurm started for the test)" env ZEROFOLD="$BUILD/zerofold" bash tests/slurm/slurm_test.sh
run "fuzz: run_fuzz.sh" bash tests/fuzz/run_fuzz.sh
finish_beside

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
