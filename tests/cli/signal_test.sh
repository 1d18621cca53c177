#!/usr/bin/env bash
# SIGINT and SIGTERM at random moments of shrink, convert and merge (a file,
# a folder of shards with an index, a .zst stream, a stream from standard
# input, a --part run): zerofold exits 130 (SIGINT) or 143 (SIGTERM), leaves
# no temp file and no output under a final name (a --part run: only
# complete files, each byte-identical to the uninterrupted run's), and the
# inputs stay as they were. A run the signal reaches after it finished exits
# 0 with the uninterrupted run's output (exit 130/143 means: nothing
# written). SIGHUP exits 129. Two signals (0-2 ms apart at random moments,
# together at a chosen one, and after the run is over): the same rule, the
# second stopping the run at once (cli/signals.h).
#
#   ZEROFOLD=build/zerofold bash tests/cli/signal_test.sh
source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-3}  # per form and signal

# Inputs that take a fraction of a second to rewrite: a torch file whose 16
# params are views of one 64 MiB flat buffer; a Hugging Face folder of 2
# such shards with its index and config; a Distributed Checkpoint of 8 ranks
# (bench/dcp_gen.py, torch 1.13's layout) with 100 MB of weights.
"$PY" - "$T/big.pt" <<'PYEOF' || { echo "FAIL: generating big.pt"; exit 1; }
import sys, torch
flat = torch.arange(16 << 20, dtype=torch.float32)
torch.save({f"p{i}": flat[i << 20:(i << 20) + (1 << 19)] for i in range(16)}, sys.argv[1])
PYEOF
"$PY" "$ZF_ROOT/tests/slurm/make_bloated_folder.py" "$T/hf" 2 8 $((1 << 20)) >/dev/null ||
  { echo "FAIL: generating the folder"; exit 1; }
"$PY" "$ZF_ROOT/bench/dcp_gen.py" "$T/dcp" --layers 2 --hidden 768 --ffn 2048 --vocab 8000 >/dev/null ||
  { echo "FAIL: generating the DCP folder"; exit 1; }

inputs_digest() { find "$T/big.pt" "$T/hf" "$T/dcp" -type f -print0 | sort -z | xargs -0 md5sum | md5sum; }
INPUTS=$(inputs_digest)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Each form: NAME and its output path (a file, or a folder ending in /).
FORMS=(
  "shrink file|$T/o/small.pt"
  "shrink folder|$T/o/small/"
  "convert shards|$T/o/st/"
  "convert zst|$T/o/st.safetensors.zst"
  "shrink stdin|$T/o/piped.pt"
  "merge shards|$T/o/merged/"
  "convert part|$T/o/part/"
)
# exec_form NAME OUT: becomes zerofold running form NAME into OUT.
exec_form() {
  case $1 in
    "shrink file") exec "$Z" shrink "$T/big.pt" "$2" ;;
    "shrink folder") exec "$Z" shrink "$T/hf" "$2" ;;
    "convert shards") exec "$Z" convert --to safetensors --max-shard-size 20MB "$T/hf" "$2" ;;
    "convert zst") exec "$Z" convert "$T/big.pt" "$2" ;;
    "shrink stdin") exec "$Z" shrink - "$2" <"$T/big.pt" ;;
    "merge shards") exec "$Z" merge --to safetensors --max-shard-size 30MB "$T/dcp" "$2" ;;
    "convert part") exec "$Z" convert --part 0/2 --to safetensors --max-shard-size 20MB "$T/hf" "$2" ;;
  esac
}

# no_temp DIR: DIR (and its folders) hold no zerofold temp file.
no_temp() { ! find "$1" -name '*zerofold-tmp*' | grep -q .; }

# check_left NAME OUT CLEAN PART: after a stopped run, OUT is absent; a
# part's folder holds only files equal to CLEAN's.
check_left() {
  local name=$1 out=$2 clean=$3 part=$4 f
  if [ ! -e "$out" ] || { [ -d "$out" ] && dir_is_empty "$out"; }; then ok; return; fi
  if [ "$part" = 1 ] && [ -d "$out" ]; then
    for f in "$out"/* "$out"/.[!.]*; do
      [ -e "$f" ] || continue
      cmp -s "$f" "$clean/${f##*/}" || { bad "$name: $f is not a complete file of the run"; return; }
    done
    ok
    return
  fi
  bad "$name: output left under its final name: $(ls -A "$out" 2>/dev/null || echo "$out")"
}

