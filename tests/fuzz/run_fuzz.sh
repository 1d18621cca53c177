#!/usr/bin/env bash
# The fuzz step of the README's test command (tests/run_all.sh): builds the
# libFuzzer targets of fuzz/ with clang, ASan and UBSan, seeds each from the
# fixtures (fuzz/collect_seeds.py), runs each for FUZZ_SECONDS and fails on
# any crash, leak, timeout or out-of-memory. Ends with "N passed, N failed",
# one count per target. FUZZING.md tells how to reproduce what it finds.
#
#   FUZZ_SECONDS   seconds per target (default 15)
#   FUZZ_JOBS      targets run at once (default: the number of cores)
#   FUZZ_BUILD     build folder (default build-fuzz); set up when missing
#   FUZZ_TARGETS   names to run (default: every fuzz/*_fuzz.cc)
#   FUZZ_FLAGS     more libFuzzer flags, e.g. -max_len=65536
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZ_SECONDS=${FUZZ_SECONDS:-15}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_FLAGS=${FUZZ_FLAGS:-}
if [ -z "${FUZZ_TARGETS:-}" ]; then
  FUZZ_TARGETS=$(cd fuzz && ls *_fuzz.cc | sed 's/_fuzz\.cc$//' | tr '\n' ' ')
fi

if [ ! -d "$FUZZ_BUILD" ]; then
  CC=clang-14 CXX=clang++-14 meson setup "$FUZZ_BUILD" -Dfuzz=true -Dtests=false -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
meson compile -C "$FUZZ_BUILD" fuzz

OUT="$FUZZ_BUILD/fuzz-out"
mkdir -p "$OUT"
/usr/bin/python3 fuzz/collect_seeds.py "$OUT/seeds" $FUZZ_TARGETS

# fuzz_one NAME: runs one target; its log is $OUT/NAME.log, crashing inputs
# $OUT/NAME-crash-*, new inputs go to $OUT/corpus/NAME, and its verdict
# (a line "fuzz NAME: ok (...)" or "fuzz NAME: FAILED (...)" and the
# sanitizer's report) to $OUT/NAME.result.
fuzz_one() {
  local name=$1 rc=0
  exec >"$OUT/$name.result"
  mkdir -p "$OUT/corpus/$name"
  rm -f "$OUT/$name"-crash-* "$OUT/$name"-leak-* "$OUT/$name"-timeout-* "$OUT/$name"-oom-*
  # shellcheck disable=SC2086
  "$FUZZ_BUILD/fuzz/${name}_fuzz" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$OUT/$name-" $FUZZ_FLAGS \
    "$OUT/corpus/$name" "$OUT/seeds/$name" >"$OUT/$name.log" 2>&1 || rc=$?
  local stats
  stats=$(grep -E "^stat::(number_of_executed_units|new_units_added):" "$OUT/$name.log" | awk '{printf "%s ", $2}')
  local cov
  cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$OUT/$name.log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz $name: ok ($cov; executions, new units: $stats)"
  else
    echo "fuzz $name: FAILED (exit $rc); log $OUT/$name.log; input:" $(ls "$OUT/$name"-* 2>/dev/null | grep -v '\.log$')
    grep -E "^(==[0-9]+==ERROR|SUMMARY|    #[0-9]+ )|runtime error" "$OUT/$name.log" | head -30
  fi
}
export -f fuzz_one
export OUT FUZZ_BUILD FUZZ_SECONDS FUZZ_FLAGS

printf '%s\n' $FUZZ_TARGETS | xargs -P "$FUZZ_JOBS" -I{} bash -c 'fuzz_one {}'
passed=0; failed=0
for name in $FUZZ_TARGETS; do
  cat "$OUT/$name.result"
  if grep -q "^fuzz $name: ok (" "$OUT/$name.result"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
