#!/usr/bin/env bash
# The README's test command: installs what the tests need (Debian 12), builds,
# and runs every test: doctest unit tests, CLI tests and torch interop tests.
# Ends with one line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(meson ninja-build pkg-config g++ libzstd-dev libxxhash-dev doctest-dev python3-torch python3-numpy zstd)
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

passed=0; failed=0
run() {  # run NAME CMD...: one suite, counted as one pass or one fail
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "--- $name: ok"
  else failed=$((failed + 1)); echo "--- $name: FAILED"; fi
}

run "unit tests (doctest)" "$BUILD/tests/unit_tests"
for t in tests/cli/*_test.sh; do
  [ -e "$t" ] || continue
  run "cli: $(basename "$t")" env ZEROFOLD="$BUILD/zerofold" bash "$t"
done
for t in tests/interop/test_*.py; do
  [ -e "$t" ] || continue
  run "interop: $(basename "$t")" env ZEROFOLD="$BUILD/zerofold" /usr/bin/python3 "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