interrupted=0
finished=0
for form in "${FORMS[@]}"; do
  IFS='|' read -r name out <<<"$form"
  part=0; [[ $name == *part* ]] && part=1
  mkdir -p "$T/o" "$T/clean"
  clean=$T/clean/${out#"$T/o/"}
  start=$(now_ms)
  (exec_form "$name" "$clean") >/dev/null 2>"$ERR" || { bad "$name: clean run: $(cat "$ERR")"; continue; }
  duration=$(( $(now_ms) - start ))
  for sig in INT TERM; do
    if [ "$sig" = INT ]; then want=130; else want=143; fi
    for ((i = 0; i < RUNS; i++)); do
      rm -rf "$T/o" && mkdir -p "$T/o"
      delay=$((RANDOM % (duration * 6 / 5 + 1)))
      (exec_form "$name" "$out") >/dev/null 2>"$ERR" &
      pid=$!
      sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
      kill -s "$sig" "$pid" 2>/dev/null
      wait "$pid"
      rc=$?
      what="$name, SIG$sig after $delay ms"
      if [ "$rc" = 0 ]; then
        # The signal came after the run had finished: the output is whole.
        finished=$((finished + 1))
        if [ -d "$clean" ]; then expect_same_folder "$what: finished run" "$clean" "$out"
        else expect_true "$what: finished run" "cmp -s '$clean' '$out'"; fi
        continue
      fi
      interrupted=$((interrupted + 1))
      expect_true "$what: exit $rc, want $want ($(head -c 200 "$ERR"))" "[ $rc = $want ]"
      expect_true "$what: temp file left" "no_temp '$T/o'"
      check_left "$what" "$out" "$clean" "$part"
    done
  done
  rm -rf "$T/clean"
done
echo "$interrupted runs interrupted, $finished finished before the signal"
expect_true "inputs unchanged" "[ \"\$(inputs_digest)\" = \"$INPUTS\" ]"
expect_true "some runs interrupted ($interrupted interrupted, $finished finished first)" "[ $interrupted -gt 0 ]"

# The error line names the signal; SIGHUP exits 129.
rm -rf "$T/o" && mkdir -p "$T/o"
"$Z" shrink "$T/hf" "$T/o/h/" >/dev/null 2>"$ERR" &
pid=$!
# Stop it once its first temp file exists: it is writing.
for ((i = 0; i < 2000; i++)); do find "$T/o" -name '*zerofold-tmp*' 2>/dev/null | grep -q . && break; sleep 0.005; done
kill -s HUP "$pid"
wait "$pid"
rc=$?
if [ "$rc" = 0 ]; then ok; else
  expect_true "SIGHUP: exit $rc, want 129" "[ $rc = 129 ]"
  expect_true "SIGHUP: error line ($(cat "$ERR"))" "grep -q '^zerofold: .*: cancelled: interrupted by SIGHUP$' '$ERR'"
  expect_true "SIGHUP: temp file left" "no_temp '$T/o'"
  check_left "SIGHUP" "$T/o/h/" "" 0
fi

# Two signals 0-2 ms apart (Ctrl-C twice; coreutils timeout, which signals
# twice) at random moments of a convert and a merge into 8 or 9 shards: the
# second stops the run at once (cli/signals.h), or finds it gone already.
# Either way: exit 0 with the whole output, or 128 + one of the two signals
# with no file under a final name (no shard, no index, no config), no temp
# file, and a rerun without --force that writes the whole output.
TWICE=(
  "convert 8 shards|$T/o/st8/|${TWICE_RUNS:-24}"
  "merge 9 shards|$T/o/m9/|$(( ${TWICE_RUNS:-24} * 2 / 3 ))"
)
exec_twice() {
  case $1 in
    "convert 8 shards") exec "$Z" convert --to safetensors --max-shard-size 10MB "$T/hf" "$2" ;;
    "merge 9 shards") exec "$Z" merge --to safetensors --max-shard-size 12MB "$T/dcp" "$2" ;;
  esac
}
signum() { case $1 in INT) echo 2 ;; TERM) echo 15 ;; HUP) echo 1 ;; esac; }
STOPPED_LINE='^zerofold: interrupted again by SIG(INT|TERM|HUP): stopped at once; removed what this run had written$'
SIGS=(INT TERM HUP)
# check_stopped WHAT RC OUT CLEAN WANT_RCS...: the run into OUT exited RC;
# 0: OUT is CLEAN; else RC is one of WANT_RCS, nothing is left under a final
# name, no temp file, and a rerun without --force writes CLEAN.
check_stopped() {
  local what=$1 rc=$2 out=$3 clean=$4 name=$5
  shift 5
  if [ "$rc" = 0 ]; then
    finished=$((finished + 1))
    expect_same_folder "$what: finished run" "$clean" "$out"
    return
  fi
  interrupted=$((interrupted + 1))
  expect_true "$what: exit $rc, want one of $* ($(head -c 300 "$ERR"))" "[[ ' $* ' == *' $rc '* ]]"
  if grep -q 'interrupted again' "$ERR"; then
    hard=$((hard + 1))
    expect_true "$what: the stop's line ($(cat "$ERR"))" "grep -Eq '$STOPPED_LINE' '$ERR'"
  fi
  expect_true "$what: temp file left" "no_temp '$T/o'"
  expect_true "$what: left under a final name: $(ls -A "$out" 2>/dev/null | tr '\n' ' ')" \
    "[ ! -e '$out' ] || dir_is_empty '$out'"
  (exec_twice "$name" "$out") >/dev/null 2>"$ERR"
  rc=$?
  expect_true "$what: rerun without --force: exit $rc ($(head -c 300 "$ERR"))" "[ $rc = 0 ]"
  expect_same_folder "$what: rerun's output" "$clean" "$out"
}

