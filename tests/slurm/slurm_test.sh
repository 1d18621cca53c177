#!/usr/bin/env bash
# The Slurm examples on a real single-node Slurm: Debian's munged, slurmctld
# and slurmd, configured in a temp folder, started here and stopped at exit.
# examples/slurm/merge.sbatch and shrink.sbatch are submitted with sbatch as
# the README says (an array of N parts, then the finishing task with
# --dependency=afterok) on the DeepSpeed and DCP fixtures and on a bloated
# sharded folder written by torch (shrunk to torch shards, converted to
# safetensors shards): each output is byte-identical to a single run. Then one array task is SIGKILLed mid-write (its temp file half
# written), resubmitted alone as the examples say, and finished: the output
# is byte-identical and no temp file remains.
#
# The daemons must start: a machine where they cannot fails this test with
# their logs, it does not skip it.
# shellcheck source=../cli/lib.sh
source "$(dirname "$0")/../cli/lib.sh"
FIX=$F
EXAMPLES=$ZF_ROOT/examples/slurm
S=$T/slurm
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log" "$S/jobs"

for b in munged munge slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$b" >/dev/null || { bad "$b is not installed (tests/run_all.sh installs munge, slurmctld, slurmd, slurm-client)"; zf_finish; }
done

# --- the cluster: one node, this machine, as the user running the test ----
stop_cluster() {
  [ -n "${SLURMD_PID:-}" ] && kill "$SLURMD_PID" 2>/dev/null && wait "$SLURMD_PID" 2>/dev/null
  [ -n "${CTLD_PID:-}" ] && kill "$CTLD_PID" 2>/dev/null && wait "$CTLD_PID" 2>/dev/null
  [ -S "$S/munge/socket" ] && munged --stop --socket="$S/munge/socket" >/dev/null 2>&1
  rm -rf "$T"
}
trap stop_cluster EXIT
show_logs() {
  for f in "$S"/log/*; do echo "--- $f"; tail -20 "$f"; done
}

chmod 700 "$S/munge"
head -c 1024 /dev/urandom >"$S/munge/munge.key"
chmod 400 "$S/munge/munge.key"
munged --force --key-file="$S/munge/munge.key" --socket="$S/munge/socket" --pid-file="$S/munge/pid" \
  --seed-file="$S/munge/seed" --log-file="$S/log/munged.log" || { bad "munged did not start"; show_logs; zf_finish; }

read -r CTLD_PORT SLURMD_PORT < <($PY -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
export SLURM_CONF=$S/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=zerofold-test
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$S/munge/socket
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
NodeName=zfnode NodeAddr=127.0.0.1 CPUs=$(nproc)
PartitionName=zerofold Nodes=zfnode Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$S/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -N zfnode >"$S/log/slurmd.out" 2>&1 &
SLURMD_PID=$!
for _ in $(seq 120); do
  [ "$(sinfo -h -n zfnode -o %t 2>/dev/null)" = idle ] && break
  sleep 0.5
done
if [ "$(sinfo -h -n zfnode -o %t 2>/dev/null)" != idle ]; then
  bad "the Slurm node did not come up idle in 60 s: $(sinfo -h -n zfnode -o %t 2>&1)"
  show_logs
  zf_finish
fi
ok
echo "slurm: $(sinfo -V), node zfnode idle with $(nproc) CPUs"

# submit ARGS...: sbatch, one CPU per task (so the tasks of an array run side
# by side), output in $S/jobs; prints the job id.
submit() {
  sbatch --parsable --cpus-per-task=1 --output="$S/jobs/%x-%A_%a.out" "$@"
}

# wait_jobs JID...: until none of them is pending or running (at most 10 min).
wait_jobs() {
  local ids; ids=$(IFS=,; echo "$*")
  for _ in $(seq 2400); do
    [ -z "$(squeue -h -j "$ids" 2>/dev/null)" ] && return 0
    sleep 0.25
  done
  bad "jobs $ids still queued after 10 min: $(squeue -j "$ids")"
  return 1
}

# states JID: the state of each task of the job, sorted, e.g. "COMPLETED COMPLETED".
states() {
  scontrol -o show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | sort | tr '\n' ' ' | sed 's/ $//'
}

repeat() { local n=$1 w=$2 s=""; for _ in $(seq "$n"); do s+="$w "; done; echo "${s% }"; }

# --- merge: DeepSpeed ZeRO 1/2/3 and a DCP folder, 3 parts + finish --------
cases=(
  "zero1|$FIX/deepspeed/zero1_ws2_fp16/ckpt|--max-shard-size 2KB"
  "zero2|$FIX/deepspeed/zero2_ws3_bf16/ckpt|--max-shard-size 2KB --to safetensors"
  "zero3|$FIX/deepspeed/zero3_ws3_fp16/ckpt|--max-shard-size 2KB --to safetensors"
  "dcp|$FIX/dcp/accelerate_ws4/ckpt|--max-shard-size 200B"
)
declare -A array_job finish_job
for c in "${cases[@]}"; do
  IFS='|' read -r name ckpt flags <<<"$c"
  mkdir -p "$S/$name"
  # shellcheck disable=SC2086
  "$Z" merge --quiet $flags "$ckpt" "$S/$name/one" || bad "$name: single run"
  array_job[$name]=$(CKPT=$ckpt OUT=$S/$name/parts FLAGS=$flags ZEROFOLD=$Z \
    submit --job-name="merge-$name" --array=0-2 "$EXAMPLES/merge.sbatch")
  finish_job[$name]=$(CKPT=$ckpt OUT=$S/$name/parts FLAGS=$flags ZEROFOLD=$Z \
    submit --job-name="merge-$name-finish" --dependency="afterok:${array_job[$name]}" --array=0 \
    --export=ALL,PART=finish "$EXAMPLES/merge.sbatch")
done
wait_jobs "${array_job[@]}" "${finish_job[@]}"
for c in "${cases[@]}"; do
  IFS='|' read -r name ckpt flags <<<"$c"
  expect_true "$name: 3 array tasks completed ($(states "${array_job[$name]}"))" \
    "[ '$(states "${array_job[$name]}")' = '$(repeat 3 COMPLETED)' ]"
  expect_true "$name: finish completed ($(states "${finish_job[$name]}"))" "[ '$(states "${finish_job[$name]}")' = COMPLETED ]"
  expect_true "$name: several output files" "[ $(ls "$S/$name/one" | wc -l) -ge 4 ]"
  expect_same_folder "$name: sbatch array + finish = one run" "$S/$name/one" "$S/$name/parts"
done
# Every task wrote its own files: the three tasks' logs name three parts.
expect_true "merge tasks ran parts 0, 1 and 2" \
  "[ \"\$(cat $S/jobs/merge-zero3-${array_job[zero3]}_*.out | grep -o 'part [0-9]/3:' | sort -u | tr '\n' ,)\" = 'part 0/3:,part 1/3:,part 2/3:,' ]"

# --- shrink: a bloated sharded folder written by torch, 2 parts + finish ---
# Two shards, each carrying the whole 256 MB flat buffer; shrunk, each is
# 128 MB, so a part writes one file for long enough to be killed mid-write.
IN=$S/bloated
$PY "$ZF_ROOT/tests/slurm/make_bloated_folder.py" "$IN" 2 2 $((16 << 20)) || bad "make_bloated_folder.py"
"$Z" shrink --quiet "$IN" "$S/shrink-one" || bad "shrink: single run"
expect_true "shrink: one run writes 2 shards, index and config" "[ $(ls "$S/shrink-one" | wc -l) -eq 4 ]"
jid=$(IN=$IN OUT=$S/shrink-parts ZEROFOLD=$Z submit --job-name=shrink --array=0-1 "$EXAMPLES/shrink.sbatch")
fid=$(IN=$IN OUT=$S/shrink-parts ZEROFOLD=$Z submit --job-name=shrink-finish --dependency="afterok:$jid" \
  --array=0 --export=ALL,PART=finish "$EXAMPLES/shrink.sbatch")
wait_jobs "$jid" "$fid"
expect_true "shrink: 2 array tasks and finish completed" \
  "[ '$(states "$jid") / $(states "$fid")' = 'COMPLETED COMPLETED / COMPLETED' ]"
expect_same_folder "shrink: sbatch array + finish = one run" "$S/shrink-one" "$S/shrink-parts"

# --- convert: the same folder to safetensors shards, 2 parts + finish ------
"$Z" convert --quiet --to safetensors --max-shard-size 150MB "$IN" "$S/st-one" || bad "convert: single run"
expect_true "convert: one run writes 2 safetensors shards, index and config" "[ $(ls "$S/st-one" | wc -l) -eq 4 ]"
jid=$(IN=$IN OUT=$S/st-parts COMMAND=convert FLAGS='--to safetensors --max-shard-size 150MB' ZEROFOLD=$Z \
  submit --job-name=convert --array=0-1 "$EXAMPLES/shrink.sbatch")
fid=$(IN=$IN OUT=$S/st-parts COMMAND=convert FLAGS='--to safetensors --max-shard-size 150MB' ZEROFOLD=$Z \
  submit --job-name=convert-finish --dependency="afterok:$jid" --array=0 --export=ALL,PART=finish \
  "$EXAMPLES/shrink.sbatch")
wait_jobs "$jid" "$fid"
expect_true "convert: 2 array tasks and finish completed" \
  "[ '$(states "$jid") / $(states "$fid")' = 'COMPLETED COMPLETED / COMPLETED' ]"
expect_same_folder "convert: sbatch array + finish = one run" "$S/st-one" "$S/st-parts"

# --- kill one array task mid-write, resubmit it alone, finish --------------
# Task 1's zerofold is stopped (SIGSTOP) once its temp file holds bytes,
# checked to be half written, then killed with SIGKILL.
OUT=$S/shrink-killed
jid=$(IN=$IN OUT=$OUT ZEROFOLD=$Z submit --job-name=shrink-kill --array=0-1 "$EXAMPLES/shrink.sbatch")
killed=$($PY - "$OUT" <<'PY'
import os, signal, sys, time
out = sys.argv[1]
deadline = time.time() + 300
pid = None
while time.time() < deadline:
    if pid is None:  # the task's process: the batch script execs zerofold
        for p in os.listdir("/proc"):
            try:
                argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            except OSError:
                continue
            if b"--part" in argv and b"1/2" in argv and out.encode() in argv:
                pid = int(p)
    else:
        try:
            temps = [n for n in os.listdir(out) if ".zerofold-tmp." in n and ("-%d-" % pid) in n]
        except FileNotFoundError:
            temps = []
        if temps and os.stat(os.path.join(out, temps[0])).st_size > 0:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.1)  # the stop lands
            size = os.stat(os.path.join(out, temps[0])).st_size
            os.kill(pid, signal.SIGKILL)
            print(temps[0], size)
            sys.exit(0)
    time.sleep(0.001)
print("none 0")
PY
)
read -r temp temp_bytes <<<"$killed"
planned=$(stat -c %s "$S/shrink-one/pytorch_model-00002-of-00002.bin")
echo "killed array task $jid""_1 with $temp at $temp_bytes of $planned bytes"
expect_true "kill: task 1 was stopped with a temp file ($killed)" "[ '$temp' != none ]"
expect_true "kill: its temp file was half written ($temp_bytes of $planned bytes)" "[ $temp_bytes -gt 0 ] && [ $temp_bytes -lt $planned ]"
wait_jobs "$jid"
expect_true "kill: the array has one completed and one failed task ($(states "$jid"))" \
  "[ '$(states "$jid")' = 'COMPLETED FAILED' ]"
expect_true "kill: the temp file is left behind" "[ -e '$OUT/$temp' ]"
expect_true "kill: no index before finish" "! ls '$OUT' | grep -q index"
# Resubmitted as the examples say: --array=I with PARTS=N, then finish.
rid=$(IN=$IN OUT=$OUT ZEROFOLD=$Z submit --job-name=shrink-rerun --array=1 --export=ALL,PARTS=2 \
  "$EXAMPLES/shrink.sbatch")
fid=$(IN=$IN OUT=$OUT ZEROFOLD=$Z submit --job-name=shrink-rerun-finish --dependency="afterok:$rid" \
  --array=0 --export=ALL,PART=finish "$EXAMPLES/shrink.sbatch")
wait_jobs "$rid" "$fid"
expect_true "kill: the rerun and finish completed" "[ '$(states "$rid") / $(states "$fid")' = 'COMPLETED / COMPLETED' ]"
expect_true "kill: the rerun says it removed the temp file" \
  "grep -q 'removed .*zerofold-tmp.* a temp file left by a zerofold run that is gone' $S/jobs/shrink-rerun-${rid}_1.out"
expect_same_folder "kill: rerun + finish = one run, no temp file" "$S/shrink-one" "$OUT"

zf_finish
