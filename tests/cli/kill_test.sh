#!/usr/bin/env bash
# A zerofold run killed with SIGKILL at a random moment leaves at most its temp
# file; the next run writing into the same folder removes it (saying so on
# stderr) and writes the same bytes as a run never interrupted. For shrink to
# a file, shrink --in-place and merge, each killed 15 times; a large
# generated input makes shrink's writing last long enough to be hit.
#
#   ZEROFOLD=build/zerofold bash tests/cli/kill_test.sh
source "$(dirname "$0")/lib.sh"

KILLS=15

# A 64 MiB flat float32 buffer whose 16 views of 2 MiB each are saved
# together: shrink writes 32 MiB.
"$PY" - "$T/big.pt" <<'PYEOF' || { echo "FAIL: generating the input"; exit 1; }
import sys, torch
flat = torch.arange(16 << 20, dtype=torch.float32)
views = {f"p{i}": flat[i << 20:(i << 20) + (1 << 19)] for i in range(16)}
torch.save(views, sys.argv[1])
PYEOF

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
temps() { ls -A "$1" | grep -c 'zerofold-tmp' || true; }

# killed_then_rerun NAME DIR PREPARE WANT ARGS...: KILLS times: run PREPARE
# (a shell command resetting the inputs), start zerofold ARGS, kill it with
# SIGKILL after a random delay within the clean run's duration (DURATION_MS),
# then run zerofold ARGS again. The rerun exits 0, prints one note per temp
# file the killed run left in DIR, leaves no temp file there, and the file
# WANT holds the clean run's bytes (CLEAN).
killed_then_rerun() {
  local name=$1 dir=$2 prepare=$3 want=$4
  shift 4
  local i left notes pid delay
  for ((i = 0; i < KILLS; i++)); do
    eval "$prepare"
    delay=$((RANDOM % (DURATION_MS * 6 / 5 + 1)))
    "$Z" "$@" >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    left=$(temps "$dir")
    LITTER=$((LITTER + left))
    LEFT_BY[$name]=$(( ${LEFT_BY[$name]:-0} + left ))
    run_z "$@"
    if [ "$RC" != 0 ]; then fail "$name #$i (killed after ${delay} ms): rerun exit $RC: $(cat "$ERR")"; continue; fi
    notes=$(grep -c '^zerofold: note: removed .*zerofold-tmp.*, a temp file left by a zerofold run that is gone$' "$ERR" || true)
    [ "$notes" = "$left" ] || fail "$name #$i: $left temp files left, $notes notes: $(cat "$ERR")"
    [ "$(temps "$dir")" = 0 ] || fail "$name #$i: temp files remain: $(ls -A "$dir")"
    cmp -s "$CLEAN" "$want" || fail "$name #$i (killed after ${delay} ms): output differs from a clean run's"
    ok
  done
}

LITTER=0
declare -A LEFT_BY=()

# shrink IN OUT
mkdir -p "$T/file"
start=$(now_ms)
"$Z" shrink "$T/big.pt" "$T/clean.pt" >/dev/null 2>&1 || fail "clean shrink"
DURATION_MS=$(( $(now_ms) - start ))
CLEAN=$T/clean.pt
killed_then_rerun "shrink" "$T/file" "rm -f '$T/file/out.pt'" "$T/file/out.pt" \
  shrink --force "$T/big.pt" "$T/file/out.pt"

# shrink --in-place: the input is the original or the shrunk file after a kill,
# never anything else; shrinking it again gives the clean bytes either way.
mkdir -p "$T/inplace"
killed_then_rerun "shrink --in-place" "$T/inplace" "cp '$T/big.pt' '$T/inplace/in.pt'" "$T/inplace/in.pt" \
  shrink --in-place "$T/inplace/in.pt"

# merge
CKPT=$F/deepspeed/zero2_ws3_bf16/ckpt
start=$(now_ms)
"$Z" merge "$CKPT" "$T/merged_clean/" >/dev/null 2>&1 || fail "clean merge"
DURATION_MS=$(( $(now_ms) - start ))
CLEAN=$T/merged_clean/pytorch_model.bin
killed_then_rerun "merge" "$T/merged" "rm -rf '$T/merged'" "$T/merged/pytorch_model.bin" \
  merge --force "$CKPT" "$T/merged/"

# The kills hit writes: some left temp files for the reruns to remove.
[ "$LITTER" -gt 0 ] && ok || fail "no kill left a temp file: the test did not reach a write"
for k in "${!LEFT_BY[@]}"; do echo "kill_test.sh: $k: ${LEFT_BY[$k]} temp files left by $KILLS killed runs"; done
zf_finish