hard=0 interrupted=0 finished=0
for form in "${TWICE[@]}"; do
  IFS='|' read -r name out runs <<<"$form"
  clean=$T/clean/twice
  rm -rf "$T/clean" "$T/o" && mkdir -p "$T/clean" "$T/o"
  start=$(now_ms)
  (exec_twice "$name" "$clean/") >/dev/null 2>"$ERR" || { bad "$name: clean run: $(cat "$ERR")"; continue; }
  duration=$(( $(now_ms) - start ))
  run_z inspect "$clean"
  expect_true "$name: clean output loads ($(head -c 300 "$ERR"))" "[ $RC = 0 ]"
  for ((i = 0; i < runs; i++)); do
    rm -rf "$T/o" && mkdir -p "$T/o"
    delay=$((RANDOM % (duration * 6 / 5 + 1)))
    gap=$((RANDOM % 3))
    first=${SIGS[RANDOM % 2]}
    second=${SIGS[RANDOM % 3]}
    (exec_twice "$name" "$out") >/dev/null 2>"$ERR" &
    pid=$!
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -s "$first" "$pid" 2>/dev/null
    [ "$gap" = 0 ] || sleep "0.00$gap"
    kill -s "$second" "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    check_stopped "$name, SIG$first then SIG$second $gap ms later, after $delay ms" "$rc" "$out" "$clean" "$name" \
      $((128 + $(signum "$first"))) $((128 + $(signum "$second")))
  done
done
echo "two signals: $interrupted runs interrupted ($hard stopped at once by the second), $finished finished first"

# The same, at a moment chosen: the run is stopped (SIGSTOP) once a shard
# is under its final name, gets SIGINT and SIGTERM, and resumes: the two
# arrive together, so the second finds the run still going.
rm -rf "$T/o" && mkdir -p "$T/o"
(exec_twice "convert 8 shards" "$T/o/st8/") >/dev/null 2>"$ERR" &
pid=$!
for ((i = 0; i < 4000; i++)); do ls "$T/o/st8" 2>/dev/null | grep -q '^model-.*safetensors$' && break; sleep 0.002; done
kill -s STOP "$pid" 2>/dev/null
committed=$(ls "$T/o/st8" 2>/dev/null | grep -c '^model-.*safetensors$')
kill -s INT "$pid" 2>/dev/null; kill -s TERM "$pid" 2>/dev/null; kill -s CONT "$pid" 2>/dev/null
wait "$pid"
rc=$?
[ "$rc" = 0 ] || expect_true "stopped with $committed shards committed: some were" "[ $committed -gt 0 ]"
rm -rf "$T/clean" && mkdir -p "$T/clean"
(exec_twice "convert 8 shards" "$T/clean/st8/") >/dev/null 2>&1
check_stopped "SIGINT and SIGTERM together, $committed shards committed" "$rc" "$T/o/st8/" "$T/clean/st8/" \
  "convert 8 shards" 130 143

# A second signal after the run is over (its report stuck in a full pipe):
# the output is complete, so nothing is removed, and the exit is 0; or, if
# it reached the run before its end, 130 or 143 with nothing left.
rm -rf "$T/o" && mkdir -p "$T/o"
mkfifo "$T/fifo"
exec 3<>"$T/fifo"
dd if=/dev/zero bs=4096 count=1024 oflag=nonblock >&3 2>/dev/null  # the pipe's buffer full: the report's write blocks
(exec_twice "convert 8 shards" "$T/o/st8/") >"$T/fifo" 2>"$ERR" &
pid=$!
for ((i = 0; i < 4000; i++)); do [ -e "$T/o/st8/model.safetensors.index.json" ] && break; sleep 0.002; done
sleep 0.2  # the run returns to the command, whose report waits for the pipe
kill -s STOP "$pid" 2>/dev/null
kill -s INT "$pid" 2>/dev/null; kill -s TERM "$pid" 2>/dev/null; kill -s CONT "$pid" 2>/dev/null
dd bs=65536 count=1024 iflag=nonblock <&3 >/dev/null 2>&1  # emptied: a run still writing its report goes on
wait "$pid"
rc=$?
exec 3>&-
if grep -q 'interrupted again' "$ERR" && [ "$rc" = 0 ]; then
  expect_true "second signal after the run: the line ($(cat "$ERR"))" \
    "grep -Eq '^zerofold: interrupted again by SIG(INT|TERM): stopped at once; the run had completed$' '$ERR'"
fi
check_stopped "second signal after the run" "$rc" "$T/o/st8/" "$T/clean/st8/" "convert 8 shards" 130 143

zf_finish
